"""``set_axis_separator``: record where a buffer's physical storage is split into dimensions.

TVM flattens a buffer with ``axis_separators=[k]`` into a two-dimensional physical buffer
(dimensions ``0:k`` and ``k:``), as texture memory needs. The separators are kept on the
``Buffer`` (printed as ``T.alloc_buffer(..., axis_separators=[k])``); ``flatten_buffers``
refuses such a buffer with a message, since every tilewright backend addresses flat memory.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from tilewright.ir.buffer import Buffer
from tilewright.ir.function import PrimFunc
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.primitives.caching import _buffer, swap
from tilewright.schedule.primitives.set_dtype import refuse_views
from tilewright.schedule.tree import Site

register_rules(
    {
        "axis-separator": (
            "axis separators are strictly increasing dimensions of the buffer, each in "
            "[1, ndim - 1]"
        ),
    }
)


def set_axis_separator(site: Site, kind: str, index: int, separators: Sequence[int]) -> PrimFunc:
    """Give the block's ``index``-th read (``kind="read"``) or written buffer the axis
    separators ``separators`` (a parameter's buffer too: its ``buffer_map`` entry changes).

    Example::

        sch.set_axis_separator(block_B, ("write", 0), [1])
        # B = T.alloc_buffer((128, 128), axis_separators=[1])
    """
    block = site.block
    regions = block.reads if kind == "read" else block.writes
    buffer = _buffer("set_axis_separator", site, regions, index, f"{kind}s")
    _check(site, buffer, separators)
    refuse_views("set_axis_separator", site, buffer)
    if tuple(separators) == buffer.axis_separators:
        return site.func
    new = buffer.replace(axis_separators=tuple(separators))
    body = swap(site.func.body, {buffer: new})
    buffer_map = tuple((p, new if b is buffer else b) for p, b in site.func.buffer_map)
    return site.func.replace(body=body, buffer_map=buffer_map)


def _check(site: Site, buffer: Buffer, separators: Sequence[int]) -> None:
    ndim = buffer.ndim
    ordered = all(a < b for a, b in itertools.pairwise(separators))
    if not ordered or any(not 1 <= s <= ndim - 1 for s in separators):
        raise ScheduleError(
            "set_axis_separator",
            "axis-separator",
            f"axis separators {list(separators)} of buffer {buffer.name!r} ({ndim} dimensions) "
            f"are not strictly increasing within [1, {ndim - 1}]",
            site.func,
            site.block,
        )
