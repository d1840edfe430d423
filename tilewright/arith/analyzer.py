"""Variable domains, values and assumptions in; simplified expressions, bounds and proofs out."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from tilewright.arith.const_int_bound import (
    NEG_INF,
    POS_INF,
    BoundEvaluator,
    Bounds,
    ConstIntBound,
    range_bounds,
)
from tilewright.arith.int_set import IntervalSet, eval_set
from tilewright.arith.linear_form import Key, expr_key, same
from tilewright.arith.rewrite import Rewriter
from tilewright.ir import op
from tilewright.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    And,
    CmpOp,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Range,
    Var,
)
from tilewright.ir.functor import collect_vars
from tilewright.ir.node import Node

_FLIP = {LT: GT, LE: GE, GT: LT, GE: LE, EQ: EQ, NE: NE}
_NEGATE = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}


class Analyzer:
    """Integer analysis under bound variables and assumptions.

    ``bind`` gives a variable a domain (a ``Range``) or a value (an expression that replaces
    it); ``constraint_scope`` assumes a condition inside a ``with`` block. Bounds of unbounded
    sides are ``NEG_INF`` / ``POS_INF`` (the int64 extremes).

    Example::

        >>> ana = Analyzer()
        >>> ana.bind(i, Range.from_min_extent(0, 128))
        >>> ana.simplify((i_0 * 128 + i) // 128)     # i_0
        >>> ana.can_prove(i < 128)
        True
    """

    def __init__(self) -> None:
        self._bounds: dict[Var, Bounds] = {}
        self._ranges: dict[Var, Range] = {}
        self._values: dict[Var, PrimExpr] = {}
        self._facts: set[Key] = set()
        self._symbolic_depth = 0
        self._rewriter = Rewriter(self)

    # -- binding ------------------------------------------------------------------------------

    def bind(self, var: Var, value: Range | PrimExpr | int) -> None:
        """Give ``var`` the domain ``value`` (a Range) or the value ``value`` (an expression).

        Example::

            >>> ana.bind(i, Range.from_min_extent(0, 16))   # 0 <= i < 16
            >>> ana.bind(j, i * 2)                          # j is replaced by i * 2
        """
        if not isinstance(var, Var):
            raise TypeError(f"Analyzer.bind expects a Var to bind, got {type(var).__name__}")
        if not isinstance(value, Range | PrimExpr | int):
            raise TypeError(
                f"Analyzer.bind({var.name}, ...) expects a Range or an expression, "
                f"got {type(value).__name__}"
            )
        if isinstance(value, Range):
            rng = Range(self.simplify(value.min), self.simplify(value.extent))
            self._ranges[var] = rng
            self._values.pop(var, None)
            self._bounds[var] = range_bounds(rng, self._bounds)
            return
        expr = self.simplify(op.convert(value, var.dtype))
        self._values[var] = expr
        self._bounds[var] = self._bound(expr)

    def _bind_bounds(self, var: Var, bounds: Bounds) -> None:
        """Give ``var`` constant bounds only (a let-bound name that stays in the output)."""
        self._values.pop(var, None)
        self._ranges.pop(var, None)
        self._bounds[var] = bounds

    @contextmanager
    def _scope(self) -> Iterator[None]:
        """Restore bounds, ranges, values and facts on exit."""
        saved = (dict(self._bounds), dict(self._ranges), dict(self._values), set(self._facts))
        try:
            yield
        finally:
            self._bounds, self._ranges, self._values, self._facts = saved

    @contextmanager
    def constraint_scope(self, cond: PrimExpr) -> Iterator[None]:
        """Assume ``cond`` holds inside the ``with`` block.

        Example::

            >>> with ana.constraint_scope(i < 10):
            ...     ana.can_prove(i < 20)
            True
        """
        with self.assume(self.simplify(op.convert(cond))):
            yield

    @contextmanager
    def assume(self, cond: PrimExpr) -> Iterator[None]:
        """Like ``constraint_scope`` for a condition that is already simplified."""
        with self._scope():
            self._assume(cond)
            yield

    def _assume(self, cond: PrimExpr) -> None:
        if cond.dtype.lanes != 1:
            return
        if isinstance(cond, And):
            self._assume(cond.a)
            self._assume(cond.b)
            return
        if isinstance(cond, Not):
            inner = cond.a
            if isinstance(inner, Or):
                self._assume(op.logical_not(inner.a))
                self._assume(op.logical_not(inner.b))
                return
            if isinstance(inner, CmpOp) and type(inner) in _NEGATE and inner.a.dtype.is_integer:
                self._assume(_NEGATE[type(inner)](inner.a, inner.b))
                return
        self._facts.add(expr_key(cond))
        if isinstance(cond, CmpOp) and type(cond) in _FLIP and cond.a.dtype.is_integer:
            a, b = cond.a, cond.b
            if isinstance(a, Var):
                self._refine(a, type(cond), self._bound(b))
            if isinstance(b, Var):
                self._refine(b, _FLIP[type(cond)], self._bound(a))

    def _refine(self, var: Var, cls: type, other: Bounds) -> None:
        lo, hi = self._bound(var)
        if cls is LT:
            hi = min(hi, other[1] - 1)
        elif cls is LE:
            hi = min(hi, other[1])
        elif cls is GT:
            lo = max(lo, other[0] + 1)
        elif cls is GE:
            lo = max(lo, other[0])
        elif cls is EQ:
            lo, hi = max(lo, other[0]), min(hi, other[1])
        if lo <= hi:  # an empty interval means unreachable code; keep what we knew
            self._bounds[var] = (lo, hi)

    # -- queries ------------------------------------------------------------------------------

    def simplify(self, expr: PrimExpr | int) -> PrimExpr:
        """``expr`` rewritten into a simpler, equal form; the same object if already simple.

        Example::

            >>> ana.simplify(x * 4 + x * 4)   # x * 8
        """
        result = _as_expr(expr, "simplify")
        for _ in range(3):
            new = self._rewriter(result)
            if new is result:
                break
            result = new
        return result

    # TVM's Analyzer spells its two simplifiers separately; here one simplifier does both.
    rewrite_simplify = simplify
    canonical_simplify = simplify

    def _bound(self, expr: PrimExpr) -> Bounds:
        return BoundEvaluator(self._bounds)(expr)

    def _diff_bound(self, expr: PrimExpr) -> Bounds:
        """Bounds of ``expr``, also relaxing variables whose domains are symbolic."""
        lo, hi = self._bound(expr)
        if self._symbolic_depth > 0 or not self._ranges:
            return lo, hi
        symbolic = {
            v: r
            for v in collect_vars(expr)
            if (r := self._ranges.get(v)) is not None
            and not (isinstance(r.min, IntImm) and isinstance(r.extent, IntImm))
        }
        if not symbolic:
            return lo, hi
        self._symbolic_depth += 1
        try:
            relaxed = eval_set(expr, symbolic, self)
            if relaxed.min_value is not None:
                lo = max(lo, self._bound(self.simplify(relaxed.min_value))[0])
            if relaxed.max_value is not None:
                hi = min(hi, self._bound(self.simplify(relaxed.max_value))[1])
        finally:
            self._symbolic_depth -= 1
        return lo, hi

    def const_int_bound(self, expr: PrimExpr | int) -> ConstIntBound:
        """The constant interval that ``expr`` stays in (``NEG_INF``/``POS_INF`` if unbounded).

        Example::

            >>> ana.const_int_bound(i // 8)   # i in [0, 16): ConstIntBound(0, 1)
        """
        e = _as_expr(expr, "const_int_bound")
        lo, hi = self._diff_bound(e)
        simple = self.simplify(e)
        if simple is not e:
            lo2, hi2 = self._diff_bound(simple)
            lo, hi = max(lo, lo2), min(hi, hi2)
        return ConstIntBound(lo, hi)

    def can_prove(self, cond: PrimExpr | bool) -> bool:
        """True when ``cond`` holds for every value of the variables in their domains.

        Example::

            >>> ana.can_prove(i * 2 < 256)
            True
        """
        result = self.simplify(_as_expr(cond, "can_prove"))
        return isinstance(result, IntImm) and result.value != 0

    def can_prove_equal(self, a: PrimExpr | int, b: PrimExpr | int) -> bool:
        """True when ``a == b`` for every value of the variables.

        Example::

            >>> ana.can_prove_equal(x // 8 * 8 + x % 8, x)
            True
        """
        x, y = op.convert(a), op.convert(b)
        if x.dtype.is_int and y.dtype.is_int and x.dtype.lanes == 1 == y.dtype.lanes:
            return self.can_prove(op.eq(x, y))
        return same(self.simplify(x), self.simplify(y))

    def int_set(
        self, expr: PrimExpr, dom_map: Mapping[Var, Range | IntervalSet] | None = None
    ) -> IntervalSet:
        """The symbolic interval ``expr`` covers when the mapped variables range over their sets.

        Without ``dom_map``, every variable bound to a Range here is relaxed.

        Example::

            >>> ana.int_set(i * 4 + j, {i: Range.from_min_extent(0, n)})   # [j, n * 4 + j - 4]
        """
        if dom_map is None:
            dom_map = dict(self._ranges)
        return eval_set(expr, dom_map, self)


def _as_expr(value: object, what: str) -> PrimExpr:
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool | int | float):
        return op.convert(value)
    hint = "; use simplify_stmt for statements" if isinstance(value, Node) else ""
    raise TypeError(f"{what} expects an expression, got {type(value).__name__}{hint}")


__all__ = ["NEG_INF", "POS_INF", "Analyzer"]
