"""``RewriteCooperativeFetch``: turns the ``meta_schedule.cooperative_fetch`` annotation of
a shared-memory cache into the loops that let a thread block fetch it together."""

from __future__ import annotations

from tilewright.ir import Block, BlockRealize, ForKind, IntImm, PrimFunc
from tilewright.meta_schedule.analysis import (
    COOPERATIVE_FETCH,
    WARP_EXECUTION,
    annotation,
    bound_tags,
    extent_of,
)
from tilewright.meta_schedule.postproc.loops import block_paths
from tilewright.meta_schedule.postproc.postproc import Postproc
from tilewright.schedule import BlockRV, LoopRV, Schedule, ScheduleError

THREAD_AXES = ("threadIdx.y", "threadIdx.x")
WARP_SIZE = 32


class RewriteCooperativeFetch(Postproc):
    """Spreads each block annotated ``meta_schedule.cooperative_fetch = vec_len`` over the
    threads of its thread block (TVM's ``RewriteCooperativeFetch``).

    The block's own loops (those holding only it, below its compute-at location) are fused
    and split into ``[None, <threadIdx.y extent>, <threadIdx.x extent>, vec_len]`` with the
    extents of the threadIdx loops around the block (``threadIdx.y`` only when bound,
    ``vec_len`` only when above 1 and dividing the fused extent); the parts are bound to
    threadIdx.y/threadIdx.x and the innermost is vectorized. A split that does not divide
    the extent adds a predicate. A block with no threadIdx loop above it is rejected.

    Example::

        # A_shared under k_0, threadIdx.x (16): for ax0, ax1 in T.grid(8, 4) becomes
        # for ax0_ax1_fused_0 in range(1):
        #     for ax0_ax1_fused_1 in T.thread_binding(16, thread="threadIdx.x"):
        #         for ax0_ax1_fused_2 in T.vectorized(2): ...
        RewriteCooperativeFetch().apply(sch)
    """

    def apply(self, sch: Schedule) -> bool:
        for func_name, func in sch.mod.items():
            lanes_bound_inside = _warp_execution(func)
            for name in annotated_blocks(func):
                try:
                    if not _rewrite(sch, sch.get_block(name, func_name), lanes_bound_inside):
                        return False
                except ScheduleError:
                    return False
        return True


def annotated_blocks(func: PrimFunc) -> list[str]:
    """Names of the blocks carrying the cooperative-fetch annotation, in program order."""
    names = []
    for path in block_paths(func):
        block = path[-1]
        assert isinstance(block, Block)
        if annotation(block, COOPERATIVE_FETCH) is not None:
            names.append(block.name)
    return names


def _vector_lanes(value: object) -> int:
    if isinstance(value, IntImm):
        return value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f"{COOPERATIVE_FETCH} annotation {value!r} is not an integer")


def _rewrite(sch: Schedule, block: BlockRV, lanes_bound_inside: bool = False) -> bool:
    lanes = _vector_lanes(annotation(sch.get(block), COOPERATIVE_FETCH))
    tags = bound_tags(sch, block)
    if "threadIdx.x" not in tags and lanes_bound_inside:
        tags["threadIdx.x"] = WARP_SIZE  # the lanes the tensor intrinsics bind
    threads = [(axis, tags[axis]) for axis in THREAD_AXES if axis in tags]
    if not threads:
        return False  # no thread of the block to share the fetch with
    sch.unannotate(block, COOPERATIVE_FETCH)
    fused = _fuse_own_loops(sch, block)
    extent = extent_of(sch, fused)
    if extent is None:
        return True  # TVM leaves a fetch of symbolic size to every thread whole
    if lanes < 1 or extent % lanes != 0:
        lanes = 1
    factors: list[int | None] = [None, *(n for _, n in threads)]
    if lanes > 1:
        factors.append(lanes)
    parts = sch.split(fused, factors)
    if lanes > 1:
        sch.vectorize(parts[-1])
    for (axis, _), part in reversed(list(zip(threads, parts[1:]))):
        sch.bind(part, axis)
    return True


def _warp_execution(func: PrimFunc) -> bool:
    """Whether a block of ``func`` is annotated ``warp_execution`` (TVM's mark of a
    tensor-core block: threadIdx.x is a warp's lanes, bound inside its intrinsics)."""
    return any(
        annotation(path[-1], WARP_EXECUTION) is not None
        for path in block_paths(func)
        if isinstance(path[-1], Block)
    )


def _fuse_own_loops(sch: Schedule, block: BlockRV) -> LoopRV:
    """Fuse the serial loops that hold only ``block`` (innermost up, stopping at a bound,
    annotated or shared loop); a unit loop stands for them when there is none."""
    site = sch.state.block_ref_site(block, "RewriteCooperativeFetch")
    inner: object = site.path[-2]  # the block's realize
    assert isinstance(inner, BlockRealize)
    own = 0
    for loop in reversed(site.enclosing_loops()):
        plain = loop.kind is ForKind.SERIAL and not loop.annotations
        if not plain or loop.body is not inner:
            break
        own += 1
        inner = loop
    if own == 0:
        return sch.add_unit_loop(block)
    loops = sch.get_loops(block)[-own:]
    return sch.fuse(*loops) if own > 1 else loops[0]
