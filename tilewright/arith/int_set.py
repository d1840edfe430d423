"""Expressions and variable domains in, symbolic integer intervals out (``eval_set``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tilewright.arith.const_int_bound import NEG_INF, POS_INF
from tilewright.arith.linear_form import same
from tilewright.ir import op
from tilewright.ir.expr import (
    Add,
    BinaryOp,
    Call,
    Cast,
    CmpOp,
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
from tilewright.ir.functor import collect_vars

if TYPE_CHECKING:
    from tilewright.arith.analyzer import Analyzer

Bound = PrimExpr | None


@dataclass(frozen=True)
class IntervalSet:
    """The integers ``min_value <= x <= max_value`` (both inclusive); ``None`` is unbounded.

    Example::

        >>> s = IntervalSet.from_range(Range.from_min_extent(0, 8))
        >>> s.max_value          # IntImm 7
        >>> s.to_range()         # Range(0, 8)
    """

    min_value: Bound
    max_value: Bound

    @staticmethod
    def everything() -> IntervalSet:
        return IntervalSet(None, None)

    @staticmethod
    def single_point(value: PrimExpr | int) -> IntervalSet:
        v = op.convert(value)
        return IntervalSet(v, v)

    @staticmethod
    def interval(lo: PrimExpr | int | None, hi: PrimExpr | int | None) -> IntervalSet:
        """``[lo, hi]`` with inclusive ends; ints are converted."""
        return IntervalSet(
            None if lo is None else op.convert(lo), None if hi is None else op.convert(hi)
        )

    @staticmethod
    def from_range(rng: Range, analyzer: Analyzer | None = None) -> IntervalSet:
        """``[rng.min, rng.min + rng.extent - 1]``."""
        ana = _analyzer(analyzer)
        return IntervalSet(rng.min, ana.simplify(rng.min + rng.extent - 1))

    @property
    def is_everything(self) -> bool:
        return self.min_value is None and self.max_value is None

    @property
    def is_bounded(self) -> bool:
        return self.min_value is not None and self.max_value is not None

    def is_single_point(self, analyzer: Analyzer | None = None) -> bool:
        """True when both ends are provably the same value."""
        if self.min_value is None or self.max_value is None:
            return False
        if same(self.min_value, self.max_value):
            return True
        return _analyzer(analyzer).can_prove_equal(self.min_value, self.max_value)

    def union(self, other: IntervalSet, analyzer: Analyzer | None = None) -> IntervalSet:
        """The smallest interval holding both sets (the convex hull)."""
        ana = _analyzer(analyzer)
        return IntervalSet(
            _combine(self.min_value, other.min_value, op.min_value, ana, keep_none=True),
            _combine(self.max_value, other.max_value, op.max_value, ana, keep_none=True),
        )

    def intersect(self, other: IntervalSet, analyzer: Analyzer | None = None) -> IntervalSet:
        """The values in both sets (an empty result has ``min_value > max_value``)."""
        ana = _analyzer(analyzer)
        return IntervalSet(
            _combine(self.min_value, other.min_value, op.max_value, ana, keep_none=False),
            _combine(self.max_value, other.max_value, op.min_value, ana, keep_none=False),
        )

    def to_range(self, analyzer: Analyzer | None = None) -> Range:
        """``Range(min, max - min + 1)``; ``ValueError`` when a side is unbounded."""
        if self.min_value is None or self.max_value is None:
            raise ValueError(f"cannot make a Range of the unbounded interval {self}")
        ana = _analyzer(analyzer)
        return Range(self.min_value, ana.simplify(self.max_value - self.min_value + 1))

    def __repr__(self) -> str:
        lo = "-inf" if self.min_value is None else _text(self.min_value)
        hi = "+inf" if self.max_value is None else _text(self.max_value)
        return f"IntervalSet[{lo}, {hi}]"


def _text(e: PrimExpr) -> str:
    return str(e.value) if isinstance(e, IntImm) else repr(e)


def _analyzer(analyzer: Analyzer | None) -> Analyzer:
    if analyzer is not None:
        return analyzer
    from tilewright.arith.analyzer import Analyzer

    return Analyzer()


def _combine(a: Bound, b: Bound, fn, ana: Analyzer, keep_none: bool) -> Bound:
    """``fn(a, b)`` simplified; a ``None`` side wins when ``keep_none``, else yields."""
    if a is None or b is None:
        if keep_none:
            return None
        return b if a is None else a
    return ana.simplify(fn(a, b))


def eval_set(
    expr: PrimExpr,
    dom_map: Mapping[Var, Range | IntervalSet],
    analyzer: Analyzer | None = None,
) -> IntervalSet:
    """The interval ``expr`` covers when each mapped variable ranges over its domain.

    Ends are symbolic expressions in the unmapped variables, which stay as they are.

    Args:
        expr: an integer expression.
        dom_map: the domain of each variable to relax, a Range or an IntervalSet.
        analyzer: simplifies the ends (a fresh one when omitted).

    Example::

        >>> eval_set(i_0 * 128 + i_1, {i_1: Range.from_min_extent(0, 128)})
        IntervalSet[i_0 * 128, i_0 * 128 + 127]
    """
    ana = _analyzer(analyzer)
    sets = {
        v: IntervalSet.from_range(d, ana) if isinstance(d, Range) else d for v, d in dom_map.items()
    }
    return _SetEvaluator(ana, sets)(expr)


class _SetEvaluator:
    def __init__(self, ana: Analyzer, sets: dict[Var, IntervalSet]) -> None:
        self.ana = ana
        self.sets = sets

    def __call__(self, expr: PrimExpr) -> IntervalSet:
        if isinstance(expr, Var):
            return self.sets.get(expr) or IntervalSet.single_point(expr)
        if isinstance(expr, IntImm) or not any(v in self.sets for v in collect_vars(expr)):
            return IntervalSet.single_point(expr)
        method = getattr(self, f"_{type(expr).__name__}", None)
        if method is None:
            if isinstance(expr, CmpOp | Not):
                return IntervalSet.interval(IntImm(0, expr.dtype), IntImm(1, expr.dtype))
            return IntervalSet.everything()
        result = method(expr)
        return IntervalSet(self._simple(result.min_value), self._simple(result.max_value))

    def _simple(self, e: Bound) -> Bound:
        return None if e is None else self.ana.simplify(e)

    def _point(self, s: IntervalSet) -> PrimExpr | None:
        """The one value of ``s`` when it is provably a single point."""
        return s.min_value if s.is_single_point(self.ana) else None

    def _sign(self, e: PrimExpr) -> int | None:
        """+1 / -1 / 0 when ``e`` is provably positive / negative / zero."""
        b = self.ana.const_int_bound(e)
        if b.min_value > 0:
            return 1
        if b.max_value < 0:
            return -1
        if b.min_value == b.max_value == 0:
            return 0
        return None

    def _Add(self, e: Add) -> IntervalSet:
        a, b = self(e.a), self(e.b)
        return IntervalSet(
            _lift(op.add, a.min_value, b.min_value), _lift(op.add, a.max_value, b.max_value)
        )

    def _Sub(self, e: Sub) -> IntervalSet:
        a, b = self(e.a), self(e.b)
        return IntervalSet(
            _lift(op.sub, a.min_value, b.max_value), _lift(op.sub, a.max_value, b.min_value)
        )

    def _Mul(self, e: Mul) -> IntervalSet:
        a, b = self(e.a), self(e.b)
        point = self._point(b)
        if point is not None:
            return self._scale(a, point, op.mul)
        point = self._point(a)
        if point is not None:
            return self._scale(b, point, op.mul)
        return self._corners(a, b, op.mul)

    def _scale(self, s: IntervalSet, factor: PrimExpr, fn) -> IntervalSet:
        sign = self._sign(factor)
        if sign == 0:
            return IntervalSet.single_point(IntImm(0, factor.dtype))
        if sign is None:
            return IntervalSet.everything()
        lo, hi = _lift(fn, s.min_value, factor), _lift(fn, s.max_value, factor)
        return IntervalSet(lo, hi) if sign > 0 else IntervalSet(hi, lo)

    def _corners(self, a: IntervalSet, b: IntervalSet, fn) -> IntervalSet:
        ends = (a.min_value, a.max_value, b.min_value, b.max_value)
        consts = [x for x in ends if isinstance(x, IntImm)]
        if len(consts) != len(ends):
            return IntervalSet.everything()
        values = [fn(x, y).value for x in consts[:2] for y in consts[2:]]
        dtype = consts[0].dtype
        return IntervalSet.interval(IntImm(min(values), dtype), IntImm(max(values), dtype))

    def _divide(self, e: BinaryOp, fn) -> IntervalSet:
        a, b = self(e.a), self(e.b)
        c = self._point(b)
        if c is not None and self._sign(c) == 1:
            return self._scale(a, c, fn)
        return IntervalSet.everything()

    def _FloorDiv(self, e: FloorDiv) -> IntervalSet:
        return self._divide(e, op.floordiv)

    def _Div(self, e: Div) -> IntervalSet:
        return self._divide(e, op.truncdiv)

    def _FloorMod(self, e: FloorMod) -> IntervalSet:
        return self._remainder(e, op.floordiv, op.floormod, non_negative=True)

    def _Mod(self, e: Mod) -> IntervalSet:
        a = self(e.a)
        non_negative = a.min_value is not None and self.ana.can_prove(op.ge(a.min_value, 0))
        return self._remainder(e, op.truncdiv, op.truncmod, non_negative)

    def _remainder(self, e: BinaryOp, div, mod, non_negative: bool) -> IntervalSet:
        a, b = self(e.a), self(e.b)
        c = self._point(b)
        if c is None or self._sign(c) != 1:
            return IntervalSet.everything()
        if a.is_bounded and non_negative:
            same_block = self.ana.can_prove_equal(div(a.min_value, c), div(a.max_value, c))
            if same_block:
                return IntervalSet(mod(a.min_value, c), mod(a.max_value, c))
        if not non_negative:
            return IntervalSet(op.sub(1, c), op.sub(c, 1))
        return IntervalSet(IntImm(0, e.dtype), op.sub(c, 1))

    def _Min(self, e: Min) -> IntervalSet:
        a, b = self(e.a), self(e.b)
        return IntervalSet(
            _lift(op.min_value, a.min_value, b.min_value),
            _either(op.min_value, a.max_value, b.max_value),
        )

    def _Max(self, e: Max) -> IntervalSet:
        a, b = self(e.a), self(e.b)
        return IntervalSet(
            _either(op.max_value, a.min_value, b.min_value),
            _lift(op.max_value, a.max_value, b.max_value),
        )

    def _Select(self, e: Select) -> IntervalSet:
        return self(e.true_value).union(self(e.false_value), self.ana)

    def _Cast(self, e: Cast) -> IntervalSet:
        src, dst = e.value.dtype, e.dtype
        widening = src.is_int and dst.is_int and dst.bits >= src.bits
        if not widening:
            return IntervalSet.everything()
        v = self(e.value)
        return IntervalSet(
            _lift(lambda x: op.cast(x, dst), v.min_value),
            _lift(lambda x: op.cast(x, dst), v.max_value),
        )

    def _Call(self, e: Call) -> IntervalSet:
        """``a ^ b`` and ``a | b`` with ``0 <= b < 2**m`` change only the low ``m`` bits of
        ``a`` (in two's complement, whatever its sign): the result stays in ``a``'s aligned
        blocks of ``2**m``. ``a & b`` with ``b >= 0`` lies in ``[0, b]``. (XOR swizzles of
        shared-memory tiles: a tile's region stays the tile.)"""
        name = e.op.removeprefix("tir.")
        if name not in ("bitwise_xor", "bitwise_or", "bitwise_and") or len(e.args) != 2:
            return IntervalSet.everything()
        for big, small in (e.args, e.args[::-1]):
            span = self._constant_span(small)
            if span is None or span[0] < 0:
                continue
            if name == "bitwise_and":
                return IntervalSet.interval(0, span[1])
            block = 1 << span[1].bit_length()
            a = self(big)
            low = None if a.min_value is None else _aligned(a.min_value, block, 0)
            high = None if a.max_value is None else _aligned(a.max_value, block, block - 1)
            return IntervalSet(low, high)
        return IntervalSet.everything()

    def _constant_span(self, e: PrimExpr) -> tuple[int, int] | None:
        s = self(e)
        if isinstance(s.min_value, IntImm) and isinstance(s.max_value, IntImm):
            return s.min_value.value, s.max_value.value
        bound = self.ana.const_int_bound(e)
        if bound.min_value == NEG_INF or bound.max_value == POS_INF:
            return None
        return bound.min_value, bound.max_value

    def _Let(self, e: Let) -> IntervalSet:
        saved = self.sets.get(e.var)
        self.sets[e.var] = self(e.value)
        try:
            return self(e.body)
        finally:
            if saved is None:
                del self.sets[e.var]
            else:
                self.sets[e.var] = saved


def _aligned(x: PrimExpr, block: int, offset: int) -> PrimExpr:
    """The start of ``x``'s aligned block of ``block`` integers, plus ``offset``."""
    return op.add(op.mul(op.floordiv(x, block), block), offset)


def _lift(fn, *ends: Bound) -> Bound:
    """``fn`` of the ends, or None (unbounded) when any end is."""
    if any(x is None for x in ends):
        return None
    return fn(*ends)


def _either(fn, a: Bound, b: Bound) -> Bound:
    """``fn(a, b)``; an unbounded side yields to the other (min of +inf and b is b)."""
    if a is None:
        return b
    if b is None:
        return a
    return fn(a, b)
