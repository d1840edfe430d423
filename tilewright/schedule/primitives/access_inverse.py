"""Block iterators from a region of a buffer: which instances of a block access (write, for
compute_at; read, for reverse_compute_at) a given box, by inverting the block's access map
(``B[v + c]``, ``B[k * v + c]`` tiles of a blockized block, ``B[c - v]``, and one-to-one maps
such as ``B[v // 4, v % 4]``)."""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.int_set import IntervalSet
from tilewright.arith.iter_map import NotAffine, detect_iter_map, normalize
from tilewright.ir import op
from tilewright.ir.buffer import BufferRegion
from tilewright.ir.expr import IntImm, PrimExpr, Range, Var
from tilewright.ir.functor import collect_vars, substitute
from tilewright.schedule.primitives.block_layout import _inverse  # the iter-map inverse


def instances_touching(
    region: BufferRegion,
    dom: dict[Var, Range],
    need: Sequence[IntervalSet],
    ana: Analyzer,
    last: bool = False,
) -> dict[Var, IntervalSet]:
    """For the iterators of ``dom`` that ``region`` (an access of one block instance) is
    indexed by, the interval of values whose access meets the box ``need``; an iterator not
    found here is left out (the caller keeps its whole domain). With ``last`` (a consumer
    read ``B[v + c : v + c + E]`` placed after its producer), the instances whose access
    *ends* in the box: each instance then runs once, in the iteration that completes its
    window.

    Example::

        >>> instances_touching(B[15 - v], {v: [0, 16)}, [[4 * i, 4 * i + 3]], ana)
        {v: [12 - 4 * i, 15 - 4 * i]}
    """
    found: dict[Var, IntervalSet] = {}
    unsolved = False
    for rng, want in zip(region.region, need):
        if want.min_value is None or want.max_value is None:
            unsolved = True
            continue
        hit = _solve_dim(rng, dom, want.min_value, want.max_value, ana, last)
        if hit is None:
            unsolved = unsolved or any(v in dom for v in collect_vars(rng.min))
            continue
        var, piece = hit
        found[var] = _intersect(found[var], piece, ana) if var in found else piece
    if unsolved:
        for var, piece in _solve_bijective(region, dom, need, ana).items():
            found.setdefault(var, piece)
    return found


def _intersect(a: IntervalSet, b: IntervalSet, ana: Analyzer) -> IntervalSet:
    # Two dimensions indexed by one iterator: the instances must meet both (both hold when
    # they are equal, the usual case); keep the first where they cannot be compared.
    if a.min_value is None or b.min_value is None or a.max_value is None or b.max_value is None:
        return a
    low = b.min_value if ana.can_prove(op.ge(b.min_value, a.min_value)) else a.min_value
    high = b.max_value if ana.can_prove(op.le(b.max_value, a.max_value)) else a.max_value
    return IntervalSet(low, high)


def _solve_dim(
    rng: Range,
    dom: dict[Var, Range],
    low: PrimExpr,
    high: PrimExpr,
    ana: Analyzer,
    last: bool = False,
) -> tuple[Var, IntervalSet] | None:
    """One dimension accessed at ``[k * v + c, k * v + c + E)``: the ``v`` whose access meets
    ``[low, high]``. ``k == 1`` keeps the instances whose access lies inside (the rule the
    region analysis has always used); ``k > 1`` is a tile (blockize); ``k == -1`` a reversal."""
    if not isinstance(rng.extent, IntImm):
        return None
    extent = rng.extent.value
    try:
        total = normalize(rng.min, dom)
    except NotAffine:
        return None
    if len(total.args) != 1:
        return None
    split = total.args[0]
    var = split.mark.source
    if not isinstance(var, Var) or var not in dom:
        return None
    whole = dom[var].extent
    if split.lower_factor != 1 or not (
        (isinstance(whole, IntImm) and split.extent == whole.value) or split.extent == whole
    ):
        return None
    base = total.base if isinstance(total.base, PrimExpr) else op.const(total.base, var.dtype)
    k = split.scale
    if k == 1 and last:
        first, final = op.sub(low, op.add(base, extent - 1)), op.sub(high, op.add(base, extent - 1))
    elif k == 1:
        first, final = op.sub(low, base), op.sub(high, op.add(base, extent - 1))
    elif k > 1:
        first = op.floordiv(op.add(op.sub(low, base), k - extent), k)
        final = op.floordiv(op.sub(high, base), k)
    elif k == -1 and extent == 1:
        first, final = op.sub(base, high), op.sub(base, low)
    else:
        return None
    return var, IntervalSet(ana.simplify(first), ana.simplify(final))


def _solve_bijective(
    region: BufferRegion, dom: dict[Var, Range], need: Sequence[IntervalSet], ana: Analyzer
) -> dict[Var, IntervalSet]:
    """A one-to-one single-point access (``B[v // 4, v % 4]``), inverted at the box's lowest
    and highest points: the map increases along every dimension, so the instances between
    those two cover the box."""
    if any(not (isinstance(r.extent, IntImm) and r.extent.value == 1) for r in region.region):
        return {}
    if any(n.min_value is None or n.max_value is None for n in need):
        return {}
    indices = [r.min for r in region.region]
    result = detect_iter_map(indices, dom, check_level="bijective")
    if not result:
        return {}
    holders: list[Var] = []
    dims = []
    lows: dict[Var, PrimExpr] = {}
    highs: dict[Var, PrimExpr] = {}
    for total, index, want in zip(result.indices, indices, need):
        if not total.args:
            continue
        if len(total.args) != 1 or total.args[0].scale != 1:
            return {}
        holder = Var(f"p_{len(holders)}", index.dtype)
        holders.append(holder)
        dims.append(total)
        base = total.base if isinstance(total.base, PrimExpr) else op.const(total.base, index.dtype)
        assert want.min_value is not None and want.max_value is not None
        lows[holder] = op.sub(want.min_value, base)
        highs[holder] = op.sub(want.max_value, base)
    inverse = _inverse(dims, holders)
    found: dict[Var, IntervalSet] = {}
    for var, value in inverse.items():
        if var not in dom:
            continue
        first = ana.simplify(op.add(substitute(value, lows), dom[var].min))
        last = ana.simplify(op.add(substitute(value, highs), dom[var].min))
        found[var] = IntervalSet(first, last)
    return found
