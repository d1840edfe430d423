"""Vector stores in C as GCC vector extensions: explicit SIMD code the C compiler keeps.

``lower_vectorized`` turns a ``T.vectorized`` loop into one store of ``Ramp``/``Broadcast``
expressions. For the element types and operators the vector extension covers, the C printer
writes that store as vector code::

    tw_vstore_float32x16(&C_global[i_3 * 16],
        tw_vload_float32x16(&C_global[i_3 * 16])
        + tw_vdup_float32x16(A[i_1 * 8192 + k]) * tw_vload_float32x16(&B_global[k * 16]));

The compiler then keeps a register tile's accumulators in vector registers, where its own
vectorizer (given the same loop with ``#pragma GCC ivdep``) measured up to 20x slower on some
tilings: it chose to vectorize across the unrolled outer loop with shuffles. Loads and stores
go through ``memcpy`` (no alignment or aliasing assumption; it compiles to one unaligned
vector move). Everything else (half precision, casts, minimum and maximum, gathers) is left
to the caller's per-lane loop.

A vector type is never wider than the machine's vector registers (``TW_VECTOR_BYTES``, from
the compiler's predefined macros: GCC spills wider generic vectors to the stack): a store of
more lanes becomes an unrolled loop over register-wide chunks, when no lane of one chunk
reads what another chunk writes. A store whose lanes are not a power of two is written in
power-of-two parts (40 lanes: 32, then 8), each with its own vector type.
"""

from __future__ import annotations

from tilewright.codegen.c_like import PREC_ADD, PREC_ATOM, PREC_MUL, CLikePrinter, Expr
from tilewright.ir import (
    Add,
    Broadcast,
    BufferLoad,
    BufferStore,
    DataType,
    Div,
    IntImm,
    Mul,
    PrimExpr,
    Ramp,
    Sub,
    Var,
    post_order_visit,
    structural_equal,
)
from tilewright.ir.dtype import int32

# Element types written as vectors: those whose C value type is the storage type.
_ELEMENTS = ("float32", "float64", "int32", "int64")
_NATIVE_BYTES = 16  # every target's vector registers hold at least this much

# The widest vector register of the machine compiling the source.
WIDTH_MACROS = """\
#if defined(__AVX512F__)
#define TW_VECTOR_BYTES 64
#elif defined(__AVX__)
#define TW_VECTOR_BYTES 32
#else
#define TW_VECTOR_BYTES 16
#endif
#define TW_VECTOR_SIZE(n) ((n) < TW_VECTOR_BYTES ? (n) : TW_VECTOR_BYTES)
"""

_OPERATORS: dict[type, tuple[str, int]] = {
    Add: ("+", PREC_ADD),
    Sub: ("-", PREC_ADD),
    Mul: ("*", PREC_MUL),
    Div: ("/", PREC_MUL),
}


def _type_name(dtype: DataType) -> str:
    return f"{dtype.element}x{dtype.lanes}"


def lane_parts(dtype: DataType) -> list[tuple[int, int]]:
    """The ``(first lane, lanes)`` parts a store of ``dtype`` is written in: its lanes as a sum
    of powers of two, largest first (40 lanes: 32 at 0, then 8 at 32), each written with its
    own vector type and, where wider than the machine's registers, in register-wide chunks.
    Empty when the extension does not cover ``dtype`` or a part would be narrower than 128
    bits (25 lanes of float32 would end with one lane).

    Example::

        >>> lane_parts(DataType.parse("float32x40"))
        [(0, 32), (32, 8)]
    """
    if str(dtype.element) not in _ELEMENTS or dtype.lanes < 2:
        return []
    parts: list[tuple[int, int]] = []
    start = 0
    for bit in reversed(range(dtype.lanes.bit_length())):
        lanes = 1 << bit
        if dtype.lanes & lanes:
            if lanes * dtype.bits < 128:
                return []
            parts.append((start, lanes))
            start += lanes
    return parts


class VectorWriter:
    """Writes a vector store of ``printer``'s function as vector-extension C, or declines.

    Example::

        >>> VectorWriter(printer).store(s)   # True when the store was emitted
    """

    def __init__(self, printer: CLikePrinter) -> None:
        self.p = printer

    def store(self, s: BufferStore) -> bool:
        index = s.indices[0]
        dtype = s.value.dtype
        parts = lane_parts(dtype)
        if not parts or s.buffer.dtype != dtype.element:
            return False
        if not self._unit_ramp(index) or s.buffer.data in self.p.value_arrays:
            return False
        assert isinstance(index, Ramp)
        wide = [lanes * dtype.bits // 8 > _NATIVE_BYTES for _, lanes in parts]
        if (len(parts) > 1 or any(wide)) and not self._chunks_independent(s):
            return False  # the per-lane loop reads every lane before it writes any
        pieces: list[tuple[DataType, str | None, str]] = []
        for (start, lanes), chunked in zip(parts, wide):
            vector = dtype.element.with_lanes(lanes)
            self.name = _type_name(vector)
            chunk = self.p.define(Var("chunk", int32)) if chunked else None
            offset = chunk if chunked else (str(start) if start else None)
            value = self.expr(s.value, offset)
            if value is None:
                return False
            target = f"&{self.p.name_of(s.buffer.data)}[{self._base(index, offset)}]"
            pieces.append((vector, chunk, f"tw_vstore_{self.name}({target}, {value.text});"))
        for (start, lanes), (vector, chunk, statement) in zip(parts, pieces):
            self._helpers(vector)
            if chunk is None:
                self.p.emit(statement)
                continue
            name = _type_name(vector)
            step = f"(int32_t)(sizeof(tw_{name}) / sizeof({self.p.value_type(dtype)}))"
            self.p.emit(f"#pragma GCC unroll {lanes}")
            self.p.emit(
                f"for (int32_t {chunk} = {start}; {chunk} < {start + lanes}; {chunk} += {step}) {{"
            )
            self.p.indent += 1
            self.p.emit(statement)
            self.p.indent -= 1
            self.p.emit("}")
        return True

    def _chunks_independent(self, s: BufferStore) -> bool:
        """Whether the store may run chunk by chunk: every load of the stored buffer reads
        exactly the lanes it writes (an accumulator), or the value does not read it."""
        same = True

        def visit(node: object) -> None:
            nonlocal same
            if isinstance(node, BufferLoad) and node.buffer.data is s.buffer.data:
                same = same and structural_equal(node.indices[0], s.indices[0])

        post_order_visit(s.value, visit)
        return same

    def _base(self, ramp: Ramp, chunk: str | None) -> str:
        if chunk is None:
            return self.p.expr_text(ramp.base)
        return f"{self.p.operand(ramp.base, PREC_ADD)} + {chunk}"

    def expr(self, e: PrimExpr, chunk: str | None = None) -> Expr | None:
        """``e`` (of the store's vector type) printed as a vector value, or None; with
        ``chunk``, the register-wide chunk of it starting at lane ``chunk``."""
        if str(e.dtype.element) not in _ELEMENTS:
            return None
        name = self.name
        if isinstance(e, Broadcast):
            if e.value.dtype != e.dtype.element:
                return None
            return Expr(f"tw_vdup_{name}({self.p.expr_text(e.value)})", PREC_ATOM)
        if isinstance(e, BufferLoad):
            index = e.indices[0]
            if e.buffer.dtype != e.dtype.element or not self._unit_ramp(index):
                return None
            if e.buffer.data in self.p.value_arrays:
                return None
            assert isinstance(index, Ramp)
            base = self._base(index, chunk)
            return Expr(f"tw_vload_{name}(&{self.p.name_of(e.buffer.data)}[{base}])", PREC_ATOM)
        operator = _OPERATORS.get(type(e))
        if operator is None or (type(e) is Div and not e.dtype.is_float):
            return None
        assert isinstance(e, Add | Sub | Mul | Div)
        symbol, prec = operator
        a = self.expr(e.a, chunk)
        b = self.expr(e.b, chunk)
        if a is None or b is None:
            return None
        left = a.text if a.prec >= prec else f"({a.text})"
        right = b.text if b.prec > prec else f"({b.text})"
        return Expr(f"{left} {symbol} {right}", prec)

    @staticmethod
    def _unit_ramp(index: PrimExpr) -> bool:
        return (
            isinstance(index, Ramp)
            and isinstance(index.stride, IntImm)
            and index.stride.value == 1
            and index.base.dtype.lanes == 1
        )

    def _helpers(self, dtype: DataType) -> None:
        """Declare the vector type of ``dtype`` (capped at the register width) and its load,
        store and broadcast helpers."""
        name = _type_name(dtype)
        element = self.p.value_type(dtype)
        size = dtype.lanes * dtype.bits // 8
        vtype = f"tw_{name}"
        self.p.helper("tw_vector_bytes", WIDTH_MACROS)
        if size <= _NATIVE_BYTES:
            declared = str(size)
            lanes = ", ".join(["x"] * dtype.lanes)
            dup = f"  return ({vtype}){{{lanes}}};\n"
        else:
            declared = f"TW_VECTOR_SIZE({size})"
            # A scalar operand of vector arithmetic stands for every lane; subtracting +0
            # leaves every value as it is (-0 included).
            dup = f"  return x - ({vtype}){{0}};\n"
        self.p.helper(
            f"tw_vector_{name}",
            f"typedef {element} {vtype} __attribute__((vector_size({declared})));\n"
            f"QUAL {vtype} tw_vload_{name}(const {element}* p) {{\n"
            f"  {vtype} v;\n"
            f"  __builtin_memcpy(&v, p, sizeof v);\n"
            f"  return v;\n"
            f"}}\n"
            f"QUAL void tw_vstore_{name}({element}* p, {vtype} v) {{\n"
            f"  __builtin_memcpy(p, &v, sizeof v);\n"
            f"}}\n"
            f"QUAL {vtype} tw_vdup_{name}({element} x) {{\n{dup}}}\n",
        )
