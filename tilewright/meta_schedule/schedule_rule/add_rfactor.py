"""Schedule + reduction block → the schedule forked into rfactor'ed variants, so that a
reduction with too little spatial parallelism can run its partial sums on several cores
(TVM's ``AddRFactor``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilewright.meta_schedule.schedule_rule.reduction_loops import (
    needs_rfactor_or_cross_thread_reduction,
    reorder_and_fuse_reduction_loops,
)
from tilewright.meta_schedule.schedule_rule.rule import ScheduleRule
from tilewright.schedule import BlockRV, Schedule, ScheduleError

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext

# Set on a block whose producer RandomComputeLocation should place after the block itself.
RANDOM_COMPUTE_PRODUCER = "meta_schedule.random_compute_producer"


class AddRFactor(ScheduleRule):
    """Fork a reduction block into ``rfactor`` variants.

    For a reduction worth it (``needs_rfactor_or_cross_thread_reduction`` with at most
    ``max_jobs_per_core * target.num_cores`` parallel jobs), the reduction loops are moved
    innermost and fused, split in two by ``sample_perfect_tile``, and each of the two loops
    is rfactor'ed in a schedule of its own (the new axis after the spatial ones); the
    original block, now the rfactor block's consumer, is annotated
    ``meta_schedule.random_compute_producer = 1`` for ``RandomComputeLocation``. The result
    is ``[rfactor of the outer loop, rfactor of the inner loop, the schedule unchanged]``,
    less the variants ``rfactor`` refuses.

    Args:
        max_jobs_per_core: parallel jobs per CPU core (-1: no parallelism).
        max_innermost_factor: bound on the inner factor of the split (None: none).

    Example::

        rule = AddRFactor(max_jobs_per_core=16, max_innermost_factor=64)
        # l2, l3 = sch.split(k, factors=sch.sample_perfect_tile(k, n=2, ...))
        # b4 = sch.rfactor(loop=l2, factor_axis=1)
    """

    def __init__(
        self, max_jobs_per_core: int = 16, max_innermost_factor: int | None = None
    ) -> None:
        self.max_jobs_per_core = int(max_jobs_per_core)
        self.max_innermost_factor = (
            -1 if max_innermost_factor is None else int(max_innermost_factor)
        )
        self.max_parallel_extent = -1

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        if context.target is None:
            raise ValueError("AddRFactor needs a TuneContext with a target")
        if self.max_jobs_per_core != -1:
            self.max_parallel_extent = context.target.num_cores * self.max_jobs_per_core

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if not needs_rfactor_or_cross_thread_reduction(sch, block, self.max_parallel_extent):
            return [sch]
        original = sch.copy()
        try:
            fused, num_spatial = reorder_and_fuse_reduction_loops(sch, block)
            factors = sch.sample_perfect_tile(fused, 2, self.max_innermost_factor)
            split = sch.split(fused, factors)
        except ScheduleError:
            return [original]
        result = []
        for loop in split:
            variant = sch.copy()
            try:
                variant.rfactor(loop, num_spatial)
            except ScheduleError:
                continue
            variant.annotate(block, RANDOM_COMPUTE_PRODUCER, 1)
            result.append(variant)
        result.append(original)
        return result

    def __repr__(self) -> str:
        inner = None if self.max_innermost_factor == -1 else self.max_innermost_factor
        return (
            f"AddRFactor(max_jobs_per_core={self.max_jobs_per_core}, max_innermost_factor={inner})"
        )
