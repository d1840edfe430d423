"""``RewriteReductionBlock``: moves the init of each reduction block out of its loops
(``decompose_reduction``), except reductions that threads share."""

from __future__ import annotations

from tilewright.ir import Block, BlockRealize, For, IterKind, PrimFunc, Var, collect_vars
from tilewright.meta_schedule.postproc.loops import is_block_idx, is_thread_idx, loop_iter_type
from tilewright.meta_schedule.postproc.postproc import Postproc
from tilewright.schedule import Schedule, ScheduleError
from tilewright.schedule.tree import walk


class RewriteReductionBlock(Postproc):
    """Decomposes every reduction block that still has its init (TVM's
    ``RewriteReductionBlock``): the init goes before the outermost loop above the block that
    is not data parallel. A block whose reduction iterators a thread-bound loop drives (a
    cross-thread reduction, lowered with its init) and a block with no such loop (every
    reduction iterator of extent 1) keep their init.

    Example::

        RewriteReductionBlock().apply(sch)   # C -> C_init before k_0, C_update
    """

    def apply(self, sch: Schedule) -> bool:
        try:
            while _rewrite_once(sch):
                pass
        except ScheduleError:
            return False
        return True


def _rewrite_once(sch: Schedule) -> int:
    rewritten = 0
    for func_name, func in sch.mod.items():
        for name in reduction_blocks(func):
            point = decompose_point(sch, func_name, name)
            if point is None:
                continue
            block = sch.get_block(name, func_name)
            loops = sch.get_loops(block)
            sch.decompose_reduction(block, loops[point])
            rewritten += 1
    return rewritten


def reduction_blocks(func: PrimFunc) -> list[str]:
    """Names of the blocks with an init whose reduction iterators no thread-bound loop
    (blockIdx or threadIdx) drives, in program order."""
    names = []
    for path in walk(func.body):
        realize = path[-1]
        if not isinstance(realize, BlockRealize) or realize.block.init is None:
            continue
        bound: set[Var] = {
            s.loop_var for s in path if isinstance(s, For) and (is_thread_idx(s) or is_block_idx(s))
        }
        block = realize.block
        if not any(
            iv.kind is IterKind.REDUCE and bound.intersection(collect_vars(value))
            for iv, value in zip(block.iter_vars, realize.iter_values)
        ):
            names.append(block.name)
    return names


def decompose_point(sch: Schedule, func_name: str, name: str) -> int | None:
    """The index, among the loops above the block in its scope, of the first loop that is
    not data parallel (None: every loop is)."""
    site = sch.state.block_site(func_name, name, "RewriteReductionBlock")
    assert isinstance(site.node, Block)
    for k, loop in enumerate(site.enclosing_loops()):
        if loop_iter_type(loop) != "S":
            return k
    return None
