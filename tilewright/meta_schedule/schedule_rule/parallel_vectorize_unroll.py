"""Schedule + root block → the root block annotated with how far to parallelise, vectorise
and unroll; the postprocessor ``RewriteParallelVectorizeUnroll`` applies the annotations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tilewright.meta_schedule.analysis import (
    PARALLEL,
    UNROLL_EXPLICIT,
    UNROLL_IMPLICIT,
    VECTORIZE,
    is_root,
)
from tilewright.meta_schedule.schedule_rule.reduction_loops import is_spatial_prim_func
from tilewright.meta_schedule.schedule_rule.rule import ScheduleRule
from tilewright.schedule import BlockRV, Schedule

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext


class ParallelizeVectorizeUnroll(ScheduleRule):
    """Annotate the root block with the limits of parallelism, vectorisation and unrolling.

    Args:
        max_jobs_per_core: parallel jobs per CPU core; the root gets
            ``meta_schedule.parallel = max_jobs_per_core * target.num_cores`` (-1 or 0: none).
        max_vectorize_extent: the root gets ``meta_schedule.vectorize`` (-1 or 0: none).
        unroll_max_steps: candidate unroll limits; one is sampled (uniformly) into
            ``meta_schedule.unroll_explicit`` (``unroll_implicit`` when ``unroll_explicit``
            is False). Not in a function whose blocks are all spatial.
        unroll_explicit: unroll in the IR rather than leave it to the compiler.

    Example::

        rule = ParallelizeVectorizeUnroll(max_jobs_per_core=16, max_vectorize_extent=64,
                                          unroll_max_steps=[0, 16, 64, 512])
        # root: T.block_attr({"meta_schedule.parallel": 256, "meta_schedule.vectorize": 64,
        #                     "meta_schedule.unroll_explicit": 16})
    """

    def __init__(
        self,
        max_jobs_per_core: int = 16,
        max_vectorize_extent: int = 16,
        unroll_max_steps: Sequence[int] | None = None,
        unroll_explicit: bool = True,
    ) -> None:
        self.max_jobs_per_core = int(max_jobs_per_core)
        self.max_vectorize_extent = int(max_vectorize_extent)
        self.unroll_max_steps = [int(s) for s in unroll_max_steps or ()]
        self.unroll_explicit = bool(unroll_explicit)
        self.max_parallel_extent = -1

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        if context.target is None:
            raise ValueError("ParallelizeVectorizeUnroll needs a TuneContext with a target")
        if self.max_jobs_per_core > 0:
            self.max_parallel_extent = context.target.num_cores * self.max_jobs_per_core

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if not is_root(sch, block):
            return [sch]
        if self.max_jobs_per_core > 0:
            sch.annotate(block, PARALLEL, self.max_parallel_extent)
        if self.max_vectorize_extent > 0:
            sch.annotate(block, VECTORIZE, self.max_vectorize_extent)
        func = sch.mod[sch.func_working_on]
        if self.unroll_max_steps and not is_spatial_prim_func(func):
            n = len(self.unroll_max_steps)
            max_step = sch.sample_categorical(self.unroll_max_steps, [1.0 / n] * n)
            key = UNROLL_EXPLICIT if self.unroll_explicit else UNROLL_IMPLICIT
            sch.annotate(block, key, max_step)
        return [sch]

    def __repr__(self) -> str:
        return (
            f"ParallelizeVectorizeUnroll(max_jobs_per_core={self.max_jobs_per_core}, "
            f"max_vectorize_extent={self.max_vectorize_extent}, "
            f"unroll_max_steps={self.unroll_max_steps}, unroll_explicit={self.unroll_explicit})"
        )
