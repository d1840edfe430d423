"""Tile primitives and their variant tables: ``copy`` and ``fill``.

``PRIMITIVES`` maps each primitive's name to its one literal table of variants; ``LowerTIRx``
dispatches every ``TileOp`` through it.
"""

from tilewright.tirx.dispatch import Variant
from tilewright.tirx.ops.copy import COPY_VARIANTS
from tilewright.tirx.ops.copy_gmem_smem import GmemSmemPlan, plan_gmem_smem
from tilewright.tirx.ops.fill import FILL_VARIANTS

PRIMITIVES: dict[str, tuple[Variant, ...]] = {"copy": COPY_VARIANTS, "fill": FILL_VARIANTS}

__all__ = ["COPY_VARIANTS", "FILL_VARIANTS", "PRIMITIVES", "GmemSmemPlan", "plan_gmem_smem"]
