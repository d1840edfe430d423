"""Queries: the loops above a block, and the blocks directly under a block or loop."""

from __future__ import annotations

from tilewright.ir.stmt import Block, For
from tilewright.schedule.tree import Site, children


def get_loops(site: Site) -> list[For]:
    """The loops between the block and its enclosing block, outermost first."""
    return site.enclosing_loops()


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
