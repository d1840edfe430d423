"""Expression nodes: variables, constants, arithmetic, comparisons, loads, vectors, calls."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, TypeAlias

from tilewright.ir.dtype import DataType, bool_, handle
from tilewright.ir.node import Node, node

if TYPE_CHECKING:
    from tilewright.ir.buffer import Buffer

Operand: TypeAlias = "PrimExpr | int | float | bool"


class PrimExpr(Node):
    """Base of scalar and vector expressions; Python operators build IR (``x * 2 + 1``).

    ``==`` and ``!=`` keep Python's identity meaning so that nodes can key dicts; use
    ``tilewright.ir.op.eq`` / ``ne`` (or ``T.EQ``) for the IR comparison. ``&``, ``|`` and
    ``~`` build ``And``, ``Or`` and ``Not``; Python's ``and``, ``or``, ``not``, ``if`` and
    ``bool()`` need a truth value, which only constants have: on any other expression they
    raise ``TypeError``.
    """

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def dtype(self) -> DataType:  # a field or a property of each concrete node
            ...

    def __add__(self, other: Operand) -> PrimExpr:
        return _op.add(self, other)

    def __radd__(self, other: Operand) -> PrimExpr:
        return _op.add(other, self)

    def __sub__(self, other: Operand) -> PrimExpr:
        return _op.sub(self, other)

    def __rsub__(self, other: Operand) -> PrimExpr:
        return _op.sub(other, self)

    def __mul__(self, other: Operand) -> PrimExpr:
        return _op.mul(self, other)

    def __rmul__(self, other: Operand) -> PrimExpr:
        return _op.mul(other, self)

    def __truediv__(self, other: Operand) -> PrimExpr:
        return _op.div(self, other)

    def __rtruediv__(self, other: Operand) -> PrimExpr:
        return _op.div(other, self)

    def __floordiv__(self, other: Operand) -> PrimExpr:
        return _op.floordiv(self, other)

    def __rfloordiv__(self, other: Operand) -> PrimExpr:
        return _op.floordiv(other, self)

    def __mod__(self, other: Operand) -> PrimExpr:
        return _op.floormod(self, other)

    def __rmod__(self, other: Operand) -> PrimExpr:
        return _op.floormod(other, self)

    def __neg__(self) -> PrimExpr:
        return _op.neg(self)

    def __lt__(self, other: Operand) -> PrimExpr:
        return _op.lt(self, other)

    def __le__(self, other: Operand) -> PrimExpr:
        return _op.le(self, other)

    def __gt__(self, other: Operand) -> PrimExpr:
        return _op.gt(self, other)

    def __ge__(self, other: Operand) -> PrimExpr:
        return _op.ge(self, other)

    def __and__(self, other: Operand) -> PrimExpr:
        return _op.logical_and(self, other)

    def __rand__(self, other: Operand) -> PrimExpr:
        return _op.logical_and(other, self)

    def __or__(self, other: Operand) -> PrimExpr:
        return _op.logical_or(self, other)

    def __ror__(self, other: Operand) -> PrimExpr:
        return _op.logical_or(other, self)

    def __invert__(self) -> PrimExpr:
        return _op.logical_not(self)

    # ``^ << >>`` are TVM's integer bit operations (``&`` and ``|`` above stay logical).
    def __xor__(self, other: Operand) -> PrimExpr:
        return _bit("bitwise_xor", self, other)

    def __rxor__(self, other: Operand) -> PrimExpr:
        return _bit("bitwise_xor", other, self)

    def __lshift__(self, other: Operand) -> PrimExpr:
        return _bit("shift_left", self, other)

    def __rlshift__(self, other: Operand) -> PrimExpr:
        return _bit("shift_left", other, self)

    def __rshift__(self, other: Operand) -> PrimExpr:
        return _bit("shift_right", self, other)

    def __rrshift__(self, other: Operand) -> PrimExpr:
        return _bit("shift_right", other, self)

    def __bool__(self) -> bool:
        # Python's default (every object is true) would make `if x > 5:` take the branch
        # whatever x is; IntImm and FloatImm override this with their value.
        raise TypeError(_unknown_truth_value(self))

    @property
    def ty(self) -> PrimType:
        """The expression's type as TVM's ``PrimExpr.ty`` gives it: ``PrimType(dtype)``.

        Example::

            >>> (Var("x", int64) + 1).ty.dtype
            DataType('int64')
        """
        return PrimType(self.dtype)


@dataclasses.dataclass(frozen=True)
class PrimType:
    """The type of a scalar or vector expression: its dtype (TVM's ``tvm.ir.PrimType``).
    Not an IR node of a program: a value, equal to any ``PrimType`` of the same dtype.

    Example::

        >>> PrimType("float32").dtype
        DataType('float32')
    """

    dtype: DataType

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, DataType):
            object.__setattr__(self, "dtype", DataType.parse(self.dtype))


@node
class Var(PrimExpr):
    """A variable; identity is the object, ``name`` is only a hint for printing."""

    name: str
    dtype: DataType


@node
class IntImm(PrimExpr):
    """An integer (or bool) constant.

    Built as ``IntImm(value, dtype)`` or, as TVM's ``tir.IntImm``, ``IntImm(dtype, value)``
    with the dtype (a string or ``DataType``) first; a string dtype is parsed.

    Example::

        >>> IntImm("int64", 10).value, IntImm("int64", 10).dtype
        (10, DataType('int64'))
    """

    value: int
    dtype: DataType

    def __post_init__(self) -> None:
        _dtype_first(self)

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __bool__(self) -> bool:
        return self.value != 0


@node
class FloatImm(PrimExpr):
    """A floating-point constant; ``FloatImm(value, dtype)`` or, as TVM's ``tir.FloatImm``,
    ``FloatImm(dtype, value)`` (``FloatImm("float32", 0.5)``)."""

    value: float
    dtype: DataType

    def __post_init__(self) -> None:
        _dtype_first(self)

    def __float__(self) -> float:
        return self.value

    def __bool__(self) -> bool:
        return self.value != 0


def _dtype_first(imm: IntImm | FloatImm) -> None:
    """Accept TVM's argument order ``(dtype, value)`` and a dtype given as a string."""
    value, dt = imm.value, imm.dtype
    if isinstance(dt, DataType) and not isinstance(value, str | DataType):
        return  # the common case: (value, DataType)
    if isinstance(value, str | DataType) and not isinstance(dt, str | DataType):
        value, dt = dt, value
    if isinstance(value, str | DataType):
        raise TypeError(f"{type(imm).__name__} needs a number and a dtype, got {value!r}, {dt!r}")
    object.__setattr__(imm, "value", value)
    object.__setattr__(imm, "dtype", DataType.parse(dt))


@node
class StringImm(PrimExpr):
    """A string constant (intrinsic arguments, messages)."""

    value: str

    @property
    def dtype(self) -> DataType:
        return handle


@node
class Cast(PrimExpr):
    """Convert ``value`` to ``dtype``."""

    dtype: DataType
    value: PrimExpr


@node
class BinaryOp(PrimExpr):
    """Base of the two-operand arithmetic nodes; the result has the operands' dtype."""

    a: PrimExpr
    b: PrimExpr

    @property
    def dtype(self) -> DataType:
        return self.a.dtype


@node
class Add(BinaryOp):
    """``a + b``."""


@node
class Sub(BinaryOp):
    """``a - b``."""


@node
class Mul(BinaryOp):
    """``a * b``."""


@node
class Div(BinaryOp):
    """Division; truncating for integers (C semantics)."""


@node
class Mod(BinaryOp):
    """Remainder of truncating division (C's ``%``)."""


@node
class FloorDiv(BinaryOp):
    """Division rounding toward negative infinity (Python's ``//``)."""


@node
class FloorMod(BinaryOp):
    """Remainder of floor division; has the divisor's sign (Python's ``%``)."""


@node
class Min(BinaryOp):
    """The smaller of ``a`` and ``b``."""


@node
class Max(BinaryOp):
    """The larger of ``a`` and ``b``."""


@node
class CmpOp(PrimExpr):
    """Base of comparisons; the result is bool with the operands' lanes."""

    a: PrimExpr
    b: PrimExpr

    @property
    def dtype(self) -> DataType:
        return bool_.with_lanes(self.a.dtype.lanes)


@node
class EQ(CmpOp):
    """``a == b`` (bool)."""


@node
class NE(CmpOp):
    """``a != b`` (bool)."""


@node
class LT(CmpOp):
    """``a < b`` (bool)."""


@node
class LE(CmpOp):
    """``a <= b`` (bool)."""


@node
class GT(CmpOp):
    """``a > b`` (bool)."""


@node
class GE(CmpOp):
    """``a >= b`` (bool)."""


@node
class And(CmpOp):
    """Logical and of two bool expressions."""


@node
class Or(CmpOp):
    """Logical or of two bool expressions."""


@node
class Not(PrimExpr):
    """Logical negation of a bool expression."""

    a: PrimExpr

    @property
    def dtype(self) -> DataType:
        return self.a.dtype


@node
class Select(PrimExpr):
    """``true_value if condition else false_value``; both sides are evaluated."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    @property
    def dtype(self) -> DataType:
        return self.true_value.dtype


@node
class BufferLoad(PrimExpr):
    """Read ``buffer[indices]``; a vector index (a ``Ramp``) loads several lanes."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]

    @property
    def dtype(self) -> DataType:
        lanes = self.indices[-1].dtype.lanes if self.indices else 1
        return self.buffer.dtype.with_lanes(self.buffer.dtype.lanes * lanes)


@node
class Ramp(PrimExpr):
    """The vector ``[base, base + stride, ..., base + (lanes - 1) * stride]``."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int

    @property
    def dtype(self) -> DataType:
        return self.base.dtype.with_lanes(self.lanes)


@node
class Broadcast(PrimExpr):
    """``value`` repeated in ``lanes`` lanes."""

    value: PrimExpr
    lanes: int

    @property
    def dtype(self) -> DataType:
        return self.value.dtype.with_lanes(self.lanes)


@node
class Let(PrimExpr):
    """``body`` with ``var`` bound to ``value``."""

    var: Var
    value: PrimExpr
    body: PrimExpr

    @property
    def dtype(self) -> DataType:
        return self.body.dtype


@node
class Shuffle(PrimExpr):
    """The lanes ``indices`` pick from the concatenation of ``vectors`` (TVM's ``Shuffle``)."""

    vectors: tuple[PrimExpr, ...]
    indices: tuple[PrimExpr, ...]

    @property
    def dtype(self) -> DataType:
        return self.vectors[0].dtype.with_lanes(len(self.indices))


@node
class Call(PrimExpr):
    """An intrinsic call such as ``exp`` or ``if_then_else``; ``op`` names the intrinsic."""

    dtype: DataType
    op: str
    args: tuple[PrimExpr, ...]


@node
class Range(Node):
    """The half-open interval ``[min, min + extent)``."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_min_extent(min_value: PrimExpr | int, extent: PrimExpr | int) -> Range:
        return Range(_op.convert(min_value), _op.convert(extent))


def _unknown_truth_value(expr: PrimExpr) -> str:
    text = repr(expr)
    if len(text) > 80:
        text = text[:77] + "..."
    return (
        f"the truth value of the symbolic expression `{text}` is unknown (Python's if, and, or,"
        " not need a constant): decide it for every value of its variables with"
        " tilewright.arith.Analyzer().can_prove(...), choose at run time with"
        " T.if_then_else(cond, a, b), combine conditions with &, | and ~, and test an optional"
        " expression with `is None`"
    )


# op builds nodes of this module; imported last so that both modules can refer to each other.
from tilewright.ir import op as _op  # noqa: E402


def _bit(name: str, a: Operand, b: Operand) -> PrimExpr:
    """The intrinsic call ``name(a, b)``; a Python int takes the other operand's dtype."""
    from tilewright.ir.intrinsics import lookup

    x = (
        a
        if isinstance(a, PrimExpr)
        else _op.convert(a, b.dtype if isinstance(b, PrimExpr) else None)
    )
    y = b if isinstance(b, PrimExpr) else _op.convert(b, x.dtype)
    return lookup(name).call(x, y)
