"""Queries: the loops above a block, and the blocks directly under a block or loop."""

from __future__ import annotations

from tilewright.ir.stmt import Block, For
from tilewright.schedule.tree import Path, Site, children


def get_loops(site: Site) -> list[Path]:
    """Paths to the loops between the block and its enclosing block, outermost first."""
    start = site.scope_index() + 1
    return [
        site.path[: k + 1]
        for k in range(start, len(site.path) - 1)
        if isinstance(site.path[k], For)
    ]


def get_child_blocks(site: Site) -> list[Block]:
    """The blocks directly under the loop or block (not inside other blocks), in order."""
    found: list[Block] = []
    stack = list(reversed(children(site.node)))
    while stack:
        node = stack.pop()
        if isinstance(node, Block):
            found.append(node)
            continue
        stack.extend(reversed(children(node)))
    return found
