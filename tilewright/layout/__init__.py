"""Tile layouts: ``S[...]``, ``TileLayout``, swizzles and the algebra the tile primitives use.

Example::

    from tilewright.tirx.layout import S, TileLayout

    layout = TileLayout(S[(32, 32) : (32, 1)])
    layout.apply(3, 4)["m"]                  # 100
"""

from tilewright.tirx.layout.builder import S, laneid, tid, tx, warpid
from tilewright.tirx.layout.grouping import LayoutError, refine
from tilewright.tirx.layout.partition import align, contiguous_tail, partition
from tilewright.tirx.layout.shard import Iter
from tilewright.tirx.layout.swizzle import ComposeLayout, SwizzleLayout
from tilewright.tirx.layout.tile_layout import TileLayout

__all__ = [
    "S",
    "ComposeLayout",
    "Iter",
    "LayoutError",
    "SwizzleLayout",
    "TileLayout",
    "align",
    "contiguous_tail",
    "laneid",
    "partition",
    "refine",
    "tid",
    "tx",
    "warpid",
]
