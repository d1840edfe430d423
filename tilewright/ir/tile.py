"""Tile-layer statements: kernel entry, execution-scope ids and tile primitives as IR nodes.

Input: what ``T.device_entry()``, ``T.cta_id([...])`` and ``Tx.<scope>.copy(...)`` build in a
script. Output: ordinary ``Stmt`` nodes (generic visitors, mutators and structural equality
apply) that the tile layer's ``LowerTIRx`` pass replaces with loops, thread bindings and
intrinsics.
"""

from __future__ import annotations

from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.expr import PrimExpr, Var
from tilewright.ir.functor import pre_order_visit
from tilewright.ir.module import IRModule
from tilewright.ir.node import Node, node
from tilewright.ir.stmt import Attrs, Stmt

EXEC_SCOPES = ("thread", "warp", "warpgroup", "cta")
SCOPE_ID_KINDS = ("cta_id", "warpgroup_id", "warp_id", "lane_id", "thread_id")
WARP_SIZE = 32
WARPGROUP_SIZE = 128
# Trailing expression arguments of tile ops that the script spells as keywords, by op.
# Only expression arguments after the last region print so (``copy_async``'s mbar is optional).
KEYWORD_ARGS: dict[str, tuple[str, ...]] = {
    "gemm": ("accum",),
    "gemm_async": ("accum",),
    "copy_async": ("mbar",),
}


@node
class DeviceEntry(Stmt):
    """``T.device_entry()``: ``body`` (the rest of the function) runs on the device as a kernel."""

    body: Stmt


@node
class ScopeId(Stmt):
    """``bx = T.cta_id([n])``, ``lane = T.lane_id([32])``, ...: launch shape and index variables.

    ``kind`` is one of ``cta_id``, ``warpgroup_id``, ``warp_id``, ``lane_id``, ``thread_id``;
    ``vars`` has one variable per entry of ``extents``; ``body`` is the rest of the kernel,
    where they are bound.
    """

    vars: tuple[Var, ...]
    kind: str
    extents: tuple[int, ...]
    body: Stmt

    def __post_init__(self) -> None:
        if self.kind not in SCOPE_ID_KINDS:
            raise ValueError(f"ScopeId kind must be one of {SCOPE_ID_KINDS}, got {self.kind!r}")
        if len(self.vars) != len(self.extents) or not self.extents:
            raise ValueError(
                f"T.{self.kind}: {len(self.extents)} extents for {len(self.vars)} variables"
            )


TileArg = BufferRegion | PrimExpr


@node
class TileOp(Stmt):
    """A tile primitive ``Tx.<scope>.<op>(*args)``, e.g. ``Tx.warp.copy(dst, src)``.

    ``scope`` is the execution scope that runs it together (``thread``, ``warp``,
    ``warpgroup``, ``cta``); ``attrs`` holds options such as ``dispatch`` (a forced variant).
    """

    op: str
    scope: str
    args: tuple[TileArg, ...]
    attrs: Attrs = ()

    def __post_init__(self) -> None:
        if self.scope not in EXEC_SCOPES:
            raise ValueError(
                f"Tx.{self.scope}.{self.op}: unknown execution scope {self.scope!r}; "
                f"expected one of {', '.join(EXEC_SCOPES)}"
            )

    def attr(self, key: str, default: object = None) -> object:
        """The value of option ``key`` (``None`` when absent)."""
        for name, value in self.attrs:
            if name == key:
                return value
        return default


def has_tirx(tree: Node) -> bool:
    """True when ``tree`` (a module, function or any node) holds tile-layer IR: a kernel
    entry, a scope id, a tile op or a buffer with a layout.

    This is the test ``tw.build`` uses to decide whether to run ``LowerTIRx`` first.
    Example: ``has_tirx(kernel)`` is True for the seed page's program.
    """
    found: list[Node] = []

    def look(item: Node) -> bool:
        if isinstance(item, DeviceEntry | ScopeId | TileOp) or (
            isinstance(item, Buffer) and item.layout is not None
        ):
            found.append(item)
        return not found

    roots = [f for _, f in tree.items()] if isinstance(tree, IRModule) else [tree]
    for root in roots:
        pre_order_visit(root, look)
    return bool(found)
