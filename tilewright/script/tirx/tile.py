"""``Tx``: tile primitives by execution scope (``from tilewright.script.tirx import tile as Tx``).

``Tx.warp.copy(dst, src)`` and ``Tx.cta.fill(region, value)`` build ``TileOp`` statements;
``dispatch="name"`` forces one implementation variant.

Example::

    Tx.warp.copy(A_smem[0:32, 0:32], A[0:32, 0:32])
    Tx.cta.fill(C_smem[0:64, 0:64], T.float32(0))
"""

from __future__ import annotations

from tilewright.ir import Buffer, BufferRegion, PrimExpr, attrs, op
from tilewright.ir.tile import TileOp


def _region(value: object, what: str) -> BufferRegion:
    if isinstance(value, BufferRegion):
        return value
    if isinstance(value, Buffer):
        return BufferRegion.full(value)
    raise TypeError(f"{what} must be a buffer region such as A[0:32, 0:32], got {value!r}")


class ExecScope:
    """The tile primitives of one execution scope: ``Tx.thread``, ``Tx.warp``, ..."""

    def __init__(self, name: str) -> None:
        self.name = name

    def copy(self, dst: object, src: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.copy(dst_region, src_region)``: the scope's threads copy ``src`` into
        ``dst`` together (equal dtype, equal non-unit extents)."""
        where = f"Tx.{self.name}.copy"
        args = (_region(dst, f"{where}: dst"), _region(src, f"{where}: src"))
        return TileOp("copy", self.name, args, _options(dispatch))

    def fill(self, region: object, value: object, dispatch: str | None = None) -> TileOp:
        """``Tx.<scope>.fill(region, value)``: every element of ``region`` becomes ``value``."""
        target = _region(region, f"Tx.{self.name}.fill: region")
        if isinstance(value, bool | int | float):
            value = op.convert(value, target.buffer.dtype)
        if not isinstance(value, PrimExpr):
            raise TypeError(f"Tx.{self.name}.fill: value must be a scalar, got {value!r}")
        return TileOp("fill", self.name, (target, value), _options(dispatch))

    def __repr__(self) -> str:
        return f"Tx.{self.name}"


def _options(dispatch: str | None) -> tuple:
    if dispatch is not None and not isinstance(dispatch, str):
        raise TypeError(f"dispatch must be a variant name, got {dispatch!r}")
    return attrs({"dispatch": dispatch} if dispatch else None)


thread = ExecScope("thread")
warp = ExecScope("warp")
warpgroup = ExecScope("warpgroup")
cta = ExecScope("cta")

__all__ = ["cta", "thread", "warp", "warpgroup"]
