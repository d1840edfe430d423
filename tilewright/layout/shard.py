"""Shards (``Iter``): one logical dimension of a tile layout, its extent, stride and axis.

A shard maps a coordinate ``0 <= c < extent`` to the offset ``c * stride`` on its axis: ``"m"``
for the memory offset, or a hardware axis such as ``"laneid"``, ``"warpid"`` or ``"tid"``.
"""

from __future__ import annotations

from tilewright.ir import Node
from tilewright.ir.node import node

MEMORY = "m"


class LayoutError(ValueError):
    """A layout operation without an answer: sizes differ, extents don't divide, out of range."""


@node
class Iter(Node):
    """One shard of a layout: ``extent`` coordinates, each ``stride`` apart on ``axis``.

    Example::

        Iter(32, 1)             # 32 contiguous elements in memory
        Iter(32, 1, "laneid")   # one element per lane of a warp
    """

    extent: int
    stride: int
    axis: str = MEMORY

    def __post_init__(self) -> None:
        if isinstance(self.extent, bool) or not isinstance(self.extent, int) or self.extent < 1:
            raise LayoutError(f"a shard's extent must be a positive int, got {self.extent!r}")
        if isinstance(self.stride, bool) or not isinstance(self.stride, int) or self.stride < 0:
            raise LayoutError(f"a shard's stride must be a non-negative int, got {self.stride!r}")
        if not isinstance(self.axis, str) or not self.axis.isidentifier():
            raise LayoutError(
                f"a shard's axis must be a name such as 'm' or 'laneid', got {self.axis!r}"
            )

    @property
    def is_memory(self) -> bool:
        return self.axis == MEMORY

    def split(self, inner: int) -> tuple[Iter, Iter]:
        """This shard as ``(outer, inner)`` with ``inner`` coordinates in the inner shard.

        Example: ``Iter(32, 1).split(4) -> (Iter(8, 4), Iter(4, 1))``.
        """
        if inner < 1 or self.extent % inner:
            raise LayoutError(f"cannot split a shard of extent {self.extent} by {inner}")
        return (
            Iter(self.extent // inner, self.stride * inner, self.axis),
            Iter(inner, self.stride, self.axis),
        )

    def stride_text(self) -> str:
        return str(self.stride) if self.is_memory else f"{self.stride}@{self.axis}"

    def __repr__(self) -> str:
        return f"Iter({self.extent}, {self.stride}{'' if self.is_memory else f', {self.axis!r}'})"


def merge_adjacent(shards: tuple[Iter, ...]) -> tuple[Iter, ...]:
    """Merge neighbours ``(a, b)`` on one axis where ``a.stride == b.stride * b.extent``.

    Unit shards are dropped. The row-major flattening of coordinates is unchanged. Example:
    ``merge_adjacent((Iter(32, 32), Iter(32, 1))) -> (Iter(1024, 1),)``.
    """
    out: list[Iter] = []
    for shard in shards:
        if shard.extent == 1:
            continue
        if out:
            prev = out[-1]
            if prev.axis == shard.axis and prev.stride == shard.stride * shard.extent:
                out[-1] = Iter(prev.extent * shard.extent, shard.stride, shard.axis)
                continue
        out.append(shard)
    return tuple(out)


def product(values: tuple[int, ...] | list[int]) -> int:
    """The product of ints (1 for none)."""
    result = 1
    for value in values:
        result *= value
    return result
