"""Schedule + reduction block → the schedule forked: the reduction spread over the threads
of a GPU block (its reduction loop split, the inner part bound to ``threadIdx.x``), and the
schedule unchanged (TVM's ``CrossThreadReduction``).

Where the block's first consumer is not tiled, the reduction is also computed at the
consumer's outer loop (the loop of its spatial prefix) and its result kept in shared memory,
and the consumer's innermost loop is bound to the same ``threadIdx.x`` extent — or, when the
consumer is under ``threadIdx.x`` already, the reduction takes that extent. The lowering
(``lower_cross_thread_reduction``) turns the thread-bound reduction into an allreduce.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tilewright.ir import Block, For, Stmt
from tilewright.meta_schedule.analysis import block_of, bound_tags, needs_multi_level_tiling
from tilewright.meta_schedule.schedule_rule.auto_bind import is_gpu
from tilewright.meta_schedule.schedule_rule.reduction_loops import (
    SPATIAL,
    block_loops,
    loop_iter_type,
    needs_rfactor_or_cross_thread_reduction,
    reorder_and_fuse_reduction_loops,
)
from tilewright.meta_schedule.schedule_rule.rule import ScheduleRule
from tilewright.schedule import BlockRV, ExprRV, LoopRV, Schedule, ScheduleError

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext


class CrossThreadReduction(ScheduleRule):
    """Fork reduction blocks into a variant reduced across the threads of a GPU block.

    Applies to a reduction worth it (``needs_rfactor_or_cross_thread_reduction`` with the
    target's ``max_num_threads``) on a GPU target. Returns ``[variant, sch]``, as TVM.

    Args:
        thread_extents: candidate ``threadIdx.x`` extents, sampled uniformly.

    Example::

        rule = CrossThreadReduction(thread_extents=[4, 8, 16, 32, 64, 128, 256, 512])
        # v = sch.sample_categorical([4, 8, ...], [0.125] * 8)
        # k_0, k_1 = sch.split(k, [None, v]); sch.bind(k_1, "threadIdx.x")
    """

    def __init__(self, thread_extents: Sequence[int]) -> None:
        self.thread_extents = [int(t) for t in thread_extents]
        if not self.thread_extents or min(self.thread_extents) < 1:
            raise ValueError(
                f"CrossThreadReduction: thread extents {list(thread_extents)} must be positive"
            )
        self.max_threads_per_block = -1

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        # Off for targets without threads (TVM: without max_threads_per_block).
        target = context.target
        self.max_threads_per_block = (
            target.max_num_threads if target is not None and is_gpu(target) else -1
        )

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if self.max_threads_per_block <= 0:
            return [sch]
        if not needs_rfactor_or_cross_thread_reduction(sch, block, self.max_threads_per_block):
            return [sch]
        variant = sch.copy()
        target = _compute_target(variant, block)
        n = len(self.thread_extents)
        extent: ExprRV | int = variant.sample_categorical(self.thread_extents, [1.0 / n] * n)
        if target is not None:
            fused = variant.copy()
            try:
                extent = _fuse_into_consumer(fused, block, *target, extent)
                variant = fused
            except ScheduleError:
                pass  # our compute_at refused it: the reduction stays where it is
        try:
            loop, _ = reorder_and_fuse_reduction_loops(variant, block)
            _, inner = variant.split(loop, [None, extent])
            variant.bind(inner, "threadIdx.x")
        except ScheduleError:
            return [sch]
        return [variant, sch]

    def __repr__(self) -> str:
        return f"CrossThreadReduction(thread_extents={self.thread_extents})"


def _fuse_into_consumer(
    sch: Schedule,
    block: BlockRV,
    target_loop: LoopRV,
    target_block: BlockRV,
    innermost: LoopRV,
    extent: ExprRV | int,
) -> ExprRV | int:
    """Compute the block at ``target_loop`` of its consumer ``target_block`` with its
    output in shared memory; the consumer's innermost loop is bound to ``threadIdx.x``
    first, unless it is under ``threadIdx.x`` already, whose extent is then returned."""
    if "threadIdx.x" not in bound_tags(sch, target_block):
        outer, inner = sch.split(innermost, [None, extent])
        sch.bind(inner, "threadIdx.x")
        if innermost is target_loop:
            target_loop = outer
    else:
        extent = thread_x_extent(sch, target_block)
    sch.compute_at(block, target_loop, preserve_unit_loops=True)
    sch.set_scope(block, 0, "shared")
    return extent


def _compute_target(sch: Schedule, block: BlockRV) -> tuple[LoopRV, BlockRV, LoopRV] | None:
    """Where to compute the block (TVM's ``GetComputeTargetLoopAndBlock``): the loop of its
    first consumer, that consumer, and the consumer's innermost loop; None when the block
    writes several buffers, has no consumer, its first consumer is worth tiling, or its
    consumers share no loop."""
    if len(block_of(sch, block).writes) != 1:
        return None
    consumers = sch.get_consumers(block)
    if not consumers or needs_multi_level_tiling(sch, consumers[0]):
        return None
    lca = _lowest_common_ancestor([sch.state.block_ref_site(c, "ctr").path for c in consumers])
    if len(consumers) > 1 and isinstance(lca, Block):
        return None
    target_loops = sch.get_loops(consumers[0])
    own = block_loops(sch, block)
    pos = min(len(own), len(target_loops)) - 1
    for i in range(min(len(own), len(target_loops))):
        if loop_iter_type(own[i]) != SPATIAL:
            pos = i - 1
            break
        if sch.get(target_loops[i]) is lca:
            pos = i
            break
    if pos < 0:
        return None
    return target_loops[pos], consumers[0], target_loops[-1]


def _lowest_common_ancestor(paths: list[tuple[Stmt, ...]]) -> Stmt | None:
    """The deepest loop or block on every path."""
    found: Stmt | None = None
    for nodes in zip(*paths):
        if any(n is not nodes[0] for n in nodes):
            break
        if isinstance(nodes[0], For | Block):
            found = nodes[0]
    return found


def thread_x_extent(sch: Schedule, block: BlockRV) -> ExprRV | int:
    """The extent of the ``threadIdx.x`` loop around ``block``: the factor its split was
    given in the trace (an ``ExprRV`` when sampled, so that both follow one decision), else
    the loop's extent.

    TVM takes the first ``threadIdx.x`` split of the trace, which may belong to another
    kernel; this one follows the loop that is around the block.
    """
    site = sch.state.block_ref_site(block, "thread_x_extent")
    around = [f for f in site.path if isinstance(f, For) and f.thread_tag == "threadIdx.x"]
    for inst in sch.trace:
        if inst.kind != "bind" or inst.attrs[0] != "threadIdx.x":
            continue
        loop = inst.inputs[0]
        try:
            node = sch.get(loop)  # type: ignore[call-overload]  # a bind's input is a LoopRV
        except ScheduleError:
            continue  # a loop transformed since
        if not any(node is f for f in around):
            continue
        for other in sch.trace:
            if other.kind == "split" and loop in other.outputs:
                factor = other.inputs[1][other.outputs.index(loop)]  # type: ignore[index]
                if isinstance(factor, ExprRV | int):
                    return factor
    return bound_tags(sch, block)["threadIdx.x"]
