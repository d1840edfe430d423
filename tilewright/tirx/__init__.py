"""The tile layer: layouts now; execution scopes, tile primitives and LowerTIRx to come.

Example::

    from tilewright.tirx import S, TileLayout
"""

from tilewright.tirx.layout import (
    ComposeLayout,
    Iter,
    LayoutError,
    S,
    SwizzleLayout,
    TileLayout,
)

__all__ = ["ComposeLayout", "Iter", "LayoutError", "S", "SwizzleLayout", "TileLayout"]
