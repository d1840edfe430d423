"""Integer expressions and variable bounds in, a constant interval out: interval arithmetic."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from tilewright.ir.dtype import DataType
from tilewright.ir.expr import (
    Add,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    PrimExpr,
    Range,
    Select,
    Sub,
    Var,
)

# Sentinels for an unbounded side: the int64 extremes, so that plain comparisons keep working
# (``bound.max_value < 128``) and int64 values need no separate "infinite" flag.
POS_INF = 2**63 - 1
NEG_INF = -(2**63)

Bounds = tuple[int, int]


@dataclass(frozen=True)
class ConstIntBound:
    """The closed interval ``[min_value, max_value]`` that an integer expression stays in.

    An unbounded side is ``NEG_INF`` / ``POS_INF`` (the int64 extremes).

    Example::

        >>> const_int_bound(i * 2 + 1, {i: Range.from_min_extent(0, 8)})
        ConstIntBound(min_value=1, max_value=15)
    """

    min_value: int
    max_value: int

    POS_INF: ClassVar[int] = POS_INF
    NEG_INF: ClassVar[int] = NEG_INF

    @property
    def is_const(self) -> bool:
        return self.min_value == self.max_value

    @property
    def has_min(self) -> bool:
        return self.min_value != NEG_INF

    @property
    def has_max(self) -> bool:
        return self.max_value != POS_INF


def dtype_bounds(dt: DataType) -> Bounds:
    """The values representable in ``dt`` (everything for non-integers)."""
    if dt.is_bool:
        return (0, 1)
    if dt.is_int:
        return (max(-(2 ** (dt.bits - 1)), NEG_INF), min(2 ** (dt.bits - 1) - 1, POS_INF))
    if dt.is_uint:
        return (0, min(2**dt.bits - 1, POS_INF))
    return (NEG_INF, POS_INF)


def _clip(lo: int | float, hi: int | float, dt: DataType) -> Bounds:
    dlo, dhi = dtype_bounds(dt)
    lo_i = dlo if lo <= dlo else int(lo)
    hi_i = dhi if hi >= dhi else int(hi)
    if lo_i > hi_i:  # an empty or overflowing result: give up rather than claim too much
        return (dlo, dhi)
    return (lo_i, hi_i)


_PINF = float("inf")
_NINF = float("-inf")


def _inf(v: int) -> float | int:
    if v <= NEG_INF:
        return float("-inf")
    if v >= POS_INF:
        return float("inf")
    return v


def _mul(x: float | int, y: float | int) -> float | int:
    if x == 0 or y == 0:
        return 0
    return x * y


def _corners(a: Bounds, b: Bounds, fn) -> tuple[float | int, float | int]:
    values = [fn(_inf(p), _inf(q)) for p in a for q in b]
    return min(values), max(values)


def _floor_div(x: float | int, y: float | int) -> float | int:
    x_inf, y_inf = x in (_PINF, _NINF), y in (_PINF, _NINF)
    if y_inf:
        if x_inf:
            return x * y
        return 0 if (x >= 0) == (y > 0) or x == 0 else -1
    if x_inf:
        return x if y > 0 else -x
    return x // y


def _trunc_div(x: float | int, y: float | int) -> float | int:
    q = _floor_div(abs(x), abs(y))
    return q if (x >= 0) == (y > 0) else -q


class BoundEvaluator:
    """Computes ``ConstIntBound`` intervals of expressions given intervals of variables."""

    def __init__(self, var_bounds: Mapping[Var, Bounds]) -> None:
        self.var_bounds = var_bounds
        self.lets: dict[Var, Bounds] = {}

    def __call__(self, expr: PrimExpr) -> Bounds:
        if isinstance(expr, IntImm):
            return (expr.value, expr.value)
        dt = expr.dtype
        if not (dt.is_int or dt.is_uint or dt.is_bool) or dt.lanes != 1:
            return dtype_bounds(dt)
        method = getattr(self, f"_{type(expr).__name__}", None)
        if method is None:
            return dtype_bounds(dt)
        lo, hi = method(expr)
        return _clip(lo, hi, dt)

    def _Var(self, v: Var) -> tuple[float | int, float | int]:
        if v in self.lets:
            return self.lets[v]
        return self.var_bounds.get(v, dtype_bounds(v.dtype))

    def _Add(self, e: Add):
        (a0, a1), (b0, b1) = self(e.a), self(e.b)
        return _inf(a0) + _inf(b0), _inf(a1) + _inf(b1)

    def _Sub(self, e: Sub):
        (a0, a1), (b0, b1) = self(e.a), self(e.b)
        return _inf(a0) - _inf(b1), _inf(a1) - _inf(b0)

    def _Mul(self, e: Mul):
        return _corners(self(e.a), self(e.b), _mul)

    def _divide(self, e, fn):
        a, b = self(e.a), self(e.b)
        if b[0] <= 0 <= b[1]:
            if b[0] == b[1] == 0:
                return dtype_bounds(e.dtype)
            # Only a divisor of one sign keeps the quotient monotone; drop the zero end.
            if b[0] == 0:
                b = (1, b[1])
            elif b[1] == 0:
                b = (b[0], -1)
            else:
                return dtype_bounds(e.dtype)
        return _corners(a, b, fn)

    def _FloorDiv(self, e: FloorDiv):
        return self._divide(e, _floor_div)

    def _Div(self, e: Div):
        return self._divide(e, _trunc_div)

    def _FloorMod(self, e: FloorMod):
        a, b = self(e.a), self(e.b)
        if b[0] > 0:
            if b[0] == b[1] and a[0] > NEG_INF and a[1] < POS_INF:
                c = b[0]
                if a[0] // c == a[1] // c:
                    return a[0] % c, a[1] % c
            hi = b[1] - 1
            if a[0] >= 0:
                hi = min(hi, a[1])
            return 0, hi
        if b[1] < 0:
            return b[0] + 1, 0
        return dtype_bounds(e.dtype)

    def _Mod(self, e: Mod):
        a, b = self(e.a), self(e.b)
        if b[0] == b[1] == 0:
            return dtype_bounds(e.dtype)
        m = max(abs(_inf(b[0])), abs(_inf(b[1]))) - 1
        if a[0] >= 0:
            return 0, min(m, _inf(a[1]))
        if a[1] <= 0:
            return max(-m, _inf(a[0])), 0
        return -m, m

    def _Min(self, e: Min):
        (a0, a1), (b0, b1) = self(e.a), self(e.b)
        return min(a0, b0), min(a1, b1)

    def _Max(self, e: Max):
        (a0, a1), (b0, b1) = self(e.a), self(e.b)
        return max(a0, b0), max(a1, b1)

    def _Select(self, e: Select):
        (a0, a1), (b0, b1) = self(e.true_value), self(e.false_value)
        return min(a0, b0), max(a1, b1)

    def _Cast(self, e: Cast):
        if not (e.value.dtype.is_int or e.value.dtype.is_uint or e.value.dtype.is_bool):
            return dtype_bounds(e.dtype)
        lo, hi = self(e.value)
        dlo, dhi = dtype_bounds(e.dtype)
        if lo < dlo or hi > dhi:  # the cast wraps; nothing is known
            return dlo, dhi
        return lo, hi

    def _Let(self, e: Let):
        saved = self.lets.get(e.var)
        self.lets[e.var] = self(e.value)
        try:
            return self(e.body)
        finally:
            if saved is None:
                del self.lets[e.var]
            else:
                self.lets[e.var] = saved

    def _compare(self, e):
        return 0, 1

    _EQ = _NE = _LT = _LE = _GT = _GE = _And = _Or = _compare

    def _Not(self, e: Not):
        return 0, 1


def range_bounds(rng: Range, var_bounds: Mapping[Var, Bounds]) -> Bounds:
    """The constant interval of ``[rng.min, rng.min + rng.extent)`` (inclusive ends)."""
    evaluate = BoundEvaluator(var_bounds)
    lo = evaluate(rng.min)[0]
    hi = evaluate(rng.min + rng.extent - 1)[1] if rng.extent.dtype.lanes == 1 else POS_INF
    if isinstance(rng.min, IntImm) and isinstance(rng.extent, IntImm):
        return (rng.min.value, rng.min.value + rng.extent.value - 1)
    return (lo, hi)


def const_int_bound(expr: PrimExpr, bounds: Mapping[Var, Range] | None = None) -> ConstIntBound:
    """The constant interval that integer ``expr`` stays in when each var lies in its range.

    Args:
        expr: an integer expression.
        bounds: the range of each variable; unmapped variables take their dtype's range.

    Example::

        >>> const_int_bound(i // 8, {i: Range.from_min_extent(0, 64)})
        ConstIntBound(min_value=0, max_value=7)
    """
    from tilewright.arith.analyzer import Analyzer

    analyzer = Analyzer()
    for var, rng in (bounds or {}).items():
        analyzer.bind(var, rng)
    return analyzer.const_int_bound(expr)
