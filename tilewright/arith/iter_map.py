"""Affine iterator maps: index expressions over loop variables in, splits and fusions out.

An index such as ``i_0 * 128 + i_1`` or ``fused // 8`` is normalised into an ``IterSum`` of
``IterSplit`` terms, each a slice of an ``IterMark`` (a loop variable, or a fused sum of other
splits) scaled by a constant. ``detect_iter_map`` checks that a list of indices is a clean
re-tiling of the loop domain (every index one fused mark, the marks' pieces disjoint), and
``iter_map_simplify`` prints such a map back in canonical form, as the schedule primitives do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tilewright.ir import op
from tilewright.ir.expr import (
    GE,
    GT,
    LE,
    LT,
    Add,
    And,
    FloorDiv,
    FloorMod,
    IntImm,
    Mul,
    PrimExpr,
    Range,
    Sub,
    Var,
)
from tilewright.ir.functor import collect_vars

Extent = int | PrimExpr


@dataclass(frozen=True, eq=True)
class IterMark:
    """An iteration space of ``extent`` points: a loop variable or a fused ``IterSum``."""

    source: Var | IterSum
    extent: Extent


@dataclass(frozen=True, eq=True)
class IterSplit:
    """The term ``(mark // lower_factor) % extent * scale`` of an iteration space."""

    mark: IterMark
    lower_factor: Extent
    extent: Extent
    scale: int


@dataclass(frozen=True, eq=True)
class IterSum:
    """``sum(args) + base``; args are ordered by decreasing scale."""

    args: tuple[IterSplit, ...]
    base: int | PrimExpr


@dataclass(frozen=True)
class IterMapResult:
    """What ``detect_iter_map`` found: one ``IterSum`` per index, or the reasons it failed."""

    indices: tuple[IterSum, ...]
    errors: tuple[str, ...]

    def __bool__(self) -> bool:
        return not self.errors


class NotAffine(Exception):
    """An expression is not an affine map of the loop iterators (the message says why)."""


def _int(x: Extent) -> int | None:
    if isinstance(x, int):
        return x
    return x.value if isinstance(x, IntImm) else None


def _as_extent(x: PrimExpr) -> Extent:
    """A constant as a Python int, anything else as itself."""
    value = _int(x)
    return x if value is None else value


def _mul_extent(a: Extent, b: Extent) -> Extent:
    ia, ib = _int(a), _int(b)
    if ia is not None and ib is not None:
        return ia * ib
    if ia == 1:
        return b
    if ib == 1:
        return a
    return op.mul(a, b)


def _add_base(a: int | PrimExpr, b: int | PrimExpr) -> int | PrimExpr:
    ia, ib = _int(a), _int(b)
    if ia is not None and ib is not None:
        return ia + ib
    if ia == 0:
        return b
    if ib == 0:
        return a
    return op.add(a, b)


def _scale_base(a: int | PrimExpr, c: int) -> int | PrimExpr:
    ia = _int(a)
    if ia is not None:
        return ia * c
    return a if c == 1 else op.mul(a, c)


class _Normalizer:
    """Rewrites one expression into an ``IterSum``; raises ``NotAffine`` when it cannot."""

    def __init__(
        self,
        dom: Mapping[Var, Range],
        constraints: Sequence[tuple[IterSum, int]] = (),
        drop_unit_iters: bool = False,
    ) -> None:
        self.dom = dom
        self.constraints = list(constraints)
        self.drop_unit_iters = drop_unit_iters

    def visit(self, expr: PrimExpr) -> IterSum:
        if isinstance(expr, Var):
            return self.var(expr)
        if isinstance(expr, IntImm):
            return IterSum((), expr.value)
        if not any(v in self.dom for v in collect_vars(expr)):
            folded = _fold(expr)
            return IterSum((), expr if folded is None else folded)
        if isinstance(expr, Add):
            return _merge(self.visit(expr.a), self.visit(expr.b))
        if isinstance(expr, Sub):
            return _merge(self.visit(expr.a), _scale(self.visit(expr.b), -1))
        if isinstance(expr, Mul):
            return self.mul(self.visit(expr.a), self.visit(expr.b), expr)
        if isinstance(expr, FloorDiv | FloorMod) and _int(expr.b) is None:
            return self.symbolic_divide(self.visit(expr.a), expr)
        if isinstance(expr, FloorDiv):
            return self.floordiv(self.visit(expr.a), self.divisor(expr))
        if isinstance(expr, FloorMod):
            return self.floormod(self.visit(expr.a), self.divisor(expr))
        raise NotAffine(f"{type(expr).__name__} of loop iterators is not affine")

    def var(self, var: Var) -> IterSum:
        rng = self.dom.get(var)
        if rng is None:
            return IterSum((), var)
        extent, base = _as_extent(rng.extent), _as_extent(rng.min)
        if self.drop_unit_iters and extent == 1:
            return IterSum((), base)
        return IterSum((IterSplit(IterMark(var, extent), 1, extent, 1),), base)

    @staticmethod
    def divisor(expr: FloorDiv | FloorMod) -> int:
        c = _int(expr.b)
        if c is None or c <= 0:
            raise NotAffine(f"division by {expr.b!r}: the divisor must be a positive constant")
        return c

    @staticmethod
    def mul(a: IterSum, b: IterSum, expr: Mul) -> IterSum:
        if a.args and b.args:
            raise NotAffine("a product of two loop iterators is not affine")
        iters, factor = (a, b) if a.args else (b, a)
        c = _int(factor.base)
        if c is None:
            raise NotAffine(f"scaling by the symbolic {expr.b!r} is not affine")
        return _scale(iters, c)

    def floordiv(self, a: IterSum, c: int) -> IterSum:
        if not a.args:
            ia = _int(a.base)
            return IterSum((), ia // c if ia is not None else op.floordiv(a.base, c))
        split, base = self.fuse(a)
        if split.scale <= 0:
            raise NotAffine("a negative coefficient of a loop iterator is not supported")
        ib = _int(base)
        if ib is None or ib % c:
            raise NotAffine(f"the offset {base!r} is not a multiple of the divisor {c}")
        if split.scale % c == 0:
            return IterSum((split_scaled(split, split.scale // c),), ib // c)
        if c % split.scale:
            raise NotAffine(f"// {c} does not divide the scale {split.scale}")
        step = c // split.scale
        ext = _int(split.extent)
        if ext is None or ext % step:
            raise NotAffine(f"// {c} does not divide the iteration extent {split.extent!r}")
        lower = _mul_extent(split.lower_factor, step)
        return IterSum((IterSplit(split.mark, lower, ext // step, 1),), ib // c)

    def floormod(self, a: IterSum, c: int) -> IterSum:
        if not a.args:
            ia = _int(a.base)
            return IterSum((), ia % c if ia is not None else op.floormod(a.base, c))
        split, base = self.fuse(a)
        if split.scale <= 0:
            raise NotAffine("a negative coefficient of a loop iterator is not supported")
        ib = _int(base)
        if ib is None or ib % c:
            raise NotAffine(f"the offset {base!r} is not a multiple of the modulus {c}")
        if split.scale % c == 0:
            return IterSum((), 0)
        if c % split.scale:
            raise NotAffine(f"% {c} does not divide the scale {split.scale}")
        step = c // split.scale
        ext = _int(split.extent)
        if ext is not None and ext <= step:
            return IterSum((split,), 0)
        if ext is None or ext % step:
            raise NotAffine(f"% {c} does not divide the iteration extent {split.extent!r}")
        return IterSum((IterSplit(split.mark, split.lower_factor, step, split.scale),), 0)

    def symbolic_divide(self, a: IterSum, expr: FloorDiv | FloorMod) -> IterSum:
        """``a // d`` or ``a % d`` for a loop-invariant ``d``: only on one whole unit-scale
        iterator whose extent is a product with ``d`` as a factor (``fused // n`` of a loop
        of extent ``8 * n``)."""
        d = expr.b
        if any(v in self.dom for v in collect_vars(d)):
            raise NotAffine(f"division by {d!r}, which depends on a loop iterator")
        if not a.args:
            fn = op.floordiv if isinstance(expr, FloorDiv) else op.floormod
            return IterSum((), fn(a.base, d))
        split, base = self.fuse(a)
        if split.scale != 1 or _int(base) != 0:
            raise NotAffine(f"division by the symbolic {d!r} of a scaled or offset iterator")
        rest = _exact_quotient(split.extent, d)
        if rest is None:
            raise NotAffine(f"cannot tell that {d!r} divides the iteration extent {split.extent!r}")
        if isinstance(expr, FloorMod):
            return IterSum((IterSplit(split.mark, split.lower_factor, d, 1),), 0)
        lower = _mul_extent(split.lower_factor, d)
        return IterSum((IterSplit(split.mark, lower, rest, 1),), 0)

    def fuse(self, total: IterSum) -> tuple[IterSplit, int | PrimExpr]:
        """``total`` as one split of a (possibly fused) mark, and its base."""
        args = list(total.args)
        for constrained, limit in self.constraints:
            if len(constrained.args) > 1 and all(a in args for a in constrained.args):
                args = [a for a in args if a not in constrained.args]
                scale = min(a.scale for a in constrained.args)
                inner = IterSum(
                    tuple(split_scaled(a, a.scale // scale) for a in constrained.args), 0
                )
                args.append(IterSplit(IterMark(inner, limit), 1, limit, scale))
                args.sort(key=lambda a: -a.scale)
        if len(args) == 1:
            return args[0], total.base
        if any(a.scale <= 0 for a in args):
            raise NotAffine("a negative coefficient of a loop iterator is not supported")
        # Unit pieces first among equal scales: they do not advance the chain.
        chain = sorted(args, key=lambda a: (a.scale, _int(a.extent) != 1))
        unit = chain[0].scale
        fused_extent: Extent = 1
        for a in chain:
            size = _int(fused_extent)
            if size is None or unit * size != a.scale:
                raise NotAffine(
                    f"the terms {_describe(total)} do not tile one iteration space: "
                    f"expected a term with scale {unit * (size or 0)}, found {a.scale}"
                )
            fused_extent = _mul_extent(fused_extent, a.extent)
        inner = IterSum(tuple(split_scaled(a, a.scale // unit) for a in reversed(chain)), 0)
        return IterSplit(IterMark(inner, fused_extent), 1, fused_extent, unit), total.base


def _fold(expr: PrimExpr) -> int | None:
    """The value of an integer expression made of constants only, else None."""
    if isinstance(expr, IntImm):
        return expr.value
    if not isinstance(expr, Add | Sub | Mul | FloorDiv | FloorMod):
        return None
    a, b = _fold(expr.a), _fold(expr.b)
    if a is None or b is None or (isinstance(expr, FloorDiv | FloorMod) and b == 0):
        return None
    if isinstance(expr, Add):
        return a + b
    if isinstance(expr, Sub):
        return a - b
    if isinstance(expr, Mul):
        return a * b
    return a // b if isinstance(expr, FloorDiv) else a % b


def _exact_quotient(extent: Extent, d: PrimExpr) -> Extent | None:
    """``extent / d`` when ``d`` is visibly a factor of ``extent``, else None."""
    if _same_extent(extent, d):
        return 1
    if isinstance(extent, Mul):
        if _same_extent(extent.b, d):
            return _as_extent(extent.a)
        if _same_extent(extent.a, d):
            return _as_extent(extent.b)
    return None


def split_scaled(split: IterSplit, scale: int) -> IterSplit:
    return IterSplit(split.mark, split.lower_factor, split.extent, scale)


def _scale(total: IterSum, c: int) -> IterSum:
    if c == 0:
        return IterSum((), 0)
    return IterSum(
        tuple(split_scaled(a, a.scale * c) for a in total.args), _scale_base(total.base, c)
    )


def _merge(a: IterSum, b: IterSum) -> IterSum:
    """``a + b`` with equal splits combined and adjacent pieces of one mark glued back."""
    terms: list[IterSplit] = list(a.args)
    for s in b.args:
        for k, t in enumerate(terms):
            if (t.mark, t.lower_factor, t.extent) == (s.mark, s.lower_factor, s.extent):
                terms[k] = split_scaled(t, t.scale + s.scale)
                break
        else:
            terms.append(s)
    terms = [t for t in terms if t.scale != 0]
    terms = _glue(terms)
    terms.sort(key=lambda t: -t.scale)
    return IterSum(tuple(terms), _add_base(a.base, b.base))


def _glue(terms: list[IterSplit]) -> list[IterSplit]:
    # (x // 8) * 8 + x % 8 is x again: join a piece with the piece just below it in one mark.
    changed = True
    while changed:
        changed = False
        for hi in terms:
            for lo in terms:
                if hi is lo or hi.mark != lo.mark:
                    continue
                lo_ext = _int(lo.extent)
                if lo_ext is None:
                    continue
                below = _mul_extent(lo.lower_factor, lo_ext)
                if not _same_extent(hi.lower_factor, below) or hi.scale != lo.scale * lo_ext:
                    continue
                joined = IterSplit(
                    hi.mark, lo.lower_factor, _mul_extent(hi.extent, lo_ext), lo.scale
                )
                terms = [t for t in terms if t is not hi and t is not lo] + [joined]
                changed = True
                break
            if changed:
                break
    return terms


def _describe(total: IterSum) -> str:
    return " + ".join(str(split_to_expr(a)) for a in total.args) or "0"


def normalize(
    expr: PrimExpr, dom: Mapping[Var, Range], *, drop_unit_iters: bool = False
) -> IterSum:
    """``expr`` as a sum of scaled iterator splits; ``NotAffine`` says why it is not one.

    Args:
        expr: an index expression over the loop variables in ``dom``; other variables are
            symbols that may only appear in the constant offset.
        dom: each loop variable's range.
        drop_unit_iters: treat loops of extent 1 as the constant at their minimum.

    Example::

        >>> s = normalize(i_0 * 128 + i_1, {i_0: Range(0, 8), i_1: Range(0, 128)})
        >>> [a.scale for a in s.args]
        [128, 1]
    """
    return _Normalizer(dom, drop_unit_iters=drop_unit_iters).visit(expr)


def is_affine(
    exprs: Sequence[PrimExpr], dom: Mapping[Var, Range], predicate: PrimExpr | None = None
) -> str | None:
    """None when every expression is an affine map of the loops in ``dom``, else the reason.

    Conjuncts ``sum < c`` of ``predicate`` bound the fused space of that sum (see
    ``detect_iter_map``). Unlike ``detect_iter_map``, the indices may overlap or leave parts
    of the loops unused. With symbolic shapes (loop-invariant coefficients such as
    ``j_0 * ((n + 9) // 10) + j_1``), the expression only has to be a sum of loop iterators
    scaled, divided and taken modulo by loop-invariant values.

    Example::

        >>> is_affine([i * 4 + j], {i: Range(0, 4), j: Range(0, 4)}) is None
        True
    """
    norm = _Normalizer(dom)
    norm.constraints = _constraints(predicate, norm)
    for expr in exprs:
        try:
            norm.visit(expr)
        except NotAffine as err:
            if not _has_symbolic_coefficient(expr, dom) or not _quasi_affine(expr, dom):
                return f"{expr!r}: {err}"
    return None


def _invariant(expr: PrimExpr, dom: Mapping[Var, Range]) -> bool:
    return not any(v in dom for v in collect_vars(expr))


def _has_symbolic_coefficient(expr: PrimExpr, dom: Mapping[Var, Range]) -> bool:
    if isinstance(expr, Mul | FloorDiv | FloorMod):
        for side in (expr.a, expr.b):
            if _invariant(side, dom) and _fold(side) is None:
                return True
    if isinstance(expr, Add | Sub | Mul | FloorDiv | FloorMod):
        return _has_symbolic_coefficient(expr.a, dom) or _has_symbolic_coefficient(expr.b, dom)
    return False


def _quasi_affine(expr: PrimExpr, dom: Mapping[Var, Range]) -> bool:
    """Iterators combined by +, -, and *, //, % with loop-invariant operands only."""
    if _invariant(expr, dom) or isinstance(expr, Var):
        return True
    if isinstance(expr, Add | Sub):
        return _quasi_affine(expr.a, dom) and _quasi_affine(expr.b, dom)
    if isinstance(expr, Mul):
        if _invariant(expr.a, dom):
            return _quasi_affine(expr.b, dom)
        return _invariant(expr.b, dom) and _quasi_affine(expr.a, dom)
    if isinstance(expr, FloorDiv | FloorMod):
        return _invariant(expr.b, dom) and _quasi_affine(expr.a, dom)
    return False


def _constraints(predicate: PrimExpr | None, norm: _Normalizer) -> list[tuple[IterSum, int]]:
    found: list[tuple[IterSum, int]] = []
    stack = [predicate] if predicate is not None else []
    while stack:
        cond = stack.pop()
        if isinstance(cond, And):
            stack += [cond.a, cond.b]
            continue
        if isinstance(cond, LT | LE):
            lhs, bound, inclusive = cond.a, _int(cond.b), isinstance(cond, LE)
        elif isinstance(cond, GT | GE):
            lhs, bound, inclusive = cond.b, _int(cond.a), isinstance(cond, GE)
        else:
            continue
        if bound is None:
            continue
        limit = bound + 1 if inclusive else bound
        try:
            total = norm.visit(lhs)
        except NotAffine:
            continue
        base = _int(total.base)
        if len(total.args) < 2 or base is None:
            continue
        scale = min(a.scale for a in total.args)
        if (limit - base) % scale:
            continue
        scaled = IterSum(total.args, 0)
        found.append((scaled, (limit - base + scale - 1) // scale))
    return found


def detect_iter_map(
    indices: Sequence[PrimExpr],
    dom: Mapping[Var, Range],
    predicate: PrimExpr | None = None,
    check_level: str = "surjective",
    *,
    drop_unit_iters: bool = False,
) -> IterMapResult:
    """Check that ``indices`` re-tile the loop domain ``dom`` without overlap.

    Each index must normalise to a single (possibly fused) iteration space, and the pieces
    that the indices take from every loop must be disjoint (``surjective``) or, with
    ``bijective``, cover each loop exactly. Conjuncts ``sum < c`` of ``predicate`` bound
    the fused space of that sum, as a non-divisible split writes them.

    Example::

        >>> r = detect_iter_map([f // 8, f % 8], {f: Range(0, 64)})
        >>> bool(r), [a.lower_factor for s in r.indices for a in s.args]
        (True, [8, 1])
    """
    norm = _Normalizer(dom, drop_unit_iters=drop_unit_iters)
    norm.constraints = _constraints(predicate, norm)
    results: list[IterSum] = []
    try:
        for expr in indices:
            total = norm.visit(expr)
            if len(total.args) > 1:
                split, base = norm.fuse(total)
                total = IterSum((split,), base)
            results.append(total)
        _check_pieces(results, dom, check_level)
    except NotAffine as err:
        return IterMapResult((), (str(err),))
    return IterMapResult(tuple(results), ())


def _check_pieces(results: Sequence[IterSum], dom: Mapping[Var, Range], level: str) -> None:
    pieces: dict[IterMark, list[IterSplit]] = {}

    def collect(split: IterSplit) -> None:
        # A fused mark's own pieces count once however many indices take parts of it.
        first_use = split.mark not in pieces
        pieces.setdefault(split.mark, []).append(split)
        if first_use and isinstance(split.mark.source, IterSum):
            for inner in split.mark.source.args:
                collect(inner)

    for total in results:
        for split in total.args:
            collect(split)
    for mark, used in pieces.items():
        if any(_int(s.lower_factor) is None or _int(s.extent) is None for s in used):
            continue  # symbolic pieces: their overlap cannot be decided here
        used = sorted(used, key=lambda s: _int(s.lower_factor) or 0)
        reach = 1
        for s in used:
            lower, ext = _int(s.lower_factor), _int(s.extent)
            assert lower is not None and ext is not None  # symbolic pieces were skipped
            if lower < reach:
                raise NotAffine(f"two indices use overlapping parts of {_mark_name(mark)}")
            if level == "bijective" and lower != reach:
                raise NotAffine(f"part of {_mark_name(mark)} is not used by any index")
            reach = lower * ext
        mark_ext = _int(mark.extent)
        if level == "bijective" and mark_ext is not None and reach != mark_ext:
            raise NotAffine(f"the top of {_mark_name(mark)} is not used by any index")
    if level == "bijective":
        used_vars = {m.source for m in pieces if isinstance(m.source, Var)}
        for var, rng in dom.items():
            if var not in used_vars and _int(rng.extent) != 1:
                raise NotAffine(f"loop {var.name} is not used by any index")


def _mark_name(mark: IterMark) -> str:
    return (
        f"loop {mark.source.name}"
        if isinstance(mark.source, Var)
        else f"({_describe(mark.source)})"
    )


def mark_to_expr(mark: IterMark) -> PrimExpr:
    """The expression whose values the mark enumerates."""
    if isinstance(mark.source, Var):
        return mark.source
    return sum_to_expr(mark.source)


def split_to_expr(split: IterSplit) -> PrimExpr:
    """The split as an expression: ``x``, ``x // lf`` (the top piece), ``x % ext`` (the
    bottom piece) or ``x % (lf * ext) // lf``, times its scale."""
    value = mark_to_expr(split.mark)
    if _int(split.extent) == 1 and not _same_extent(split.extent, split.mark.extent):
        return op.const(0, value.dtype)
    upper = _mul_extent(split.extent, split.lower_factor)
    if not _same_extent(upper, split.mark.extent):
        value = op.floormod(value, upper)
    if _int(split.lower_factor) != 1:
        value = op.floordiv(value, split.lower_factor)
    if split.scale != 1:
        value = op.mul(value, split.scale)
    return value


def _same_extent(a: Extent, b: Extent) -> bool:
    ia, ib = _int(a), _int(b)
    if ia is not None or ib is not None:
        return ia == ib
    from tilewright.ir.structural import structural_equal

    return a is b or structural_equal(a, b)


def sum_to_expr(total: IterSum, dtype_like: PrimExpr | None = None) -> PrimExpr:
    """``sum(args) + base`` as an expression, terms by decreasing scale, base last."""
    value: PrimExpr | None = None
    for split in total.args:
        term = split_to_expr(split)
        value = term if value is None else op.add(value, term)
    base = total.base
    if value is None:
        dt = dtype_like.dtype if dtype_like is not None else None
        return op.convert(base, dt) if isinstance(base, int) else base
    ib = _int(base)
    if ib is None:
        return op.add(value, base)
    if ib > 0:
        return op.add(value, ib)
    if ib < 0:
        return op.sub(value, -ib)
    return value


def iter_map_simplify(
    indices: Sequence[PrimExpr],
    dom: Mapping[Var, Range],
    predicate: PrimExpr | None = None,
    *,
    drop_unit_iters: bool = False,
) -> list[PrimExpr]:
    """``indices`` in canonical form when they form a surjective iterator map, else unchanged.

    Example::

        >>> iter_map_simplify([(i_0 * 128 + i_1)], dom)   # stays ``i_0 * 128 + i_1``
        >>> iter_map_simplify([f // 8 * 8 + f % 8], {f: Range(0, 64)})  # becomes ``f``
    """
    result = detect_iter_map(indices, dom, predicate, drop_unit_iters=drop_unit_iters)
    if not result:
        return list(indices)
    out = []
    for expr, total in zip(indices, result.indices):
        flat = total
        if len(total.args) == 1:
            split = total.args[0]
            whole = _int(split.lower_factor) == 1 and _same_extent(split.extent, split.mark.extent)
            if whole and isinstance(split.mark.source, IterSum):
                inner = split.mark.source
                flat = IterSum(
                    tuple(split_scaled(a, a.scale * split.scale) for a in inner.args), total.base
                )
        out.append(sum_to_expr(flat, expr))
    return out
