"""Tile layouts: ``S[...]``, ``TileLayout``, swizzles and the algebra the tile primitives use.

The layout classes derive from ``tilewright.ir.Layout`` (the type of ``Buffer.layout``); the
algebra uses ``tilewright.arith``, so this package sits between ``arith`` and ``script``.

Example::

    from tilewright.layout import S, TileLayout

    layout = TileLayout(S[(32, 32) : (32, 1)])
    layout.apply(3, 4)["m"]                  # 100
"""

from tilewright.ir.layout import Layout
from tilewright.layout.builder import S, laneid, tid, tx, warpid
from tilewright.layout.fragment import (
    mma_accumulator_layout,
    mma_fragment_coord,
    wgmma_accumulator_layout,
    wgmma_fragment_coord,
)
from tilewright.layout.grouping import LayoutError, refine
from tilewright.layout.partition import align, contiguous_tail, partition
from tilewright.layout.shard import Iter
from tilewright.layout.swizzle import ComposeLayout, SwizzleLayout
from tilewright.layout.tile_layout import TileLayout

__all__ = [
    "S",
    "ComposeLayout",
    "Iter",
    "Layout",
    "LayoutError",
    "SwizzleLayout",
    "TileLayout",
    "align",
    "contiguous_tail",
    "laneid",
    "mma_accumulator_layout",
    "mma_fragment_coord",
    "partition",
    "refine",
    "tid",
    "tx",
    "warpid",
    "wgmma_accumulator_layout",
    "wgmma_fragment_coord",
]
