"""The tile layer's lowering: variant dispatch of tile primitives and ``LowerTIRx``.

The layouts (``tilewright.layout``) and the tile statements (``tilewright.ir.tile``) sit below
the script package; they are re-exported here for tile programs.

Example::

    from tilewright.tirx import S, TileLayout
    from tilewright.tirx.transform import LowerTIRx

    lowered = LowerTIRx("cuda")(mod)
"""

from tilewright.ir.tile import DeviceEntry, ScopeId, TileOp, has_tirx
from tilewright.layout import (
    ComposeLayout,
    Iter,
    LayoutError,
    S,
    SwizzleLayout,
    TileLayout,
)
from tilewright.tirx import transform
from tilewright.tirx.dispatch import Decision, DispatchError, ExecContext, Variant, dispatch
from tilewright.tirx.transform import LowerTIRx

__all__ = [
    "ComposeLayout",
    "Decision",
    "DeviceEntry",
    "DispatchError",
    "ExecContext",
    "Iter",
    "LayoutError",
    "LowerTIRx",
    "S",
    "ScopeId",
    "SwizzleLayout",
    "TileLayout",
    "TileOp",
    "Variant",
    "dispatch",
    "has_tirx",
    "transform",
]
