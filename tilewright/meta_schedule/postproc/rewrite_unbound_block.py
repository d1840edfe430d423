"""``RewriteUnboundBlock``: binds every block that no GPU thread runs yet to blockIdx.x and
threadIdx.x, so that the whole program becomes kernels."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilewright.ir import Block, For, ForKind, PrimFunc, Stmt
from tilewright.meta_schedule.analysis import TILING_STRUCTURE, annotation, extent_of
from tilewright.meta_schedule.postproc.loops import (
    is_block_idx,
    is_single_stmt,
    is_thread_idx,
    loop_iter_type,
    root_block,
)
from tilewright.meta_schedule.postproc.postproc import Postproc
from tilewright.schedule import BlockRV, LoopRV, Schedule, ScheduleError
from tilewright.schedule.tree import children

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext


class RewriteUnboundBlock(Postproc):
    """Binds the blocks not yet under both a blockIdx and a threadIdx loop (TVM's
    ``RewriteUnboundBlock``).

    A block's outer loops that drive only spatial iterators and hold only one statement
    are fused; the fused loop is split into ``[None, min(extent, max_threads)]`` bound to
    blockIdx.x and threadIdx.x, or, when that would need more than ``max_threadblocks``
    thread blocks, into ``[None, max_threadblocks, max_threads]`` with the two inner parts
    moved out and bound (each thread then loops over the rest). ``max_threads`` is the
    target's ``max_num_threads``. A block already under a threadIdx loop (a cross-thread
    reduction) only gets its outer loops bound to blockIdx.x; a block with no spatial outer
    loop gets a unit loop to bind; a block under a blockIdx loop, or tiled by
    MultiLevelTiling, is left alone.

    Args:
        max_threadblocks: the most thread blocks one kernel is given before each thread
            takes several iterations.

    Example::

        post = RewriteUnboundBlock(max_threadblocks=256)
        post._initialize_with_tune_context(ctx)   # ctx.target: "cuda" (1024 threads)
        post.apply(sch)   # for i, j in T.grid(64, 64) -> blockIdx.x (4) x threadIdx.x (1024)
    """

    def __init__(self, max_threadblocks: int = 256) -> None:
        self.max_threadblocks = int(max_threadblocks)
        self.max_threads_per_block: int | None = None

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        if context.target is None:
            raise ValueError("RewriteUnboundBlock needs a target (its max_num_threads)")
        self.max_threads_per_block = int(context.target.max_num_threads)

    def apply(self, sch: Schedule) -> bool:
        if self.max_threads_per_block is None:
            raise ValueError(
                "RewriteUnboundBlock has no target: initialise it through a TuneContext"
            )
        for func_name, func in sch.mod.items():
            for name in unbound_blocks(func):
                try:
                    self._bind(sch, sch.get_block(name, func_name))
                except ScheduleError:
                    return False
        return True

    def __repr__(self) -> str:
        return f"RewriteUnboundBlock(max_threadblocks={self.max_threadblocks})"

    def _bind(self, sch: Schedule, block: BlockRV) -> None:
        node = sch.get(block)
        assert isinstance(node, Block)
        if annotation(node, TILING_STRUCTURE) is not None:
            return
        site = sch.state.block_ref_site(block, "RewriteUnboundBlock")
        loops = site.enclosing_loops()
        i_block = next((i for i, f in enumerate(loops) if is_block_idx(f)), -1)
        i_thread = next((i for i, f in enumerate(loops) if is_thread_idx(f)), -1)
        if i_block != -1:
            return  # already a kernel's body (with threads, or one thread per block)
        n_fuse = _fusible_prefix(loops)
        if n_fuse == 0:
            # No spatial loop outside: a unit loop, outside all of them, is bound instead.
            first: BlockRV | LoopRV = sch.get_loops(block)[0] if loops else block
            fused = sch.add_unit_loop(first)
        else:
            outer = sch.get_loops(block)[:n_fuse]
            fused = sch.fuse(*outer) if n_fuse > 1 else outer[0]
        if i_thread != -1:
            sch.bind(fused, "blockIdx.x")
        else:
            self._bind_spatial(sch, fused)

    def _bind_spatial(self, sch: Schedule, loop: LoopRV) -> None:
        assert self.max_threads_per_block is not None
        threads, blocks = self.max_threads_per_block, self.max_threadblocks
        extent = extent_of(sch, loop)
        if extent is not None and extent <= blocks * threads:
            bx, tx = sch.split(loop, [None, min(extent, threads)])
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
            return
        rest, bx, tx = sch.split(loop, [None, blocks, threads])
        sch.reorder(bx, tx, rest)
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")


def _fusible_prefix(loops: list[For]) -> int:
    """How many outer loops to fuse: the leading serial, unannotated loops that drive only
    spatial iterators, up to the first one holding several statements (inclusive). A bound
    loop is not serial, so a threadIdx loop ends the prefix."""
    count = 0
    for loop in loops:
        if loop.kind is not ForKind.SERIAL or loop.annotations:
            break
        if loop_iter_type(loop) != "S":
            break
        count += 1
        if not is_single_stmt(loop.body):
            break
    return count


def unbound_blocks(func: PrimFunc) -> list[str]:
    """Names of the blocks in the root block's scope that some path reaches without passing
    both a blockIdx and a threadIdx loop, in program order."""
    root = root_block(func)
    if root is None:
        return []
    names: list[str] = []

    def visit(stmt: Stmt, in_block: bool, in_thread: bool) -> None:
        if isinstance(stmt, Block):
            names.append(stmt.name)
            return
        if isinstance(stmt, For):
            in_block = in_block or is_block_idx(stmt)
            in_thread = in_thread or is_thread_idx(stmt)
            if in_block and in_thread:
                return
        for child in children(stmt):
            visit(child, in_block, in_thread)

    for child in children(root):
        visit(child, False, False)
    return names
