"""Expression and small-statement functions of the ``T`` namespace: math intrinsics,
``T.max``/``T.min``, casts, ``T.Select``, ``T.if_then_else``, vectors, ``T.Let``,
``T.evaluate``, ``T.call_intrin`` and ``T.attr``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tilewright.ir import expr as ir
from tilewright.ir import intrinsics, op
from tilewright.ir.expr import Call, PrimExpr, StringImm, Var
from tilewright.ir.node import Node
from tilewright.ir.stmt import Evaluate, IterKind, IterVar
from tilewright.script.parser.frames import (
    AttrFrame,
    DTypeConstructor,
    LetAnnotation,
    LetFrame,
    VarDecl,
)
from tilewright.script.tir import arguments as args


def _typed(value: PrimExpr, dtype: object, where: str) -> PrimExpr:
    """``value`` as TVM's ``dtype=`` of a math call asks: cast when it differs."""
    if dtype is None:
        return value
    wanted = args.dtype_of(dtype, where)
    return value if value.dtype == wanted else op.cast(value, wanted)


def _unary(name: str) -> Callable[..., PrimExpr]:
    def call(x: object, dtype: object = None) -> PrimExpr:
        where = f"T.{name}"
        return op.math_call(name, _typed(args.expr(x, where), dtype, where))

    call.__name__ = call.__qualname__ = name
    call.__doc__ = (
        f"``T.{name}(x)``: the {name} intrinsic (integers promote to float32; ``dtype=`` "
        "gives the result's dtype, as TVM's printer writes it)."
    )
    return call


def _binary(name: str) -> Callable[..., PrimExpr]:
    def call(x: object, y: object, dtype: object = None) -> PrimExpr:
        where = f"T.{name}"
        a = _typed(args.expr(x, where), dtype, where)
        b = _typed(args.expr(y, where), dtype, where)
        return op.math_call(name, a, b)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``T.{name}(x, y)``: the {name} intrinsic (``dtype=``: the result's)."
    return call


def _intrinsic(intrinsic: intrinsics.Intrinsic, doc: str) -> Callable[..., PrimExpr]:
    name = intrinsic.name

    def call(*values: object, dtype: object = None) -> PrimExpr:
        where = f"T.{name}"
        return intrinsic.call(*(_typed(args.expr(v, where), dtype, where) for v in values))

    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


isnan = _intrinsic(intrinsics.lookup("isnan"), "``T.isnan(x)``: whether x is NaN.")
isinf = _intrinsic(intrinsics.lookup("isinf"), "``T.isinf(x)``: whether x is infinite.")
isfinite = _intrinsic(intrinsics.lookup("isfinite"), "``T.isfinite(x)``: neither.")
bitwise_and = _intrinsic(intrinsics.BITWISE_AND, "``T.bitwise_and(a, b)``: ``a & b``.")
bitwise_or = _intrinsic(intrinsics.BITWISE_OR, "``T.bitwise_or(a, b)``: ``a | b``.")
bitwise_xor = _intrinsic(intrinsics.BITWISE_XOR, "``T.bitwise_xor(a, b)``: ``a ^ b``.")
bitwise_not = _intrinsic(intrinsics.BITWISE_NOT, "``T.bitwise_not(a)``: ``~a``.")
shift_left = _intrinsic(intrinsics.SHIFT_LEFT, "``T.shift_left(a, b)``: ``a << b``.")
shift_right = _intrinsic(intrinsics.SHIFT_RIGHT, "``T.shift_right(a, b)``: ``a >> b``.")


@args.dtype_ignored
def ceildiv(a: object, b: object) -> PrimExpr:
    """``T.ceildiv(a, b)``: ``(a + b - 1) // b`` for integers (TVM's name)."""
    x, y = args.expr(a, "T.ceildiv"), args.expr(b, "T.ceildiv")
    return op.floordiv(op.sub(op.add(x, y), 1), y)


def Not(a: object) -> PrimExpr:
    """``T.Not(c)``: logical not."""
    return op.logical_not(args.expr(a, "T.Not"))


def And(a: object, b: object) -> PrimExpr:
    """``T.And(a, b)``: logical and."""
    return op.logical_and(args.expr(a, "T.And"), args.expr(b, "T.And"))


def Or(a: object, b: object) -> PrimExpr:
    """``T.Or(a, b)``: logical or."""
    return op.logical_or(args.expr(a, "T.Or"), args.expr(b, "T.Or"))


exp = _unary("exp")
exp2 = _unary("exp2")
exp10 = _unary("exp10")
log = _unary("log")
log2 = _unary("log2")
log10 = _unary("log10")
log1p = _unary("log1p")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
sinh = _unary("sinh")
cosh = _unary("cosh")
tanh = _unary("tanh")
asin = _unary("asin")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
acos = _unary("acos")
atan = _unary("atan")
sigmoid = _unary("sigmoid")
erf = _unary("erf")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")
trunc = _unary("trunc")
nearbyint = _unary("nearbyint")
abs = _unary("abs")
fabs = _unary("fabs")
pow = _binary("pow")
atan2 = _binary("atan2")
fmod = _binary("fmod")
hypot = _binary("hypot")
copysign = _binary("copysign")
nextafter = _binary("nextafter")


def max(a: object, b: object) -> PrimExpr:
    """``T.max(a, b)``: the larger value (a ``Max`` node)."""
    return op.max_value(args.expr(a, "T.max"), args.expr(b, "T.max"))


def min(a: object, b: object) -> PrimExpr:
    """``T.min(a, b)``: the smaller value (a ``Min`` node)."""
    return op.min_value(args.expr(a, "T.min"), args.expr(b, "T.min"))


@args.dtype_ignored
def truncdiv(a: object, b: object) -> PrimExpr:
    """``T.truncdiv(a, b)``: integer division rounding toward zero (``Div``)."""
    return op.truncdiv(args.expr(a, "T.truncdiv"), args.expr(b, "T.truncdiv"))


@args.dtype_ignored
def truncmod(a: object, b: object) -> PrimExpr:
    """``T.truncmod(a, b)``: remainder of ``truncdiv`` (``Mod``)."""
    return op.truncmod(args.expr(a, "T.truncmod"), args.expr(b, "T.truncmod"))


@args.dtype_ignored
def floordiv(a: object, b: object) -> PrimExpr:
    """``T.floordiv(a, b)``: the same as ``a // b``."""
    return op.floordiv(args.expr(a, "T.floordiv"), args.expr(b, "T.floordiv"))


@args.dtype_ignored
def floormod(a: object, b: object) -> PrimExpr:
    """``T.floormod(a, b)``: the same as ``a % b``."""
    return op.floormod(args.expr(a, "T.floormod"), args.expr(b, "T.floormod"))


def if_then_else(
    cond: object, true_value: object, false_value: object, dtype: object = None
) -> PrimExpr:
    """``T.if_then_else(c, a, b)``: only the chosen side is evaluated (``dtype=``: the
    branches' dtype, as TVM's printer may write it)."""
    where = "T.if_then_else"
    c = args.expr(cond, where)
    a, b = (_typed(args.expr(v, where), dtype, where) for v in (true_value, false_value))
    return op.if_then_else(c, a, b)


def Select(cond: object, true_value: object, false_value: object) -> PrimExpr:
    """``T.Select(c, a, b)``: both sides are evaluated."""
    where = "T.Select"
    c, a, b = (args.expr(v, where) for v in (cond, true_value, false_value))
    return op.select(c, a, b)


def cast(value: object, dtype: object) -> PrimExpr:
    """``T.cast(x, "float32")``: ``x`` converted (constants fold, same dtype is a no-op)."""
    return op.cast(args.expr(value, "T.cast"), args.dtype_of(dtype, "T.cast"))


def Cast(dtype: object, value: object) -> PrimExpr:
    """``T.Cast("float32", x)``: a ``Cast`` node, exactly as written."""
    target = args.dtype_of(dtype, "T.Cast")
    x = args.expr(value, "T.Cast")
    return x if x.dtype == target else ir.Cast(target, x)


def ramp(base: object, stride: object, lanes: object) -> PrimExpr:
    """``T.ramp(base, stride, lanes)``: TVM's lower-case spelling of ``T.Ramp``."""
    return Ramp(base, stride, lanes)


def Ramp(base: object, stride: object, lanes: object) -> PrimExpr:
    """``T.Ramp(base, stride, lanes)``: the vector ``base + k * stride`` for each lane k."""
    b = args.int_expr(base, "T.Ramp")
    s = op.convert(args.int_expr(stride, "T.Ramp"), b.dtype)
    return ir.Ramp(b, op.cast(s, b.dtype), args.int_value(lanes, "T.Ramp lanes"))


def broadcast(value: object, lanes: object) -> PrimExpr:
    """``T.broadcast(x, lanes)``: TVM's lower-case spelling of ``T.Broadcast``."""
    return Broadcast(value, lanes)


def Broadcast(value: object, lanes: object) -> PrimExpr:
    """``T.Broadcast(x, lanes)``: ``x`` in every lane."""
    return ir.Broadcast(args.expr(value, "T.Broadcast"), args.int_value(lanes, "T.Broadcast lanes"))


def Let(body: object, where: dict[Var, object]) -> PrimExpr:
    """``T.Let(x + 1, where={x: 5})``: ``body`` with each variable bound (outermost first)."""
    if not isinstance(where, dict) or not all(isinstance(k, Var) for k in where):
        raise TypeError(f"T.Let: where= is a dict from variables to values, found {where!r}")
    result = args.expr(body, "T.Let")
    for var, value in reversed(list(where.items())):
        result = ir.Let(var, op.convert(args.expr(value, "T.Let"), var.dtype), result)
    return result


@dataclass(frozen=True)
class _Let(LetAnnotation):
    """``T.let``: called, a ``Let`` expression or a ``LetStmt`` frame; subscripted
    (``x: T.let[T.float32] = v``) or bare (``x: T.let = v``), a let-binding annotation."""

    def __call__(self, var: object, value: object, body: object = None) -> PrimExpr | LetFrame:
        """``T.let(x, v, body)`` is a ``Let`` expression; ``with T.let(x, v):`` a ``LetStmt``
        (``with T.let(T.int32(), v) as x:`` names a new variable)."""
        if isinstance(var, VarDecl) and body is None:
            return LetFrame(None, op.convert(args.expr(value, "T.let"), var.dtype))
        if not isinstance(var, Var):
            raise TypeError(f"T.let: expected a variable (x = T.int32()), found {var!r}")
        val = op.convert(args.expr(value, "T.let"), var.dtype)
        if body is None:
            return LetFrame(var, val)
        return ir.Let(var, val, args.expr(body, "T.let"))

    def __getitem__(self, kind: object) -> LetAnnotation:
        if not isinstance(kind, DTypeConstructor):
            raise TypeError(f"T.let[...]: expected a dtype such as T.float32, found {kind!r}")
        return LetAnnotation(kind)

    def __repr__(self) -> str:
        return "T.let"


let = _Let()


def evaluate(value: object) -> Evaluate:
    """``T.evaluate(call)``: evaluate an expression for its effect."""
    return Evaluate(args.expr(value, "T.evaluate"))


@args.dtype_forward
def call_intrin(dtype: object, op_name: object, *values: object) -> PrimExpr:
    """``T.call_intrin("float32", "my_op", x)``: a call to the intrinsic named ``op_name``."""
    if not isinstance(op_name, str):
        raise TypeError(f"T.call_intrin: expected an intrinsic name string, found {op_name!r}")
    result = args.dtype_of(dtype, "T.call_intrin")
    operands = tuple(
        StringImm(v) if isinstance(v, str) else args.expr(v, "T.call_intrin") for v in values
    )
    return Call(result, op_name, operands)


def min_value(dtype: object) -> PrimExpr:
    """``T.min_value("float32")``: the smallest value of the dtype (the lowest finite float)."""
    return op.dtype_min(args.dtype_of(dtype, "T.min_value"))


def max_value(dtype: object) -> PrimExpr:
    """``T.max_value("int8")``: the largest value of the dtype."""
    return op.dtype_max(args.dtype_of(dtype, "T.max_value"))


def likely(cond: object, dtype: object = None) -> PrimExpr:
    """``T.likely(i < n)``: the condition, marked as usually true (a branch hint)."""
    return intrinsics.LIKELY.call(args.expr(cond, "T.likely"))


@args.dtype_forward
def call_extern(dtype: object, func_name: object, *values: object) -> PrimExpr:
    """``T.call_extern("int32", "dot4", C.data, ...)``: a call of the external C function
    ``func_name`` (its source given with ``sch.annotate(loop, "pragma_import_c", source)``)."""
    if not isinstance(func_name, str) or not func_name.isidentifier():
        raise TypeError(f"T.call_extern: expected a C function name, found {func_name!r}")
    result = args.dtype_of(dtype, "T.call_extern")
    operands = tuple(args.expr(v, "T.call_extern") for v in values)
    return intrinsics.CALL_EXTERN.call(StringImm(func_name), *operands, dtype=result)


def attr(node: object, key: object, value: object) -> AttrFrame:
    """``with T.attr(node, "key", value):`` an ``AttrStmt`` around the body."""
    if not isinstance(key, str):
        raise TypeError(f"T.attr: expected a key string, found {key!r}")
    target = node if isinstance(node, Node) else args.expr(node, "T.attr")
    val = StringImm(value) if isinstance(value, str) else args.expr(value, "T.attr")
    return AttrFrame(target, key, val)


def EQ(a: object, b: object) -> PrimExpr:
    """``T.EQ(a, b)``: ``a == b`` as IR (Python's ``==`` on nodes is identity)."""
    return op.eq(args.expr(a, "T.EQ"), args.expr(b, "T.EQ"))


def NE(a: object, b: object) -> PrimExpr:
    """``T.NE(a, b)``: ``a != b`` as IR."""
    return op.ne(args.expr(a, "T.NE"), args.expr(b, "T.NE"))


def Range(begin: object, end: object = None) -> ir.Range:
    """``T.Range(begin, end)``: the half-open range ``[begin, end)`` (``T.Range(n)`` from 0)."""
    if end is None:
        begin, end = 0, begin
    low = args.int_expr(begin, "T.Range")
    return ir.Range(low, args.span(low, args.int_expr(end, "T.Range")))


def iter_var(var: object, dom: object, kind: object) -> IterVar:
    """``T.iter_var(v, T.Range(0, 8), "spatial")``: an iterator as an attribute value."""
    if not isinstance(var, Var):
        raise TypeError(f"T.iter_var: expected a variable, found {var!r}")
    if not isinstance(dom, ir.Range):
        raise TypeError(f"T.iter_var: expected a T.Range domain, found {dom!r}")
    kinds = {k.value: k for k in IterKind}
    if kind not in kinds:
        raise TypeError(f"T.iter_var: kind is one of {', '.join(kinds)}, found {kind!r}")
    return IterVar(var, dom, kinds[kind])
