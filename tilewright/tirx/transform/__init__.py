"""Passes of the tile layer: ``LowerTIRx`` turns tile programs into plain TIR for the pipeline.

Example::

    from tilewright.tirx.transform import LowerTIRx
    lowered = LowerTIRx()(mod)
"""

from tilewright.tirx.transform.lower_tirx import LowerTIRx, has_tirx

__all__ = ["LowerTIRx", "has_tirx"]
