"""Thread partitions of a copy: align two layouts, carve ``[outer, threads, vec]``, find vectors.

Input: the global and shared layouts of a copy, already sliced to its region. Output: both
layouts refined to common shards in the global side's stride-descending order, then viewed as
``[outer, threads, vec]`` so that ``layout.apply(f, tid, v, shape=parts)`` gives each side's
offset. This is the layout half of the ``gmem_smem`` copy dispatch.
"""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.layout.grouping import LayoutError, normalize_shape, refine
from tilewright.layout.tile_layout import TileLayout


def contiguous_tail(layout: TileLayout) -> int:
    """How many elements sit contiguously at stride 1 at the innermost end of ``layout``.

    Example: ``contiguous_tail(S[32, 32]) == 1024``; ``contiguous_tail(S[(4, 8) : (1, 4)]) == 1``.
    """
    shards = layout.canonicalize().shard
    last = shards[-1]
    if last.is_memory and last.stride == 1:
        return last.extent
    return 1


def align(driver: TileLayout, follower: TileLayout) -> tuple[TileLayout, TileLayout]:
    """Both layouts on common shards, reordered so ``driver``'s strides descend.

    Both inputs index the same logical region row-major; so do the outputs, in a new order in
    which walking the driver is walking its memory. Example::

        >>> align(S[(4, 8) : (1, 4)], S[4, 8])    # a column-major driver
        (S[(8, 4) : (4, 1)], S[(8, 4) : (1, 8)])
    """
    if driver.size() != follower.size():
        raise LayoutError(f"cannot align layouts of {driver.size()} and {follower.size()} elements")
    d_shards, f_shards = refine(driver.canonicalize().shard, follower.canonicalize().shard)
    d, f = TileLayout(d_shards), TileLayout(f_shards)
    order = d.canonical_order()
    return d.permute(order), f.permute(order)


def partition(layout: TileLayout, parts: Sequence[int]) -> TileLayout:
    """``layout`` viewed as ``parts`` (e.g. ``[outer, threads, vec]``), shards split to match.

    Raises ``LayoutError`` when the element counts differ or an extent does not divide.
    Example: ``partition(S[32, 32], [8, 32, 4])`` is ``S[(8, 32, 4) : (128, 4, 1)]``.
    """
    dims = normalize_shape(parts, "partition")
    return layout.regroup(dims)
