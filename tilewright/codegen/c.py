"""Lowered IRModule → C source for the CPU: one exported function per PrimFunc.

Buffers are restrict pointers, parallel loops use OpenMP, vectorized loops carry
``#pragma GCC ivdep`` so that the C compiler vectorizes them, and a vector statement (a
``Ramp`` index, a ``Broadcast`` value) becomes GCC vector-extension code (``c_vector``) or,
for what that does not cover, a short loop over its lanes. float16 and
bfloat16 are stored as ``uint16_t``, the 8-bit floats as ``uint8_t`` (``c_float8``), and all of
them computed in ``float``, rounded after each operation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from tilewright.codegen import c_builtins, c_float8
from tilewright.codegen.c_like import C_KEYWORDS, CLikePrinter, CodegenError, Emitter, Expr
from tilewright.codegen.c_vector import VectorWriter
from tilewright.codegen.signature import FuncSignature, func_signature, symbolic_vars
from tilewright.ir import DataType, IntImm, IRModule, PrimFunc, Var, op
from tilewright.ir.dtype import numpy_scalar_type
from tilewright.ir.expr import StringImm
from tilewright.ir.intrinsics import Intrinsic
from tilewright.ir.stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    AttrStmt,
    BufferStore,
    For,
    ForKind,
)
from tilewright.transform.tensor_maps import tensor_map_buffers

# Stack arrays up to this size; larger or symbolic allocations go to the heap.
MAX_STACK_BYTES = 64 * 1024
_UNROLL_LIMIT = 65534  # the largest count GCC's unroll pragma takes

_HALF_HELPERS = {
    "tw_f16_to_f32": """\
QUAL float tw_f16_to_f32(uint16_t h) {
  union { uint32_t u; float f; } v;
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) {
    v.u = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    v.u = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else {
    float magnitude = (float)mantissa * 5.9604644775390625e-8f;  /* mantissa * 2^-24 */
    return sign ? -magnitude : magnitude;
  }
  return v.f;
}
""",
    "tw_f32_to_f16": """\
QUAL uint16_t tw_f32_to_f16(float f) {
  union { float f; uint32_t u; } v;
  v.f = f;
  uint16_t sign = (uint16_t)((v.u >> 16) & 0x8000u);
  uint32_t bits = v.u & 0x7fffffffu;
  if (bits >= 0x7f800000u) return sign | (bits > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (bits >= 0x477ff000u) return sign | 0x7c00u;  /* rounds to infinity */
  uint32_t q, rest, halfway;
  if (bits < 0x38800000u) {  /* a subnormal half: count units of 2^-24 */
    uint32_t exponent = bits >> 23;
    if (exponent < 102u) return sign;
    uint32_t mantissa = (bits & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exponent;
    q = mantissa >> shift;
    rest = mantissa & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1u);
  } else {
    q = (((bits >> 23) - 112u) << 10) | ((bits & 0x7fffffu) >> 13);
    rest = bits & 0x1fffu;
    halfway = 0x1000u;
  }
  if (rest > halfway || (rest == halfway && (q & 1u))) q += 1u;  /* to nearest, ties even */
  return (uint16_t)(sign | q);
}
""",
    "tw_bf16_to_f32": """\
QUAL float tw_bf16_to_f32(uint16_t h) {
  union { uint32_t u; float f; } v;
  v.u = (uint32_t)h << 16;
  return v.f;
}
""",
    "tw_f32_to_bf16": """\
QUAL uint16_t tw_f32_to_bf16(float f) {
  union { float f; uint32_t u; } v;
  v.f = f;
  if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40u);
  return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}
""",
    "tw_round_f16": (
        "QUAL float tw_round_f16(float f) { return tw_f16_to_f32(tw_f32_to_f16(f)); }\n"
    ),
    "tw_round_bf16": (
        "QUAL float tw_round_bf16(float f) { return tw_bf16_to_f32(tw_f32_to_bf16(f)); }\n"
    ),
}

_FLOAT8_HELPERS = {
    key: text for name in c_float8.FORMATS for key, text in c_float8.helpers(name).items()
}


class CPrinter(CLikePrinter):
    """The C printer: OpenMP and GCC pragmas for loop kinds, half precision in software."""

    target_name = "c"
    value_types: ClassVar[dict[str, str]] = {
        **CLikePrinter.value_types,
        "float16": "float",
        "bfloat16": "float",
        **dict.fromkeys(c_float8.FORMATS, "float"),
    }
    storage_types: ClassVar[dict[str, str]] = {
        "float16": "uint16_t",
        "bfloat16": "uint16_t",
        **dict.fromkeys(c_float8.FORMATS, "uint8_t"),
    }
    emitters: ClassVar[dict[Intrinsic, Emitter]] = {**CLikePrinter.emitters, **c_builtins.EMITTERS}

    def __init__(self) -> None:
        super().__init__()
        self.in_parallel = False
        self.uses_heap = False

    # ---- half precision --------------------------------------------------------------------

    def _half(self, dtype: DataType) -> str | None:
        """The helper suffix of a type stored narrower than its ``float`` value, else None."""
        if dtype.is_float8:
            return c_float8.FORMATS[str(dtype.element)].suffix
        if dtype.bits != 16 or not dtype.is_float:
            return None
        return "f16" if dtype.code == "float" else "bf16"

    def _need(self, *names: str) -> None:
        for name in names:
            self.helper(name, _HALF_HELPERS.get(name) or _FLOAT8_HELPERS[name])

    def load_value(self, text: str, dtype: DataType) -> Expr:
        half = self._half(dtype)
        if half is None:
            return Expr(text)
        self._need(f"tw_{half}_to_f32")
        return Expr(f"tw_{half}_to_f32({text})")

    def store_value(self, text: str, dtype: DataType) -> str:
        half = self._half(dtype)
        if half is None:
            return text
        self._need(f"tw_f32_to_{half}")
        rounded = f"tw_round_{half}("
        if text.startswith(rounded) and _closes_at_end(text, len(rounded) - 1):
            text = text[len(rounded) : -1]  # the conversion rounds already
        return f"tw_f32_to_{half}({text})"

    def round_value(self, result: Expr, dtype: DataType) -> Expr:
        half = self._half(dtype)
        if half is None:
            return result
        self._need(f"tw_{half}_to_f32", f"tw_f32_to_{half}", f"tw_round_{half}")
        return Expr(f"tw_round_{half}({result.text})")

    # ---- statements ------------------------------------------------------------------------

    def stmt_BufferStore(self, s: BufferStore) -> None:
        vector = len(s.indices) == 1 and s.value.dtype.lanes > 1
        if not (vector and VectorWriter(self).store(s)):
            super().stmt_BufferStore(s)

    def lane_loop(self, lanes: int, body: Callable[[Var], str]) -> None:
        # The lanes of a vector statement are independent by definition.
        self.emit("#pragma GCC ivdep")
        super().lane_loop(lanes, body)

    def stmt_For(self, s: For) -> None:
        if s.kind is ForKind.THREAD_BINDING:
            raise self.thread_error(s.loop_var.name, s.thread_tag)
        pragma = None
        nested_parallel = self.in_parallel
        if s.kind is ForKind.PARALLEL and not self.in_parallel:
            hoisted = self._per_thread_allocations(s)
            if hoisted:
                self._parallel_with_buffers(s, hoisted)
                return
            pragma = "#pragma omp parallel for"
        elif s.kind is ForKind.VECTORIZED:
            pragma = "#pragma GCC ivdep"
        elif s.kind is ForKind.UNROLLED and isinstance(s.extent, IntImm):
            pragma = f"#pragma GCC unroll {max(1, min(s.extent.value, _UNROLL_LIMIT))}"
        header = self.loop_header(s)
        if pragma:
            self.emit(pragma)
        self.emit(header)
        self.in_parallel = nested_parallel or s.kind is ForKind.PARALLEL
        self.block(s.body)
        self.in_parallel = nested_parallel
        self.emit("}")

    def _per_thread_allocations(self, s: For) -> list[Allocate]:
        """The constant-size allocations that open a parallel loop's body, when one of them
        is on the heap: that one is allocated once per thread rather than once per iteration
        (a page-faulting allocation per iteration can cost more than the iteration's work);
        stack arrays stay in the loop body."""
        found = []
        body = s.body
        while isinstance(body, Allocate) and self._const_bytes(body) is not None:
            found.append(body)
            body = body.body
        heap = any((self._const_bytes(a) or 0) > MAX_STACK_BYTES for a in found)
        return found if heap else []

    def _const_bytes(self, s: Allocate) -> int | None:
        """The bytes of a constant-size allocation, else None."""
        count = 1
        for dim in s.buffer.shape:
            if not isinstance(dim, IntImm):
                return None
            count *= dim.value
        return count * s.buffer.dtype.bytes

    def _parallel_with_buffers(self, s: For, allocs: list[Allocate]) -> None:
        """``#pragma omp parallel`` with each thread's buffers, around ``omp for``."""
        self.uses_heap = True
        self.emit("#pragma omp parallel")
        self.emit("{")
        self.indent += 1
        names = []
        stack = []
        for a in allocs:
            nbytes = self._const_bytes(a)
            assert nbytes is not None
            if nbytes <= MAX_STACK_BYTES:
                stack.append(a)  # declared in the loop body: its values die each iteration
                continue
            ctype = self.storage_type(a.buffer.dtype)
            name = self.define(a.buffer.data)
            names.append(name)
            boundary = max(a.buffer.align, 16)
            size = (nbytes + boundary - 1) // boundary * boundary
            self.emit(
                f"{ctype}* {self.restrict} {name} = ({ctype}*)aligned_alloc({boundary}, {size});"
            )
        self.emit("#pragma omp for")
        self.emit(self.loop_header(s))
        self.indent += 1
        self.emit(f"if ({' && '.join(f'{n} != NULL' for n in names)}) {{")
        self.indent += 1
        for a in stack:
            ctype = self.storage_type(a.buffer.dtype)
            name = self.define(a.buffer.data)
            align = f" __attribute__((aligned({a.buffer.align})))" if a.buffer.align > 1 else ""
            count = max((self._const_bytes(a) or 0) // max(a.buffer.dtype.bytes, 1), 1)
            self.emit(f"{ctype} {name}[{count}]{align};")
        self.indent -= 1
        self.in_parallel = True
        self.block(allocs[-1].body)
        self.in_parallel = False
        self.emit("} else {")
        self.emit("  __atomic_store_n(&tw_status, -1, __ATOMIC_RELAXED);")
        self.emit("}")
        self.indent -= 1
        self.emit("}")
        for name in names:
            self.emit(f"free({name});")
        self.indent -= 1
        self.emit("}")

    def stmt_AttrStmt(self, s: AttrStmt) -> None:
        if s.key == "thread_extent":
            name = getattr(getattr(s.node, "var", s.node), "name", "thread axis")
            raise self.thread_error(name, str(getattr(s.node, "thread_tag", name)))
        self.stmt(s.body)

    def thread_error(self, loop: str, tag: str) -> CodegenError:
        return CodegenError(
            f"{self.func_name}: loop {loop} is bound to {tag}; the c target has no threads: "
            "build for cuda/opencl or remove the binding"
        )

    def stmt_Allocate(self, s: Allocate) -> None:
        buf = s.buffer
        ctype = self.storage_type(buf.dtype)
        count: int | None = 1
        for dim in buf.shape:
            if count is None or not isinstance(dim, IntImm):
                count = None
                break
            count *= dim.value
        name = self.define(buf.data)
        element_bytes = buf.dtype.bytes
        if count is not None and count * element_bytes <= MAX_STACK_BYTES:
            align = f" __attribute__((aligned({buf.align})))" if buf.align > 1 else ""
            self.emit(f"{ctype} {name}[{max(count, 1)}]{align};")
            self.stmt(s.body)
            return
        self.uses_heap = True
        size = " * ".join(f"(size_t)({self.expr_text(d)})" for d in buf.shape) or "1"
        boundary = max(buf.align, 16)
        nbytes = f"({size}) * {element_bytes} / {boundary} * {boundary} + {boundary}"
        self.emit(
            f"{ctype}* {self.restrict} {name} = ({ctype}*)aligned_alloc({boundary}, {nbytes});"
        )
        self.emit(f"if ({name} != NULL) {{")
        self.block(s.body)
        self.indent += 1
        self.emit(f"free({name});")
        self.indent -= 1
        self.emit("} else {")
        # Atomic: inside a parallel loop every thread may report the failure.
        self.emit("  __atomic_store_n(&tw_status, -1, __ATOMIC_RELAXED);")
        self.emit("}")

    def stmt_AllocateConst(self, s: AllocateConst) -> None:
        """A ``static const`` array holding the constant data (read-only for the body)."""
        buf = s.buffer
        ctype = self.storage_type(buf.dtype)
        name = self.define(buf.data)
        values = ", ".join(self.const_element(v, buf.dtype) for v in s.data)
        align = f" __attribute__((aligned({buf.align})))" if buf.align > 1 else ""
        self.emit(f"static const {ctype} {name}[{max(len(s.data), 1)}]{align} = {{{values}}};")
        self.stmt(s.body)

    def const_element(self, value: int | float, dtype: DataType) -> str:
        """One element of a constant array as a C constant of its storage type."""
        if dtype.is_float8:  # the bits of the 8-bit value
            narrow = np.array(value).astype(numpy_scalar_type(dtype))
            return f"0x{int(narrow.view(np.uint8)):02x}u"
        if self._half(dtype) is not None:  # the bits of the half-precision value
            half = numpy_scalar_type(dtype.element)
            return f"0x{int(np.array(value, half).view(np.uint16)):04x}u"
        return self.expr_text(op.const(value, dtype))

    def stmt_AssertStmt(self, s: AssertStmt) -> None:
        if self.in_parallel:
            raise CodegenError(f"{self.func_name}: an assert inside a parallel loop")
        message = s.message.value if isinstance(s.message, StringImm) else "assertion"
        comment = message.replace("*/", "* /")
        self.emit(f"if (!({self.expr_text(s.condition)})) {{  /* {comment} */")
        self.emit("  return -2;")
        self.emit("}")
        self.stmt(s.body)

    # ---- functions -------------------------------------------------------------------------

    def function(self, name: str, func: PrimFunc, sig: FuncSignature) -> str:
        """The C text of one function; helpers it needs are collected in ``self.helpers``."""
        self.func_name = name
        direct_dims = {
            d for _, b in func.buffer_map for d in (*b.shape, *b.strides) if isinstance(d, Var)
        }
        params: list[str] = []
        for var, spec in zip(func.params, sig.params):
            buf = func.buffer_of(var)
            if buf is None:
                params.append(f"{self.value_type(var.dtype)} {self.define(var)}")
                if var in direct_dims:
                    self.nonneg.add(var)
                continue
            const = "" if spec.written else "const "
            ctype = self.storage_type(buf.dtype)
            params.append(f"{const}{ctype}* {self.restrict} {self.define(buf.data)}")
        for var in symbolic_vars(name, func):
            params.append(f"int64_t {self.define(var)}")
            self.nonneg.add(var)
        self.indent = 1
        self.import_sources(func.body)
        self.stmt(func.body)
        body = self.lines
        head = f"TW_EXPORT int32_t {sig.symbol}({', '.join(params)}) {{"
        if self.uses_heap:
            return "\n".join([head, "  int32_t tw_status = 0;", *body, "  return tw_status;", "}"])
        return "\n".join([head, *body, "  return 0;", "}"])


def _closes_at_end(text: str, open_at: int) -> bool:
    depth = 0
    for position in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[position], 0)
        if depth == 0:
            return position == len(text) - 1
    return False


@dataclasses.dataclass(frozen=True)
class CSource:
    """Generated C: the whole translation unit and each function's argument contract."""

    text: str
    signatures: dict[str, FuncSignature]


_RESERVED_SYMBOLS = C_KEYWORDS | {"free", "aligned_alloc", "abs", "malloc", "memcpy", "printf"}


def c_symbol(name: str) -> str:
    """The exported C symbol of the function called ``name`` in its module.

    Example::

        >>> c_symbol("matmul"), c_symbol("main")
        ('matmul', 'main_kernel')
    """
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "func"
    math_names = {t.split("(")[0] for pair in CLikePrinter.math_templates.values() for t in pair}
    if text[0].isdigit() or text.startswith("tw_") or text in _RESERVED_SYMBOLS | math_names:
        text = f"{text}_kernel"
    return text


def generate_c(mod: IRModule, symbol: Callable[[str], str] | None = None) -> CSource:
    """Generate C for every function of a lowered module.

    Arguments:
        mod: a module lowered for the CPU (``tw.lower(mod, "c")``): no blocks, 1-D buffer
            accesses.
        symbol: the exported symbol of each function's name; ``c_symbol`` by default.

    Example::

        >>> src = generate_c(lowered)
        >>> print(src.text)                  # the translation unit
        >>> src.signatures["main"].params    # what the runtime checks before a call
    """
    pieces: list[str] = []
    helpers: dict[str, str] = {}
    signatures: dict[str, FuncSignature] = {}
    uses_heap = False
    symbols: dict[str, str] = {}
    for name, func in mod.items():
        mapped = tensor_map_buffers(func.body)
        if mapped:
            raise CodegenError(
                f"{name}: takes the TMA tensor map of buffer {', '.join(mapped)} "
                "(tw.cuda.tensor_map); the c target has no tensor maps (cuda only)"
            )
        exported = (symbol or c_symbol)(name)
        if exported in symbols:
            raise CodegenError(
                f"functions {symbols[exported]!r} and {name!r} share C name {exported}"
            )
        symbols[exported] = name
        sig = func_signature(name, func, exported)
        printer = CPrinter()
        pieces.append(printer.function(name, func, sig))
        for key, text in printer.helpers.items():
            helpers.setdefault(key, text)
        uses_heap = uses_heap or printer.uses_heap
        signatures[name] = sig
    includes = ["#include <math.h>", "#include <stdbool.h>", "#include <stdint.h>"]
    if uses_heap:
        includes.append("#include <stdlib.h>")
    prelude = [
        "// Generated by tilewright for the c target.",
        *includes,
        "",
        '#define TW_EXPORT __attribute__((visibility("default")))',
    ]
    text = "\n".join(prelude) + "\n\n" + "".join(h + "\n" for h in helpers.values())
    text += "\n\n".join(pieces) + "\n"
    return CSource(text, signatures)


def codegen_c(mod: IRModule) -> str:
    """The C source of a lowered module (see ``generate_c`` for the argument contracts).

    Example::

        >>> print(codegen_c(tw.lower(mod, "c")))
    """
    return generate_c(mod).text
