"""Passes of the tile layer: ``LowerTIRx`` turns tile programs into plain TIR for the pipeline.

Example::

    from tilewright.tirx.transform import LowerTIRx
    lowered = LowerTIRx()(mod)
"""

from tilewright.ir.tile import has_tirx
from tilewright.tirx.transform.lower_tirx import LowerTIRx, TIRxError

__all__ = ["LowerTIRx", "TIRxError", "has_tirx"]
