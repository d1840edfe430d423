"""Tile primitives and their variant tables: ``copy``, ``copy_async``, ``fill``, ``gemm``,
``gemm_async`` and the elementwise ones (``cast``, ``add``, ``sub``, ``mul``, ``maximum``,
``minimum``, ``relu``, ``gelu``, ``exp``).

``PRIMITIVES`` maps each primitive's name to its one literal table of variants; ``LowerTIRx``
dispatches every ``TileOp`` through it.
"""

from tilewright.tirx.dispatch import Variant
from tilewright.tirx.ops.copy import COPY_VARIANTS
from tilewright.tirx.ops.copy_async import COPY_ASYNC_VARIANTS
from tilewright.tirx.ops.copy_gmem_smem import GmemSmemPlan, plan_gmem_smem
from tilewright.tirx.ops.elementwise_ops import BINARY, ELEMENTWISE_VARIANTS, UNARY
from tilewright.tirx.ops.fill import FILL_VARIANTS
from tilewright.tirx.ops.gemm import GEMM_ASYNC_VARIANTS, GEMM_VARIANTS

PRIMITIVES: dict[str, tuple[Variant, ...]] = {
    "copy": COPY_VARIANTS,
    "copy_async": COPY_ASYNC_VARIANTS,
    "fill": FILL_VARIANTS,
    "gemm": GEMM_VARIANTS,
    "gemm_async": GEMM_ASYNC_VARIANTS,
    **{name: ELEMENTWISE_VARIANTS for name in (*UNARY, *BINARY)},
}

__all__ = [
    "COPY_ASYNC_VARIANTS",
    "COPY_VARIANTS",
    "ELEMENTWISE_VARIANTS",
    "FILL_VARIANTS",
    "GEMM_ASYNC_VARIANTS",
    "GEMM_VARIANTS",
    "PRIMITIVES",
    "GmemSmemPlan",
    "plan_gmem_smem",
]
