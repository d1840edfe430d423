"""``RewriteParallelVectorizeUnroll``: turns the root block's ``meta_schedule.parallel`` /
``vectorize`` / ``unroll_explicit`` / ``unroll_implicit`` annotations into parallel and
vectorized loops and unroll pragmas on every loop nest."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tilewright.ir import Block, For, ForKind, IntImm
from tilewright.meta_schedule.analysis import (
    AUTO_UNROLL_MAX_STEP,
    PARALLEL,
    UNROLL_EXPLICIT,
    UNROLL_EXPLICIT_PRAGMA,
    UNROLL_IMPLICIT,
    VECTORIZE,
)
from tilewright.meta_schedule.postproc.contiguous import contiguous_loops
from tilewright.meta_schedule.postproc.loops import has_nested_block, is_single_stmt, loop_iter_type
from tilewright.meta_schedule.postproc.loops import root_block as root_of
from tilewright.meta_schedule.postproc.postproc import Postproc
from tilewright.schedule import BlockRV, LoopRV, Schedule, ScheduleError

KEYS = (PARALLEL, VECTORIZE, UNROLL_EXPLICIT, UNROLL_IMPLICIT)


@dataclass(frozen=True)
class Limits:
    """The root's annotations (None: absent) and, per block, how many loops to fuse."""

    max_parallel: int | None = None
    max_vectorize: int | None = None
    unroll_explicit: int | None = None
    unroll_implicit: int | None = None
    n_parallel: int = 0
    n_vectorize: int = 0


class RewriteParallelVectorizeUnroll(Postproc):
    """Applies the root block's parallel/vectorize/unroll annotations, set by the rule
    ``ParallelizeVectorizeUnroll`` (TVM's ``RewriteParallelVectorizeUnroll``).

    The annotations are removed; then for every block under the root (nested blocks too):

    - parallel: the outer loops that drive only spatial iterators, are serial and not
      annotated are fused and parallelized, up to the first whose extent takes the product
      past ``meta_schedule.parallel`` or that holds several statements (both included);
    - vectorize (a block with no block inside): the inner spatial loops holding one
      statement each, whose accesses stay contiguous, are fused and vectorized while the
      product stays within ``meta_schedule.vectorize``; vectorizing wins the loops both want;
    - unroll: the outermost loop gets ``pragma_auto_unroll_max_step = N`` and
      ``pragma_unroll_explicit = 1`` (explicit) or ``0`` (implicit) when N > 0.

    Loops whose extents multiply to 1 are not worth parallelizing or vectorizing.

    Example::

        # root: meta_schedule.parallel = 64, meta_schedule.vectorize = 8,
        #       meta_schedule.unroll_explicit = 16
        # for i, j in T.grid(16, 8)  ->  for i in T.parallel(16):
        #                                    for j in T.vectorized(8):  (i annotated)
        RewriteParallelVectorizeUnroll().apply(sch)
    """

    def apply(self, sch: Schedule) -> bool:
        try:
            while (found := _take_root_annotations(sch)) is not None:
                root, limits = found
                for block in _blocks_below(sch, root):
                    _rewrite_block(sch, block, limits)
        except ScheduleError:
            return False
        return True


def _int(value: object) -> int | None:
    if isinstance(value, IntImm):
        return value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _take_root_annotations(sch: Schedule) -> tuple[BlockRV, Limits] | None:
    """The first root block carrying one of the annotations, with their values; the
    annotations are removed from it."""
    for func_name, func in sch.mod.items():
        root = root_of(func)
        if root is None:
            continue
        values = dict(root.annotations)
        present = [key for key in KEYS if key in values]
        if not present:
            continue
        ref = sch.get_block(root.name, func_name)
        for key in present:
            sch.unannotate(ref, key)
        # A value that is not an integer counts as absent (TVM reads only integers).
        parallel, vectorize, explicit, implicit = (_int(values.get(key)) for key in KEYS)
        return ref, Limits(parallel, vectorize, explicit, implicit)
    return None


def _blocks_below(sch: Schedule, root: BlockRV) -> list[BlockRV]:
    """Every block under ``root``, depth first, the last child first (TVM's order)."""
    order: list[BlockRV] = []
    stack = sch.get_child_blocks(root)
    seen: set[str] = set()
    while stack:
        block = stack.pop()
        order.append(block)
        for child in sch.get_child_blocks(block):
            name = _node(sch, child).name
            if name not in seen:
                seen.add(name)
                stack.append(child)
    return order


def _node(sch: Schedule, block: BlockRV) -> Block:
    node = sch.get(block)
    assert isinstance(node, Block)
    return node


def _rewrite_block(sch: Schedule, block: BlockRV, limits: Limits) -> None:
    loop_rvs = sch.get_loops(block)
    if not loop_rvs:
        return
    limits = _plan(sch, block, loop_rvs, limits)
    if limits.n_parallel > 0:
        head = loop_rvs[: limits.n_parallel]
        fused = sch.fuse(*head) if len(head) > 1 else head[0]
        sch.parallel(fused)
        loop_rvs[: limits.n_parallel] = [fused] * limits.n_parallel
    if limits.n_vectorize > 0:
        tail = loop_rvs[len(loop_rvs) - limits.n_vectorize :]
        fused = sch.fuse(*tail) if len(tail) > 1 else tail[0]
        sch.vectorize(fused)
        loop_rvs[len(loop_rvs) - limits.n_vectorize :] = [fused] * limits.n_vectorize
    explicit, implicit = limits.unroll_explicit, limits.unroll_implicit
    max_step = explicit if explicit is not None else implicit
    if max_step is not None and max_step > 0:
        sch.annotate(loop_rvs[0], AUTO_UNROLL_MAX_STEP, max_step)
        sch.annotate(loop_rvs[0], UNROLL_EXPLICIT_PRAGMA, int(explicit is not None))


def _plain(loop: For) -> bool:
    # TVM stops at a bound or annotated loop; a loop already parallel or vectorized (by an
    # earlier block of the same nest) stops here too, since fusing it would make it serial.
    return loop.kind is ForKind.SERIAL and not loop.annotations


def _plan(sch: Schedule, block: BlockRV, loop_rvs: list[LoopRV], limits: Limits) -> Limits:
    """How many outer loops to parallelize and inner loops to vectorize (-1: none)."""
    if limits.max_parallel is None and limits.max_vectorize is None:
        return limits
    fors = [_loop(sch, rv) for rv in loop_rvs]
    kinds = [loop_iter_type(f) for f in fors]
    n_parallel = n_vectorize = -1
    if limits.max_parallel is not None:
        n_parallel = _parallel_count(fors, kinds, limits.max_parallel)
    if limits.max_vectorize is not None and not has_nested_block(_node(sch, block)):
        most = contiguous_loops(sch.get_realize(block), fors)
        n_vectorize = _vectorize_count(fors, kinds, limits.max_vectorize, most)
    if n_parallel != -1 and n_vectorize != -1:
        n_parallel = min(n_parallel, len(fors) - n_vectorize)
    return replace(limits, n_parallel=n_parallel, n_vectorize=n_vectorize)


def _loop(sch: Schedule, rv: LoopRV) -> For:
    node = sch.get(rv)
    assert isinstance(node, For)
    return node


def _parallel_count(fors: list[For], kinds: list[str], max_extent: int) -> int:
    """Outer loops up to the one taking the product past ``max_extent`` or holding several
    statements (included); -1 when their extents multiply to 1."""
    count, product = 0, 1
    for loop, kind in zip(fors, kinds):
        if kind != "S" or not _plain(loop) or not isinstance(loop.extent, IntImm):
            break
        count, product = count + 1, product * loop.extent.value
        if product > max_extent or not is_single_stmt(loop.body):
            break
    return -1 if product == 1 else count


def _vectorize_count(fors: list[For], kinds: list[str], max_extent: int, most: int) -> int:
    """Inner loops, at most ``most``, each holding one statement, while the product stays
    within ``max_extent``; -1 when the loops looked at multiply to 1."""
    count, product = 0, 1
    for loop, kind in zip(reversed(fors), reversed(kinds)):
        if kind != "S" or count >= most or not _plain(loop):
            break
        if not is_single_stmt(loop.body) or not isinstance(loop.extent, IntImm):
            break
        if loop.extent.value <= 0:
            break
        product *= loop.extent.value
        if product > max_extent:
            break
        count += 1
    return -1 if product == 1 else count
