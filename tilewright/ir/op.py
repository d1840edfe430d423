"""Expression constructors with TVM's conversion rules: Python constants take the other
operand's dtype, mixed int/float promotes to float, narrower integers widen, scalars
broadcast to vectors, and operations on two constants fold."""

from __future__ import annotations

import math

from tilewright.ir.dtype import DataType, bool_, dtype, float32, int32, numpy_scalar_type
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
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    StringImm,
    Sub,
)

Operand = PrimExpr | int | float | bool


def const(value: int | float | bool, dtype_: str | DataType | None = None) -> PrimExpr:
    """A constant node: ``IntImm`` for integer and bool types, ``FloatImm`` for floats."""
    if dtype_ is None:
        if isinstance(value, bool):
            dtype_ = bool_
        elif isinstance(value, int):
            dtype_ = int32 if -(2**31) <= value < 2**31 else dtype("int64")
        else:
            dtype_ = float32
    dt = dtype(dtype_)
    if dt.is_float:
        return FloatImm(float(value), dt)
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"constant {value} cannot be represented as {dt}")
    return IntImm(int(value), dt)


def convert(value: Operand | str, like: DataType | None = None) -> PrimExpr:
    """``value`` as an expression; a Python number takes ``like``'s dtype when it fits."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, str):
        return StringImm(value)
    if isinstance(value, bool):
        return IntImm(int(value), bool_)
    if like is not None and not like.is_handle and not like.is_bool:
        scalar = like.element
        if isinstance(value, int) or scalar.is_float:
            return const(value, scalar)
    if isinstance(value, (int, float)):
        return const(value)
    raise TypeError(f"cannot convert {value!r} ({type(value).__name__}) to an expression")


def _binary_operands(a: Operand, b: Operand) -> tuple[PrimExpr, PrimExpr]:
    if not isinstance(a, PrimExpr) and isinstance(b, PrimExpr):
        return _unify(convert(a, b.dtype), b)
    if isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        return _unify(a, convert(b, a.dtype))
    x, y = convert(a), convert(b)
    return _unify(x, y)


def _unify(x: PrimExpr, y: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    tx, ty = x.dtype, y.dtype
    if tx.lanes != ty.lanes:
        if tx.lanes == 1:
            x = Broadcast(x, ty.lanes)
        elif ty.lanes == 1:
            y = Broadcast(y, tx.lanes)
        else:
            raise TypeError(f"cannot combine {tx} and {ty}: lane counts differ")
        tx, ty = x.dtype, y.dtype
    if tx == ty:
        return x, y
    target = _promote(tx.element, ty.element).with_lanes(tx.lanes)
    return cast(x, target), cast(y, target)


def _promote(tx: DataType, ty: DataType) -> DataType:
    if tx.is_float != ty.is_float:
        return tx if tx.is_float else ty
    if tx.is_bool != ty.is_bool:
        return ty if tx.is_bool else tx
    if tx.bits != ty.bits:
        return tx if tx.bits > ty.bits else ty
    return tx if tx.is_int else ty


def cast(value: Operand, target: str | DataType) -> PrimExpr:
    """``value`` converted to ``target``; a no-op when the dtype already matches."""
    dt = dtype(target)
    x = convert(value)
    if x.dtype == dt:
        return x
    if isinstance(x, IntImm | FloatImm) and not dt.is_vector and not dt.is_handle:
        if dt.is_float:
            return FloatImm(float(x.value), dt)
        if dt.is_bool:
            return IntImm(int(bool(x.value)), dt)
        if isinstance(x, IntImm) or math.isfinite(x.value):
            return IntImm(int(x.value), dt)
    return Cast(dt, x)


def _fold(cls: type[BinaryOp] | type[CmpOp], x: PrimExpr, y: PrimExpr) -> PrimExpr | None:
    if not (isinstance(x, IntImm | FloatImm) and isinstance(y, IntImm | FloatImm)):
        return None
    a, b = x.value, y.value
    is_int = isinstance(x, IntImm) and isinstance(y, IntImm)
    if cls in (Div, Mod, FloorDiv, FloorMod) and b == 0:
        return None
    if cls is Add:
        v: int | float = a + b
    elif cls is Sub:
        v = a - b
    elif cls is Mul:
        v = a * b
    elif cls is Div:
        v = int(a / b) if is_int else a / b
    elif cls is Mod and is_int:
        v = int(math.fmod(a, b))
    elif cls is FloorDiv:
        v = a // b if is_int else math.floor(a / b)
    elif cls is FloorMod and is_int:
        v = a % b
    elif cls is Min:
        v = min(a, b)
    elif cls is Max:
        v = max(a, b)
    elif cls is EQ:
        return IntImm(int(a == b), bool_)
    elif cls is NE:
        return IntImm(int(a != b), bool_)
    elif cls is LT:
        return IntImm(int(a < b), bool_)
    elif cls is LE:
        return IntImm(int(a <= b), bool_)
    elif cls is GT:
        return IntImm(int(a > b), bool_)
    elif cls is GE:
        return IntImm(int(a >= b), bool_)
    else:
        return None
    return const(v, x.dtype)


def _make(cls: type[BinaryOp] | type[CmpOp], a: Operand, b: Operand) -> PrimExpr:
    x, y = _binary_operands(a, b)
    folded = _fold(cls, x, y)
    return folded if folded is not None else cls(x, y)


def add(a: Operand, b: Operand) -> PrimExpr:
    """``a + b``."""
    return _make(Add, a, b)


def sub(a: Operand, b: Operand) -> PrimExpr:
    """``a - b``."""
    return _make(Sub, a, b)


def mul(a: Operand, b: Operand) -> PrimExpr:
    """``a * b``."""
    return _make(Mul, a, b)


def div(a: Operand, b: Operand) -> PrimExpr:
    """``a / b``: true division for floats, truncating division for integers."""
    return _make(Div, a, b)


def truncdiv(a: Operand, b: Operand) -> PrimExpr:
    """Integer division rounding toward zero (C's ``/``)."""
    return _make(Div, a, b)


def truncmod(a: Operand, b: Operand) -> PrimExpr:
    """The remainder of ``truncdiv`` (C's ``%``)."""
    return _make(Mod, a, b)


def floordiv(a: Operand, b: Operand) -> PrimExpr:
    """Division rounding toward negative infinity (Python's ``//``)."""
    return _make(FloorDiv, a, b)


def floormod(a: Operand, b: Operand) -> PrimExpr:
    """The remainder of ``floordiv`` (Python's ``%``)."""
    return _make(FloorMod, a, b)


def min_value(a: Operand, b: Operand) -> PrimExpr:
    """The smaller of ``a`` and ``b``."""
    return _make(Min, a, b)


def max_value(a: Operand, b: Operand) -> PrimExpr:
    """The larger of ``a`` and ``b``."""
    return _make(Max, a, b)


def dtype_min(dtype: DataType | str) -> PrimExpr:
    """The smallest value of ``dtype`` (TVM's ``tir.min_value``): the lowest finite float,
    the most negative integer, 0 unsigned, False.

    Example: ``dtype_min("int8")`` is ``IntImm(-128, int8)``.
    """
    return _limit(dtype, smallest=True)


def dtype_max(dtype: DataType | str) -> PrimExpr:
    """The largest value of ``dtype`` (TVM's ``tir.max_value``). Example: ``dtype_max("uint8")``
    is ``IntImm(255, uint8)``."""
    return _limit(dtype, smallest=False)


def _limit(dtype: DataType | str, smallest: bool) -> PrimExpr:
    import numpy as np

    dt = DataType.parse(dtype) if isinstance(dtype, str) else dtype
    if dt.is_bool:
        return IntImm(0 if smallest else 1, dt)
    if dt.is_float:
        if dt.is_float8:
            import ml_dtypes

            largest = float(ml_dtypes.finfo(numpy_scalar_type(dt)).max)
        elif dt.code == "bfloat":
            largest = 3.3895313892515355e38  # (2 - 2**-7) * 2**127
        else:
            largest = float(np.finfo(np.dtype(f"float{dt.bits}")).max)
        return FloatImm(-largest if smallest else largest, dt)
    if dt.is_uint:
        return IntImm(0 if smallest else 2**dt.bits - 1, dt)
    if dt.is_integer:
        return IntImm(-(2 ** (dt.bits - 1)) if smallest else 2 ** (dt.bits - 1) - 1, dt)
    raise TypeError(f"{dt} has no smallest or largest value")


def neg(a: Operand) -> PrimExpr:
    """``-a``."""
    x = convert(a)
    return sub(convert(0, x.dtype), x)


def eq(a: Operand, b: Operand) -> PrimExpr:
    """``a == b`` as an IR comparison (Python's ``==`` on nodes is identity)."""
    return _make(EQ, a, b)


def ne(a: Operand, b: Operand) -> PrimExpr:
    """``a != b`` as an IR comparison."""
    return _make(NE, a, b)


def lt(a: Operand, b: Operand) -> PrimExpr:
    """``a < b``."""
    return _make(LT, a, b)


def le(a: Operand, b: Operand) -> PrimExpr:
    """``a <= b``."""
    return _make(LE, a, b)


def gt(a: Operand, b: Operand) -> PrimExpr:
    """``a > b``."""
    return _make(GT, a, b)


def ge(a: Operand, b: Operand) -> PrimExpr:
    """``a >= b``."""
    return _make(GE, a, b)


def _as_bool(value: Operand) -> PrimExpr:
    x = convert(value)
    return x if x.dtype.element.is_bool else ne(x, 0)


def logical_and(a: Operand, b: Operand) -> PrimExpr:
    """``a and b``; constant operands fold (``True and c`` is ``c``)."""
    x, y = _as_bool(a), _as_bool(b)
    if isinstance(x, IntImm):
        return y if x.value else x
    if isinstance(y, IntImm):
        return x if y.value else y
    return And(x, y)


def logical_or(a: Operand, b: Operand) -> PrimExpr:
    """``a or b``; constant operands fold."""
    x, y = _as_bool(a), _as_bool(b)
    if isinstance(x, IntImm):
        return x if x.value else y
    if isinstance(y, IntImm):
        return y if y.value else x
    return Or(x, y)


def logical_not(a: Operand) -> PrimExpr:
    """``not a``; a constant folds."""
    x = _as_bool(a)
    if isinstance(x, IntImm):
        return IntImm(int(not x.value), bool_)
    return Not(x)


def select(condition: Operand, true_value: Operand, false_value: Operand) -> PrimExpr:
    """``true_value if condition else false_value``; both sides are evaluated."""
    t, f = _binary_operands(true_value, false_value)
    return Select(_as_bool(condition), t, f)


def if_then_else(condition: Operand, true_value: Operand, false_value: Operand) -> PrimExpr:
    """Like ``select`` but only the chosen side is evaluated (safe for guarded loads)."""
    t, f = _binary_operands(true_value, false_value)
    return _intrinsics.IF_THEN_ELSE.call(_as_bool(condition), t, f)


def call(op: str, *args: Operand, dtype_: str | DataType | None = None) -> PrimExpr:
    """An intrinsic call; math intrinsics take their result dtype from the first argument."""
    values = tuple(convert(a) for a in args)
    if dtype_ is None:
        if not values:
            raise TypeError(f"intrinsic {op!r} needs a result dtype")
        dtype_ = values[0].dtype
    return Call(dtype(dtype_), op, values)


def math_call(op: str, *args: Operand) -> PrimExpr:
    """A math intrinsic; integer arguments are promoted to float32 as TVM does."""
    values = [convert(a) for a in args]
    if op not in ("abs",) and values and not values[0].dtype.is_float:
        values = [cast(v, float32.with_lanes(v.dtype.lanes)) for v in values]
    if len(values) == 2:
        values = list(_unify(values[0], values[1]))
    return Call(values[0].dtype, op, tuple(values))


# The intrinsic table builds on the nodes above; imported last so that both can refer to it.
from tilewright.ir import intrinsics as _intrinsics  # noqa: E402
