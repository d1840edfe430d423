"""Annotations on loops and blocks: add or replace a key, or remove one."""

from __future__ import annotations

from typing import Any

from tilewright.ir.function import PrimFunc
from tilewright.ir.stmt import AttrValue, Block, For, attrs
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.tree import Site, update


def _name(node: For | Block) -> str:
    return f"loop {node.loop_var.name!r}" if isinstance(node, For) else f"block {node.name!r}"


def annotate(site: Site, key: str, value: AttrValue | dict[str, Any]) -> PrimFunc:
    """Set annotation ``key`` of the loop or block to ``value``.

    Example::

        for i in range(8):   ->   for i in T.serial(8, annotations={"pragma_unroll": 1}):
    """
    node = site.node
    assert isinstance(node, For | Block)
    merged: dict[str, Any] = dict(node.annotations)
    merged[key] = value
    return site.replaced(update(node, annotations=attrs(merged)))


def unannotate(site: Site, key: str) -> PrimFunc:
    """Remove annotation ``key`` from the loop or block.

    Example::

        for i in T.serial(8, annotations={"k": 1}):   ->   for i in range(8):
    """
    node = site.node
    assert isinstance(node, For | Block)
    merged = dict(node.annotations)
    if key not in merged:
        known = ", ".join(repr(k) for k in merged) or "none"
        raise ScheduleError(
            "unannotate",
            "annotation",
            f"{_name(node)} has no annotation {key!r} (annotations: {known})",
            site.func,
            node,
        )
    del merged[key]
    return site.replaced(update(node, annotations=attrs(merged)))
