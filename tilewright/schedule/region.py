"""Block-level region analysis: a block's access of a buffer, relaxed over chosen loops, as the
region one iteration of a loop touches (used by compute_at, reverse_compute_at and caching)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.int_set import IntervalSet, eval_set
from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.expr import IntImm, Range, Var
from tilewright.ir.functor import substitute
from tilewright.ir.stmt import BlockRealize, For, ForKind, Stmt

Path = tuple[Stmt, ...]


def relaxes_thread(scope: str, thread_tag: str) -> bool:
    """Whether a buffer of ``scope`` is shared by the threads of ``thread_tag``, so that a
    region computed for one thread must cover what every thread of that axis touches.

    Global memory is shared by every thread, shared memory by the threads of one block
    (``threadIdx``, ``vthread``), local memory by none.

    Example::

        >>> relaxes_thread("shared", "threadIdx.x"), relaxes_thread("shared", "blockIdx.x")
        (True, False)
    """
    if scope.startswith("global"):
        return True
    if scope.startswith("shared"):
        return thread_tag.startswith(("threadIdx", "vthread"))
    return False


def relaxed_domain(outer: Sequence[For], inner: Sequence[For], scope: str) -> dict[Var, Range]:
    """The loops to relax for a region seen from one iteration of the loop ``outer[-1]``:
    every loop of ``inner`` (below it) and the thread-bound loops of ``outer`` (at or above it)
    whose threads share a buffer of ``scope``."""
    dom: dict[Var, Range] = {}
    for loop in outer:
        if loop.kind is ForKind.THREAD_BINDING and relaxes_thread(scope, loop.thread_tag):
            dom[loop.loop_var] = Range(loop.min, loop.extent)
    for loop in inner:
        dom[loop.loop_var] = Range(loop.min, loop.extent)
    return dom


def access_regions(realize: BlockRealize, buffer: Buffer, *, reads: bool) -> list[BufferRegion]:
    """The regions of ``buffer`` that the block declares it reads (or writes), with its
    bindings substituted, so that they are in terms of the loops around it."""
    block = realize.block
    binding = {iv.var: v for iv, v in zip(block.iter_vars, realize.iter_values)}
    regions = block.reads if reads else block.writes
    found = []
    for region in regions:
        if region.buffer is buffer:
            found.append(substitute(region, binding))
    return found


def relax_region(
    regions: Iterable[BufferRegion],
    dom: dict[Var, Range],
    analyzer: Analyzer | None = None,
) -> list[IntervalSet] | None:
    """The union, per dimension, of ``regions`` with the variables of ``dom`` relaxed over
    their ranges; ``None`` when there is no region.

    Example::

        >>> relax_region([A[vi : vi + 3]] with vi = i_0 * 128 + i_1, {i_1: [0, 128)})
        [IntervalSet[i_0 * 128, i_0 * 128 + 129]]
    """
    ana = analyzer or Analyzer()
    result: list[IntervalSet] | None = None
    for region in regions:
        dims = []
        for rng in region.region:
            low = eval_set(rng.min, dom, ana)
            high = eval_set(ana.simplify(op.add(rng.min, rng.extent - 1)), dom, ana)
            dims.append(IntervalSet(low.min_value, high.max_value))
        result = dims if result is None else [a.union(b, ana) for a, b in zip(result, dims)]
    return result


def clip(interval: IntervalSet, dom: Range, analyzer: Analyzer) -> IntervalSet:
    """``interval`` cut to ``dom`` where an end provably lies outside it (kept otherwise)."""
    low, high = interval.min_value, interval.max_value
    first = dom.min
    last = analyzer.simplify(op.sub(op.add(dom.min, dom.extent), 1))
    if low is not None and analyzer.can_prove(op.le(low, first)):
        low = first
    if high is not None and analyzer.can_prove(op.ge(high, last)):
        high = last
    return IntervalSet(low, high)


def interval_range(interval: IntervalSet, analyzer: Analyzer | None = None) -> Range | None:
    """``[min, max]`` as a ``Range`` (``None`` if unbounded)."""
    if interval.min_value is None or interval.max_value is None:
        return None
    ana = analyzer or Analyzer()
    low = interval.min_value
    extent = ana.simplify(op.add(op.sub(interval.max_value, low), 1))
    return Range(low, extent)


def const_extent(rng: Range) -> int | None:
    return rng.extent.value if isinstance(rng.extent, IntImm) else None
