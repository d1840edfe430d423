"""The ``T`` namespace of tile programs (``from tilewright.script import tirx as T``).

Every name of the TIR namespace (``T.prim_func``, ``T.match_buffer``, dtypes, ...) plus the
tile layer's: ``T.device_entry``, ``T.cta_id``, ``T.warpgroup_id``, ``T.warp_id``,
``T.lane_id``, ``T.thread_id``, ``T.cuda.*``, ``T.address_of``, ``T.alloc_buffer(...,
layout=)``, the layout classes, ``T.wgmma_accumulator_layout`` and
``T.mma_accumulator_layout``. Tile primitives are in ``tilewright.script.tirx.tile`` (``Tx``).
"""

from tilewright.layout import (
    ComposeLayout,
    S,
    SwizzleLayout,
    TileLayout,
    mma_accumulator_layout,
    wgmma_accumulator_layout,
)
from tilewright.script.tir import *  # noqa: F403 - this namespace extends TIR's
from tilewright.script.tir import __getattr__
from tilewright.script.tirx import cuda, tile
from tilewright.script.tirx.buffers import alloc_buffer, decl_buffer, match_buffer
from tilewright.script.tirx.pointers import address_of
from tilewright.script.tirx.scopes import (
    cta_id,
    device_entry,
    lane_id,
    thread_id,
    warp_id,
    warpgroup_id,
)

__all__ = [
    *[n for n in dir() if not n.startswith("_")],
]
