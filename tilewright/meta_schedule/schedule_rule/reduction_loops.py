"""A block's loops → what they drive, and whether its reduction is worth spreading.

What the reduction rules (``AddRFactor``, ``CrossThreadReduction``) and ``AutoBind`` ask of
the loops above a block: the kind of iterator each loop drives in every block under it
(TVM's ``GetLoopIterType``), whether a reduction is better run over several cores or
threads (TVM's ``NeedsRFactorOrCrossThreadReduction``), and the rewrite both reduction
rules start with: reduction loops moved innermost and fused into one.

Every query reads the schedule's IR and records nothing in its trace.

Example::

    >>> kinds = [loop_iter_type(f) for f in block_loops(sch, block)]   # ["S", "R"]
    >>> fused, n_spatial = reorder_and_fuse_reduction_loops(sch, block)
"""

from __future__ import annotations

import itertools

from tilewright.ir import Block, BlockRealize, For, IntImm, IterKind, PrimFunc, collect_vars
from tilewright.meta_schedule.analysis import (
    TILING_STRUCTURE,
    annotation,
    block_of,
    is_reduction,
    loop_of,
    needs_multi_level_tiling,
)
from tilewright.schedule import BlockRV, LoopRV, Schedule
from tilewright.schedule.tree import children, walk

SPATIAL, REDUCE, OPAQUE = "S", "R", "O"


def block_loops(sch: Schedule, block: BlockRV) -> list[For]:
    """The loops between the block and its enclosing block, outermost first (no trace
    record, unlike ``sch.get_loops``)."""
    return sch.state.block_ref_site(block, "block_loops").enclosing_loops()


def loop_iter_type(loop: For) -> str:
    """``S`` when the loop drives only spatial iterators of the blocks directly under it (or
    none at all), ``R`` only reduction iterators, ``O`` both or other kinds."""
    counts = {SPATIAL: 0, REDUCE: 0, OPAQUE: 0}
    stack = [loop.body]
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, BlockRealize):
            for iv, value in zip(stmt.block.iter_vars, stmt.iter_values):
                if any(v is loop.loop_var for v in collect_vars(value)):
                    kind = {IterKind.SPATIAL: SPATIAL, IterKind.REDUCE: REDUCE}
                    counts[kind.get(iv.kind, OPAQUE)] += 1
            continue  # blocks nested in this one have their own loops
        stack.extend(children(stmt))
    if counts[OPAQUE] or (counts[SPATIAL] and counts[REDUCE]):
        return OPAQUE
    return REDUCE if counts[REDUCE] else SPATIAL


def is_spatial_prim_func(func: PrimFunc) -> bool:
    """Every block of the function has spatial iterators only."""
    return all(
        all(iv.kind is IterKind.SPATIAL for iv in path[-1].iter_vars)
        for path in walk(func.body)
        if isinstance(path[-1], Block)
    )


def has_ordered_trivial_binding(sch: Schedule, block: BlockRV) -> bool:
    """Each iterator is bound to the loop at its own position, outermost first."""
    loops = block_loops(sch, block)
    values = sch.get_realize(block).iter_values
    return len(loops) == len(values) and all(v is f.loop_var for f, v in zip(loops, values))


def is_reduction_block(node: Block) -> bool:
    """A reduction block (TVM's ``IsReductionBlock``): an init, spatial and reduction
    iterators only, and no reduction iterator in the indices of what it writes."""
    if not is_reduction(node):
        return False
    reduce_vars = {iv.var for iv in node.iter_vars if iv.kind is IterKind.REDUCE}
    return not any(v in reduce_vars for region in node.writes for v in collect_vars(region.region))


def needs_rfactor_or_cross_thread_reduction(
    sch: Schedule, block: BlockRV, max_parallel_extent: int
) -> bool:
    """Whether the block's reduction should be spread over cores (rfactor) or threads.

    The block must be an untiled reduction with trivial bindings under a perfect nest of
    spatial and reduction loops of constant extents, at least one reducing. A block worth
    multi-level tiling qualifies only when its spatial loops give too little parallelism
    (fewer iterations than the reduction, and at most ``max_parallel_extent``); any other
    reduction block qualifies when it reduces more than one element.
    """
    node = block_of(sch, block)
    site = sch.state.block_ref_site(block, "needs_rfactor_or_cross_thread_reduction")
    if not node.writes or site.scope_index() < 0:
        return False
    if not is_reduction_block(node) or annotation(node, TILING_STRUCTURE) is not None:
        return False
    if not has_ordered_trivial_binding(sch, block):
        return False
    loops = site.enclosing_loops()
    kinds = [loop_iter_type(f) for f in loops]
    if OPAQUE in kinds or REDUCE not in kinds:
        return False
    # A perfect nest: each loop's body is the next loop, the innermost's is the block.
    for outer, inner in itertools.pairwise(loops):
        if outer.body is not inner:
            return False
    last = loops[-1].body
    if not (isinstance(last, BlockRealize) and last.block is node):
        return False
    space, reduce = 1, 1
    for f, kind in zip(loops, kinds):
        if not isinstance(f.extent, IntImm):
            return False
        if kind == SPATIAL:
            space *= f.extent.value
        else:
            reduce *= f.extent.value
    if needs_multi_level_tiling(sch, block):
        return not (space >= reduce or space > max_parallel_extent)
    return reduce > 1


def reorder_and_fuse_reduction_loops(sch: Schedule, block: BlockRV) -> tuple[LoopRV, int]:
    """Move the block's reduction loops innermost (spatial loops first, each kind in its
    order) and fuse them; the fused (or only) reduction loop and the number of spatial loops.

    The loops must each be spatial or reduction (``loop_iter_type``), one at least reducing.
    """
    loops = sch.get_loops(block)
    kinds = [loop_iter_type(loop_of(sch, lp)) for lp in loops]
    spatial = [lp for lp, k in zip(loops, kinds) if k == SPATIAL]
    reduction = [lp for lp, k in zip(loops, kinds) if k == REDUCE]
    if len(spatial) + len(reduction) != len(loops) or not reduction:
        raise ValueError(
            f"block {block_of(sch, block).name!r}: loops of kinds {''.join(kinds)} are not "
            f"spatial and reduction loops with at least one reduction"
        )
    order = spatial + reduction
    if order != loops:
        # Reorder from the first loop that moves: the loops above it may hold other blocks.
        first = next(k for k, (a, b) in enumerate(zip(order, loops)) if a is not b)
        sch.reorder(*order[first:])
    fused = sch.fuse(*reduction) if len(reduction) > 1 else reduction[0]
    return fused, len(spatial)
