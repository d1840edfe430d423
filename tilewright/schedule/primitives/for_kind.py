"""Loop kinds: parallel, vectorize, unroll and bind (to a GPU thread axis)."""

from __future__ import annotations

from tilewright.ir.function import PrimFunc
from tilewright.ir.stmt import ForKind
from tilewright.schedule.legality import (
    check_compact_dataflow,
    check_parallelizable,
    check_thread_axis,
)
from tilewright.schedule.tree import Site, update


def _set_kind(site: Site, kind: ForKind, tag: str = "") -> PrimFunc:
    return site.replaced(update(site.loop, kind=kind, thread_tag=tag))


def parallel(site: Site) -> PrimFunc:
    """Run the loop's iterations in parallel (CPU threads); it may drive only spatial iterators.

    Example::

        for i in range(64):   ->   for i in T.parallel(64):
    """
    check_parallelizable("parallel", site)
    check_compact_dataflow("parallel", site)
    return _set_kind(site, ForKind.PARALLEL)


def vectorize(site: Site) -> PrimFunc:
    """Mark the loop vectorized; it may drive only spatial iterators.

    Example::

        for j in range(4):   ->   for j in T.vectorized(4):
    """
    check_parallelizable("vectorize", site)
    check_compact_dataflow("vectorize", site)
    return _set_kind(site, ForKind.VECTORIZED)


def unroll(site: Site) -> PrimFunc:
    """Mark the loop to be unrolled (any loop may be).

    Example::

        for k in range(4):   ->   for k in T.unroll(4):
    """
    return _set_kind(site, ForKind.UNROLLED)


def bind(site: Site, thread_axis: str) -> PrimFunc:
    """Bind the loop to a thread axis; a reduction may be bound only to ``threadIdx``.

    Example::

        for i_0 in range(8):   ->   for i_0 in T.thread_binding(8, thread="blockIdx.x"):
    """
    check_thread_axis("bind", site, thread_axis)
    check_parallelizable("bind", site, thread_axis)
    return _set_kind(site, ForKind.THREAD_BINDING, thread_axis)
