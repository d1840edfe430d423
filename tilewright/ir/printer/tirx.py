"""Printing tile-layer IR: kernel entries, scope ids, tile ops, layouts and tirx intrinsics.

Input: the ``StmtPrinter`` printing a tree and a node of ``tilewright.ir.tile``. Output: script
lines that ``from tilewright.script import tirx as T`` (and ``tile as Tx``) parse back, e.g.
``Tx.warp.copy(A_smem[0:32, 0:32], A[0:32, 0:32])`` and ``lane_id = T.lane_id([32])``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilewright.ir import BufferRegion, Call, Node
from tilewright.ir.intrinsics import ADDRESS_OF, CTA_SYNC, Intrinsic, lookup_or_none
from tilewright.ir.stmt import Stmt
from tilewright.ir.tile import KEYWORD_ARGS, DeviceEntry, ScopeId, TileOp, has_tirx

if TYPE_CHECKING:
    from tilewright.ir.printer.expr import ExprPrinter
    from tilewright.ir.printer.stmt import StmtPrinter

HEADER_TIRX = (
    "from tilewright.script import tirx as T",
    "from tilewright.script.tirx import tile as Tx",
    "from tilewright.layout import S, laneid, tid, tx, warpid",
)
# The tile intrinsics whose script spelling parses back to the same call.
_PRETTY_CALLS: dict[Intrinsic, str] = {CTA_SYNC: "T.cuda.cta_sync", ADDRESS_OF: "T.address_of"}


def uses_tirx(node: Node) -> bool:
    """True when ``node`` holds tile-layer statements or a buffer with a layout."""
    return has_tirx(node)


def print_tile_stmt(printer: StmtPrinter, s: Stmt) -> bool:
    """Emit ``s`` when it is a tile-layer statement; False for any other statement."""
    if isinstance(s, DeviceEntry):
        printer.emit("T.device_entry()")
        printer.stmt(s.body)
        return True
    if isinstance(s, ScopeId):
        names = ", ".join(printer.define_var(v) for v in s.vars)
        extents = ", ".join(str(e) for e in s.extents)
        printer.emit(f"{names} = T.{s.kind}([{extents}])")
        printer.stmt(s.body)
        return True
    if isinstance(s, TileOp):
        args = [
            printer.region(a) if isinstance(a, BufferRegion) else printer.expr(a) for a in s.args
        ]
        trailing = len(s.args)
        while trailing and not isinstance(s.args[trailing - 1], BufferRegion):
            trailing -= 1
        keywords = KEYWORD_ARGS.get(s.op, ())[: len(s.args) - trailing]
        if keywords:
            first = len(args) - len(keywords)
            args[first:] = [f"{key}={text}" for key, text in zip(keywords, args[first:])]
        args += [f"{key}={printer.attr_value(value)}" for key, value in s.attrs]
        printer.emit(f"Tx.{s.scope}.{s.op}({', '.join(args)})")
        return True
    return False


def tirx_call(printer: ExprPrinter, e: Call) -> str | None:
    """``T.cuda.cta_sync()`` / ``T.address_of(A[i])`` for the calls that parse back so."""
    intrinsic = lookup_or_none(e.op)
    name = _PRETTY_CALLS.get(intrinsic) if intrinsic is not None else None
    if name is None:
        return None
    return f"{name}({printer.args(*e.args)})"
