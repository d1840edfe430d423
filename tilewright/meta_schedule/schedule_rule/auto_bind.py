"""Schedule + block → the schedule with the block's outer spatial loops bound to GPU blocks
and threads (TVM's ``AutoBind`` and its ``BindBlockThreadIdx``).

A block whose loops nothing bound yet gets its outermost spatial loops fused and split
``[None, t]``, the outer part bound to ``blockIdx.x`` and the inner to ``threadIdx.x``; ``t``
is sampled among the thread extents the loop can fill. A loop too long for
``max_threadblocks * max_threads_per_block`` threads is split ``[None, max_threadblocks,
max_threads_per_block]`` with the serial part innermost. A block under a ``threadIdx`` loop
only gets ``blockIdx.x`` on its outer spatial loops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tilewright.ir import ForKind, IntImm, SeqStmt
from tilewright.meta_schedule.analysis import TILING_STRUCTURE, annotation, loop_of
from tilewright.meta_schedule.schedule_rule.reduction_loops import SPATIAL, loop_iter_type
from tilewright.meta_schedule.schedule_rule.rule import ScheduleRule
from tilewright.schedule import BlockRV, ExprRV, LoopRV, Schedule

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext
    from tilewright.target import Target

DEFAULT_THREAD_EXTENTS = (32, 64, 128, 256, 512, 1024)

FactorSampler = Callable[[int], ExprRV | int]


class AutoBind(ScheduleRule):
    """Bind the outer loops of every block that no thread binding covers yet.

    Args:
        max_threadblocks: the most thread blocks one loop is spread over before a serial
            outer loop takes the rest.
        thread_extents: candidate ``threadIdx.x`` extents (those up to the loop's extent and
            the thread limit are sampled uniformly; none fits: the limit itself).
        max_threads_per_block: the thread limit (-1: the target's ``max_num_threads``).

    Example::

        rule = AutoBind(max_threadblocks=256, thread_extents=[32, 64, 128])
        # for i_j_fused_0 in T.thread_binding(..., thread="blockIdx.x"):
        #     for i_j_fused_1 in T.thread_binding(64, thread="threadIdx.x"): ...
    """

    def __init__(
        self,
        max_threadblocks: int = 256,
        thread_extents: Sequence[int] | None = None,
        max_threads_per_block: int = -1,
    ) -> None:
        self.max_threadblocks = int(max_threadblocks)
        self.thread_extents = [int(t) for t in thread_extents or DEFAULT_THREAD_EXTENTS]
        self.max_threads_per_block = int(max_threads_per_block)
        if self.max_threadblocks < 1 or min(self.thread_extents) < 1:
            raise ValueError(
                f"AutoBind: max_threadblocks {max_threadblocks} and thread_extents "
                f"{self.thread_extents} must be positive"
            )

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        if context.target is None or not is_gpu(context.target):
            raise ValueError(f"AutoBind needs a GPU target, not {context.target}")
        if self.max_threads_per_block <= 0:
            self.max_threads_per_block = context.target.max_num_threads

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if self.max_threads_per_block <= 0:
            raise ValueError("AutoBind: initialise it through a TuneContext with a GPU target")
        sampler = factor_sampler(sch, self.thread_extents)
        bind_block_thread_idx(
            sch, block, self.max_threadblocks, self.max_threads_per_block, sampler
        )
        return [sch]

    def __repr__(self) -> str:
        return (
            f"AutoBind(max_threadblocks={self.max_threadblocks}, "
            f"thread_extents={self.thread_extents}, "
            f"max_threads_per_block={self.max_threads_per_block})"
        )


def is_gpu(target: Target) -> bool:
    """A target whose kernels a host launches (CUDA, OpenCL, Metal)."""
    return target.kind_spec.host_kind is not None


def factor_sampler(sch: Schedule, thread_extents: Sequence[int]) -> FactorSampler:
    """``get_factor(max_extent)``: one of ``thread_extents`` up to ``max_extent``, sampled
    uniformly (``sample_categorical``) when several fit; the only one, or ``max_extent``
    when none does, as a plain int."""

    def get_factor(max_extent: int) -> ExprRV | int:
        fitting = [t for t in thread_extents if t <= max_extent]
        if not fitting:
            return max_extent
        if len(fitting) == 1:
            return fitting[0]
        return sch.sample_categorical(fitting, [1.0 / len(fitting)] * len(fitting))

    return get_factor


def bind_spatial_loop(
    sch: Schedule,
    loop: LoopRV,
    max_threadblocks: int,
    max_threads_per_block: int,
    get_factor: FactorSampler,
) -> list[LoopRV]:
    """Bind a spatial loop to ``blockIdx.x`` and ``threadIdx.x``; the bound loops (and the
    serial loop of what is left, for a loop too long for the grid)."""
    extent = loop_of(sch, loop).extent
    size = extent.value if isinstance(extent, IntImm) else None
    if size is not None and size <= max_threadblocks * max_threads_per_block:
        factor = get_factor(min(size, max_threads_per_block))
        outer, inner = sch.split(loop, [None, factor])
        sch.bind(outer, "blockIdx.x")
        sch.bind(inner, "threadIdx.x")
        return [outer, inner]
    rest, blocks, threads = sch.split(loop, [None, max_threadblocks, max_threads_per_block])
    sch.reorder(blocks, threads, rest)
    sch.bind(blocks, "blockIdx.x")
    sch.bind(threads, "threadIdx.x")
    return [blocks, threads, rest]


def bind_block_thread_idx(
    sch: Schedule,
    block: BlockRV,
    max_threadblocks: int,
    max_threads_per_block: int,
    get_factor: FactorSampler,
) -> None:
    """Bind the outer spatial loops of ``block`` unless its loops are bound already.

    The loops fused are the outermost ones that drive spatial iterators only, up to the
    first loop that is not serial or holds more than one statement (that one included) —
    and, for a block already under ``threadIdx``, up to that loop (then bound to
    ``blockIdx.x`` alone). A block without such a loop gets a unit loop to bind.
    """
    site = sch.state.block_ref_site(block, "AutoBind")
    if site.scope_index() < 0 or annotation(site.block, TILING_STRUCTURE) is not None:
        return
    loops = site.enclosing_loops()
    n = len(loops)
    i_block_idx = i_thread_idx = i_multi_child = i_spatial = -1
    for i, loop in enumerate(loops):
        tag = loop.thread_tag if loop.kind is ForKind.THREAD_BINDING else ""
        if tag.startswith("blockIdx") and i_block_idx == -1:
            i_block_idx = i
        if tag.startswith("threadIdx") and i_thread_idx == -1:
            i_thread_idx = i
        if loop.kind is not ForKind.SERIAL and i_multi_child == -1:
            i_multi_child = i
        if isinstance(loop.body, SeqStmt) and len(loop.body.seq) > 1 and i_multi_child == -1:
            i_multi_child = i + 1
        if loop_iter_type(loop) == SPATIAL and i_spatial == i - 1:
            i_spatial = i
    if i_multi_child == -1:
        i_multi_child = n
    if i_block_idx != -1:
        # Bound to blocks already: done when threads are bound too. Blocks without threads
        # (TVM stops with an error there) are left as they are.
        return
    loop_rvs = sch.get_loops(block)
    if i_spatial == -1:
        # No spatial loop on top: a unit loop above everything stands for one.
        unit = sch.add_unit_loop(loop_rvs[0] if loop_rvs else block)
        loop_rvs.insert(0, unit)
        i_spatial = 0
        i_thread_idx += 1 if i_thread_idx != -1 else 0
        i_multi_child += 1
    if i_thread_idx != -1:
        num_fuse = min(i_multi_child, i_thread_idx, i_spatial + 1)
        if num_fuse == 0:
            return  # the outermost loop is not serial: nothing to fuse (TVM fails here)
        fused = sch.fuse(*loop_rvs[:num_fuse])
        sch.bind(fused, "blockIdx.x")
        return
    num_fuse = min(i_multi_child, i_spatial + 1)
    if num_fuse == 0:
        return
    fused = sch.fuse(*loop_rvs[:num_fuse])
    bind_spatial_loop(sch, fused, max_threadblocks, max_threads_per_block, get_factor)
