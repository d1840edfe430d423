"""``S[...]``: the subscript spelling of tile layouts, and the hardware-axis markers.

``S[32, 32]`` and ``S[(32, 32)]`` are row-major; ``S[(32, 32) : (1, 32)]`` gives explicit
strides; ``S[(8, 4) : (4 @ laneid, 1)]`` places a dimension on a hardware axis.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.layout.grouping import LayoutError
from tilewright.layout.shard import MEMORY, Iter
from tilewright.layout.tile_layout import TileLayout


@dataclass(frozen=True)
class AxisStride:
    """A stride on a named axis, written ``4 @ laneid``."""

    stride: int
    axis: str


@dataclass(frozen=True)
class Axis:
    """A hardware axis marker: ``stride @ axis`` in ``S[...]`` strides.

    Example: ``S[(8, 4) : (1 @ laneid, 1)]`` spreads the first dimension over 8 lanes.
    """

    name: str

    def __rmatmul__(self, stride: int) -> AxisStride:
        if isinstance(stride, bool) or not isinstance(stride, int):
            raise LayoutError(f"the stride before @{self.name} must be an int, got {stride!r}")
        return AxisStride(stride, self.name)


laneid = Axis("laneid")
warpid = Axis("warpid")
tid = Axis("tid")
tx = Axis("tx")
m = Axis(MEMORY)


class ShardBuilder:
    """The ``S`` object: ``S[shape]`` row-major, ``S[shape : strides]`` explicit.

    Example::

        >>> S[32, 32]
        S[(32, 32) : (32, 1)]
        >>> S[(32, 32) : (1, 32)]
        S[(32, 32) : (1, 32)]
    """

    def __getitem__(self, key: object) -> TileLayout:
        if isinstance(key, slice):
            if key.step is not None:
                raise LayoutError(f"S[shape : strides] takes no third part, got {key.step!r}")
            shape, strides = _as_tuple(key.start, "shape"), _as_tuple(key.stop, "strides")
            if len(shape) != len(strides):
                raise LayoutError(
                    f"S[shape : strides]: shape {list(shape)} has {len(shape)} extents but "
                    f"{len(strides)} strides"
                )
        else:
            shape = _as_tuple(key, "shape")
            strides = _row_major(shape)
        return TileLayout(tuple(_shard(e, s) for e, s in zip(shape, strides)))

    def __repr__(self) -> str:
        return "S"


S = ShardBuilder()


def _as_tuple(value: object, what: str) -> tuple[object, ...]:
    if isinstance(value, tuple | list):
        items = tuple(value)
    elif value is None:
        raise LayoutError(f"S[...] needs a {what}")
    else:
        items = (value,)
    if not items:
        raise LayoutError(f"S[...]: the {what} is empty")
    return items


def _row_major(shape: tuple[object, ...]) -> tuple[int, ...]:
    strides, running = [], 1
    for extent in reversed(shape):
        strides.append(running)
        running *= _extent(extent)
    return tuple(reversed(strides))


def _extent(value: object) -> int:
    value = getattr(value, "value", value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LayoutError(f"S[...]: every extent must be a positive int, got {value!r}")
    return value


def _shard(extent: object, stride: object) -> Iter:
    if isinstance(stride, AxisStride):
        return Iter(_extent(extent), stride.stride, stride.axis)
    stride = getattr(stride, "value", stride)
    if isinstance(stride, bool) or not isinstance(stride, int) or stride < 0:
        raise LayoutError(f"S[...]: every stride must be a non-negative int, got {stride!r}")
    return Iter(_extent(extent), stride)
