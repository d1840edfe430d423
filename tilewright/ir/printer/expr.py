"""Expressions to script text: constants, operators with minimal parentheses, calls, regions."""

from __future__ import annotations

import json
import math

from tilewright.ir import intrinsics, op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.comm_reducer import CommReducer
from tilewright.ir.dtype import int32
from tilewright.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Range,
    Select,
    Shuffle,
    StringImm,
    Sub,
    Var,
)
from tilewright.ir.node import Node
from tilewright.ir.printer.names import Namer, free_names
from tilewright.ir.stmt import IterVar

# Python's binding strengths, weakest first; a higher number binds tighter.
OR, AND, NOT, CMP, ADD, MUL, UNARY, ATOM = 1, 2, 3, 4, 6, 7, 8, 10

# Infix operators: (symbol, strength). All are left-associative except comparisons, which
# Python chains (`a < b < c`), so a comparison operand that is itself a comparison needs
# parentheses on either side.
INFIX: dict[type, tuple[str, int]] = {
    Add: ("+", ADD),
    Sub: ("-", ADD),
    Mul: ("*", MUL),
    FloorDiv: ("//", MUL),
    FloorMod: ("%", MUL),
    EQ: ("==", CMP),
    NE: ("!=", CMP),
    LT: ("<", CMP),
    LE: ("<=", CMP),
    GT: (">", CMP),
    GE: (">=", CMP),
    And: ("and", AND),
    Or: ("or", OR),
}
# Operators printed as T.<name>(a, b).
FUNCTIONAL: dict[type, str] = {Min: "min", Max: "max", Div: "truncdiv", Mod: "truncmod"}


def string(text: str) -> str:
    """A double-quoted Python string literal for ``text``."""
    return json.dumps(text)


def is_const(e: object, value: int) -> bool:
    return isinstance(e, IntImm) and e.value == value


def is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.dtype.is_bool and e.value == 1


def end_of(start: PrimExpr, extent: PrimExpr) -> PrimExpr:
    """``start + extent``, folded for constants and just ``extent`` when ``start`` is 0."""
    if is_const(start, 0) and start.dtype == extent.dtype:
        return extent
    return op.add(start, extent)


# Tensor-core intrinsics the script spells as functions taking the result dtype first.
_TENSOR_CORE = (
    intrinsics.PTX_LDMATRIX,
    intrinsics.PTX_MMA,
    intrinsics.MMA_FILL,
    intrinsics.MMA_STORE,
)


# TVM's builtins printed with their result dtype first, and those whose dtype is fixed.
_DTYPE_FIRST = (
    intrinsics.CALL_PURE_EXTERN,
    intrinsics.CALL_LLVM_INTRIN,
    intrinsics.CALL_LLVM_PURE_INTRIN,
)
_FIXED_DTYPE = {
    intrinsics.ISNULLPTR: "isnullptr",
    intrinsics.CALL_CPACKED: "call_cpacked",
    intrinsics.STRUCT_SET: "tvm_struct_set",
    intrinsics.STACK_ALLOCA: "tvm_stack_alloca",
    intrinsics.STACK_MAKE_SHAPE: "tvm_stack_make_shape",
    intrinsics.STACK_MAKE_ARRAY: "tvm_stack_make_array",
}


class ExprPrinter:
    """Prints expressions; variables and buffers are named through a shared ``Namer``."""

    def __init__(self, namer: Namer | None = None) -> None:
        self.namer = namer if namer is not None else Namer()
        # Each buffer's data handle prints as `A.data` unless it is named on its own, and a
        # variable offset (a match buffer's `offset_factor=`) as `A.elem_offset`.
        self.data_owner: dict[Var, Buffer] = {}
        self.offset_owner: dict[Var, Buffer] = {}

    # -- naming ---------------------------------------------------------------------------

    def define_var(self, var: Var, hint: str | None = None) -> str:
        return self.namer.define(var, var.name if hint is None else hint)

    def define_buffer(self, buffer: Buffer, hint: str | None = None) -> str:
        self.data_owner.setdefault(buffer.data, buffer)
        if isinstance(buffer.elem_offset, Var):
            self.offset_owner.setdefault(buffer.elem_offset, buffer)
        return self.namer.define(buffer, buffer.name if hint is None else hint)

    def claim_free(self, tree: object) -> list[Var]:
        """Name what ``tree`` uses without defining; returns the free variables."""
        free: list[Var] = []
        for obj in free_names(tree):
            if isinstance(obj, Buffer):
                self.define_buffer(obj)
            elif isinstance(obj, Var):
                self.define_var(obj)
                free.append(obj)
        return free

    def buffer(self, buffer: Buffer) -> str:
        if buffer not in self.namer.names:
            self.data_owner.setdefault(buffer.data, buffer)
        return self.namer.get(buffer)

    # -- expressions ----------------------------------------------------------------------

    def expr(self, e: PrimExpr) -> str:
        """The text of ``e``."""
        return self.ranked(e)[0]

    def operand(self, e: PrimExpr, strength: int) -> str:
        """``e`` parenthesised when it binds more loosely than ``strength`` requires."""
        text, rank = self.ranked(e)
        return f"({text})" if rank < strength else text

    def ranked(self, e: object) -> tuple[str, int]:
        """The text of ``e`` and how tightly its outermost operator binds."""
        for klass in type(e).__mro__:
            method = getattr(self, f"expr_{klass.__name__}", None)
            if method is not None:
                return method(e)
        return self.generic(e), ATOM

    def args(self, *items: PrimExpr | str) -> str:
        return ", ".join(i if isinstance(i, str) else self.expr(i) for i in items)

    def expr_Var(self, var: Var) -> tuple[str, int]:
        name = self.namer.names.get(var)
        if name is None and var in self.data_owner:
            return f"{self.buffer(self.data_owner[var])}.data", ATOM
        if name is None and var in self.offset_owner:
            return f"{self.buffer(self.offset_owner[var])}.elem_offset", ATOM
        return name if name is not None else self.namer.get(var), ATOM

    def expr_IntImm(self, e: IntImm) -> tuple[str, int]:
        if e.dtype == int32:
            return str(e.value), (UNARY if e.value < 0 else ATOM)
        if e.dtype.is_bool:
            return f"T.bool({bool(e.value)})", ATOM
        return f"T.{e.dtype}({e.value})", ATOM

    def expr_FloatImm(self, e: FloatImm) -> tuple[str, int]:
        value = e.value
        text = repr(value) if math.isfinite(value) else string(repr(value))
        return f"T.{e.dtype}({text})", ATOM

    def expr_StringImm(self, e: StringImm) -> tuple[str, int]:
        return string(e.value), ATOM

    def expr_Cast(self, e: Cast) -> tuple[str, int]:
        return f"T.Cast({string(str(e.dtype))}, {self.expr(e.value)})", ATOM

    def expr_BinaryOp(self, e: BinaryOp) -> tuple[str, int]:
        cls = type(e)
        if cls is Div and e.dtype.is_float:
            symbol, strength = "/", MUL
        elif cls in INFIX:
            symbol, strength = INFIX[cls]
        else:
            return f"T.{FUNCTIONAL[cls]}({self.args(e.a, e.b)})", ATOM
        left = self.operand(e.a, strength)
        right = self.operand(e.b, strength + 1)
        return f"{left} {symbol} {right}", strength

    def expr_CmpOp(self, e: CmpOp) -> tuple[str, int]:
        symbol, strength = INFIX[type(e)]
        left = self.operand(e.a, CMP + 1 if strength == CMP else strength)
        return f"{left} {symbol} {self.operand(e.b, strength + 1)}", strength

    def expr_Not(self, e: Not) -> tuple[str, int]:
        return f"not {self.operand(e.a, NOT)}", NOT

    def expr_Select(self, e: Select) -> tuple[str, int]:
        return f"T.Select({self.args(e.condition, e.true_value, e.false_value)})", ATOM

    def expr_Shuffle(self, e: Shuffle) -> tuple[str, int]:
        vectors = ", ".join(self.expr(v) for v in e.vectors)
        return f"T.Shuffle([{vectors}], [{self.args(*e.indices)}])", ATOM

    def expr_BufferLoad(self, e: BufferLoad) -> tuple[str, int]:
        return f"{self.buffer(e.buffer)}[{self.indices(e.indices)}]", ATOM

    def expr_Ramp(self, e: Ramp) -> tuple[str, int]:
        return f"T.Ramp({self.args(e.base, e.stride)}, {e.lanes})", ATOM

    def expr_Broadcast(self, e: Broadcast) -> tuple[str, int]:
        return f"T.Broadcast({self.expr(e.value)}, {e.lanes})", ATOM

    def expr_Let(self, e: Let) -> tuple[str, int]:
        value = self.expr(e.value)
        # Inside a function the variable is declared up front (`x = T.int32()`).
        declared = e.var in self.namer.names
        if not declared:
            self.namer.push()
            self.define_var(e.var)
        name = self.namer.names[e.var]
        body = self.expr(e.body)
        if not declared:
            self.namer.pop()
        return f"T.Let({body}, where={{{name}: {value}}})", ATOM

    def expr_Call(self, e: Call) -> tuple[str, int]:
        args = e.args
        if intrinsics.is_tile_layer(e):
            from tilewright.ir.printer.tirx import tirx_call

            text = tirx_call(self, e)
            if text is not None:
                return text, ATOM
        if intrinsics.THREAD_ALLREDUCE.matches(e) and e.dtype.is_handle:
            return f"T.tvm_thread_allreduce({self.args(*args)})", ATOM
        if intrinsics.REINTERPRET.matches(e) and len(args) == 1:
            return f"T.reinterpret({self.expr(args[0])}, dtype={string(str(e.dtype))})", ATOM
        if intrinsics.CALL_EXTERN.matches(e) and args and isinstance(args[0], StringImm):
            head = f"{string(str(e.dtype))}, {string(args[0].value)}"
            return f"T.call_extern({', '.join([head, *(self.expr(a) for a in args[1:])])})", ATOM
        if intrinsics.CALL_PACKED.matches(e) and args and isinstance(args[0], StringImm):
            return f"T.call_packed({self.args(*args)})", ATOM
        if intrinsics.ADDRESS_OF.matches(e) and len(args) == 1:
            return f"T.address_of({self.expr(args[0])})", ATOM
        if intrinsics.ACCESS_PTR.matches(e) and len(args) == 4:
            owner = self.data_owner.get(args[0]) if isinstance(args[0], Var) else None
            ptype = string(str(owner.dtype)) if owner is not None else '"handle"'
            return f"T.tvm_access_ptr(T.type_annotation({ptype}), {self.args(*args)})", ATOM
        host = self.host_call(e)
        if host is not None:
            return host, ATOM
        if _reparses_as_intrinsic(e):
            return f"T.{e.op}({self.args(*args)})", ATOM
        if intrinsics.is_call(e, *_TENSOR_CORE):  # TVM's spelling: the dtype first
            operands = [string(str(e.dtype)), *(self.expr(a) for a in args)]
            return f"T.{e.op}({', '.join(operands)})", ATOM
        head = f"{string(str(e.dtype))}, {string(e.op)}"
        return f"T.call_intrin({', '.join([head, *(self.expr(a) for a in args)])})", ATOM

    def host_call(self, e: Call) -> str | None:
        """TVM's host-side builtins as its printer writes them (``T.call_cpacked(...)``,
        ``T.call_pure_extern("float32", "f", x)``, ``T.tvm_struct_get(a, 0, 12, "int32")``);
        None when the script spelling would not read back to this very call."""
        known = intrinsics.lookup_or_none(e.op)
        if known is None or e.op.removeprefix("tir.") != known.name:
            return None
        dtype = string(str(e.dtype))
        args = [self.expr(a) for a in e.args]
        if known in _DTYPE_FIRST:
            name = e.args[0] if e.args else None
            if known is intrinsics.CALL_PURE_EXTERN and not (
                isinstance(name, StringImm) and name.value.isidentifier()
            ):
                return None
            return f"T.{known.name}({', '.join([dtype, *args])})"
        if known is intrinsics.STRUCT_GET and len(args) == 3:
            return f"T.tvm_struct_get({', '.join([*args, dtype])})"
        spelled = _FIXED_DTYPE.get(known)
        if spelled is None or known.result_dtype(e.args) != e.dtype:
            return None
        if known is intrinsics.ISNULLPTR and not e.args[0].dtype.is_handle:
            return None
        if known is intrinsics.CALL_CPACKED and not isinstance(e.args[0], StringImm):
            return None
        return f"T.{spelled}({', '.join(args)})"

    def expr_CommReducer(self, r: CommReducer) -> tuple[str, int]:
        # The lambda's parameters are named in a scope of their own.
        self.namer.push()
        params = [self.define_var(v) for v in (*r.lhs, *r.rhs)]
        results = [self.expr(x) for x in r.result]
        self.namer.pop()
        body = results[0] if len(results) == 1 else f"({', '.join(results)})"
        identity = ", ".join(self.expr(i) for i in r.identity)
        return f"T.comm_reducer(lambda {', '.join(params)}: {body}, [{identity}])", ATOM

    def expr_Buffer(self, buffer: Buffer) -> tuple[str, int]:
        return self.buffer(buffer), ATOM

    def expr_BufferRegion(self, region: BufferRegion) -> tuple[str, int]:
        return self.region(region), ATOM

    def expr_Range(self, r: Range) -> tuple[str, int]:
        return f"T.Range({self.args(r.min, end_of(r.min, r.extent))})", ATOM

    def expr_IterVar(self, iv: IterVar) -> tuple[str, int]:
        dom = self.expr_Range(iv.dom)[0]
        return f"T.iter_var({self.expr(iv.var)}, {dom}, {string(iv.kind.value)})", ATOM

    # -- pieces shared with statements ----------------------------------------------------

    def indices(self, items: tuple[PrimExpr, ...]) -> str:
        return self.args(*items) if items else "()"

    def region(self, region: BufferRegion) -> str:
        """``A[vi, 0:16, vj:vj + 3]``: a single index where the extent is one."""
        parts = []
        for r in region.region:
            if is_const(r.extent, 1) and r.extent.dtype == r.min.dtype:
                parts.append(self.expr(r.min))
            else:
                parts.append(f"{self.expr(r.min)}:{self.expr(end_of(r.min, r.extent))}")
        return f"{self.buffer(region.buffer)}[{', '.join(parts) if parts else '()'}]"

    def shape(self, dims: tuple[PrimExpr, ...]) -> str:
        """A Python tuple: ``(1024,)``, ``(16, n)``, ``()``."""
        if len(dims) == 1:
            return f"({self.expr(dims[0])},)"
        return f"({self.args(*dims)})"

    def attr_value(self, value: object) -> str:
        """An annotation or function attribute value; pairs keyed by strings print as a dict."""
        if isinstance(value, bool):
            return "True" if value else "False"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return repr(value) if math.isfinite(value) else f"float({string(repr(value))})"
        if isinstance(value, str):
            return string(value)
        if isinstance(value, tuple):
            if _is_mapping(value):
                return self.attr_dict(value)
            return "[" + ", ".join(self.attr_value(v) for v in value) + "]"
        if isinstance(value, Node):
            return self.ranked(value)[0]
        return repr(value)

    def attr_dict(self, pairs: tuple[tuple[str, object], ...]) -> str:
        items = (f"{string(k)}: {self.attr_value(v)}" for k, v in pairs)
        return "{" + ", ".join(items) + "}"

    def generic(self, node: object) -> str:
        """Any other node as ``Class(field=value, ...)`` so that error messages can show it."""
        if not isinstance(node, Node):
            return self.attr_value(node)
        fields = ", ".join(f"{k}={self.attr_value(v)}" for k, v in node.field_items())
        return f"{type(node).__name__}({fields})"


def _is_mapping(value: tuple) -> bool:
    if not value or not all(isinstance(p, tuple) and len(p) == 2 for p in value):
        return False
    keys = [p[0] for p in value]
    return all(isinstance(k, str) for k in keys) and keys == sorted(set(keys))


def _reparses_as_intrinsic(e: Call) -> bool:
    """True when ``T.<op>(args)`` parses back to this very call (same op, dtype and args)."""
    args = e.args
    if e.op in intrinsics.UNARY_MATH and len(args) == 1:
        arg = args[0].dtype
        return e.dtype == arg and (arg.is_float or e.op == "abs")
    if e.op in intrinsics.BINARY_MATH and len(args) == 2:
        return e.dtype == args[0].dtype == args[1].dtype and e.dtype.is_float
    if e.op in intrinsics.FLOAT_PREDICATES and len(args) == 1:
        return e.dtype.is_bool and e.dtype.lanes == args[0].dtype.lanes
    named = intrinsics.lookup_or_none(e.op)
    if named in intrinsics.SCRIPT_NAMED:
        try:
            return named.call(*args).dtype == e.dtype and e.op == named.name
        except TypeError:
            return False
    if intrinsics.LIKELY.matches(e) and len(args) == 1:
        return e.dtype == args[0].dtype
    if intrinsics.IF_THEN_ELSE.matches(e) and len(args) == 3:
        same = e.dtype == args[1].dtype == args[2].dtype
        return same and args[0].dtype.element.is_bool
    return False
