"""The tile layer: layouts, tile-primitive statements, variant dispatch and ``LowerTIRx``.

Example::

    from tilewright.tirx import S, TileLayout
    from tilewright.tirx.transform import LowerTIRx

    lowered = LowerTIRx("cuda")(mod)
"""

from tilewright.tirx import transform
from tilewright.tirx.dispatch import Decision, DispatchError, ExecContext, Variant, dispatch
from tilewright.tirx.layout import (
    ComposeLayout,
    Iter,
    LayoutError,
    S,
    SwizzleLayout,
    TileLayout,
)
from tilewright.tirx.stmt import DeviceEntry, ScopeId, TileOp, has_tirx
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
