"""Slicing a layout to a region: the sub-tile's layout and the offset of its first element.

Input: a ``TileLayout``, a region (one slice, ``(start, extent)`` pair, ``Range`` or index per
dimension of a logical shape). Output: a layout with one shard group per dimension covering
only the region, and the memory offset of the region's first element. A dimension spread over
several shards can be sliced only where the range is a box (it does not wrap an inner shard).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tilewright.arith import simplify
from tilewright.ir import IntImm, PrimExpr, Range, op
from tilewright.layout import offset_arith as oa
from tilewright.layout.grouping import LayoutError, merged_groups, normalize_shape
from tilewright.layout.offset_arith import Offset
from tilewright.layout.shard import MEMORY, Iter, product

if TYPE_CHECKING:
    from tilewright.layout.tile_layout import TileLayout


def normalize_region(region: Sequence[object], dims: tuple[int, ...]) -> list[tuple[Offset, int]]:
    """``region`` as ``(start, extent)`` pairs checked against ``dims``.

    Example: ``normalize_region((slice(0, 4), 3), (8, 8)) == [(0, 4), (3, 1)]``.
    """
    if isinstance(region, slice | Range) or not isinstance(region, Sequence):
        region = (region,)
    if len(region) != len(dims):
        raise LayoutError(
            f"region has {len(region)} entries for the {len(dims)}-d shape {list(dims)}"
        )
    pairs = []
    for index, (entry, extent) in enumerate(zip(region, dims)):
        start, length = _start_extent(entry, index)
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise LayoutError(
                f"region entry {index} ({entry!r}) must have a positive constant extent"
            )
        if length > extent or (isinstance(start, int) and not 0 <= start <= extent - length):
            raise LayoutError(
                f"region entry {index} [{start}, {_end(start, length)}) is out of range for "
                f"dimension {index} of extent {extent}"
            )
        pairs.append((start, length))
    return pairs


def _start_extent(entry: object, index: int) -> tuple[Offset, object]:
    if isinstance(entry, slice):
        if entry.step not in (None, 1):
            raise LayoutError(f"region entry {index} has step {entry.step}; only step 1 slices")
        start = oa.as_offset(0 if entry.start is None else entry.start)
        if entry.stop is None:
            raise LayoutError(f"region entry {index} ({entry!r}) needs an explicit stop")
        stop = oa.as_offset(entry.stop)
        if isinstance(start, int) and isinstance(stop, int):
            return start, stop - start
        # A tile origin such as i * 32 : i * 32 + 32 has a constant extent once simplified.
        return start, _const(simplify(op.sub(stop, start)))
    if isinstance(entry, Range):
        return oa.as_offset(entry.min), _const(entry.extent)
    if isinstance(entry, tuple) and len(entry) == 2:
        return oa.as_offset(entry[0]), _const(entry[1])
    if isinstance(entry, int | PrimExpr):
        return oa.as_offset(entry), 1
    raise LayoutError(
        f"region entry {index} must be a slice, a (start, extent) pair, a Range or an index, "
        f"got {type(entry).__name__}"
    )


def _const(value: object) -> object:
    return value.value if isinstance(value, IntImm) else value


def _end(start: Offset, length: int) -> str:
    return str(start + length) if isinstance(start, int) else f"{start} + {length}"


def slice_layout(
    layout: TileLayout, region: Sequence[object], shape: Sequence[int] | None = None
) -> tuple[TileLayout, Offset]:
    """See ``TileLayout.slice``."""
    from tilewright.layout.tile_layout import UNIT, TileLayout, unflatten_into

    dims = layout.shape if shape is None else normalize_shape(shape)
    pairs = normalize_region(region, dims)
    groups = merged_groups(layout.shard, dims)
    shards: list[Iter] = []
    base: dict[str, Offset] = {axis: 0 for axis in layout.axes()}
    for index, ((start, length), group) in enumerate(zip(pairs, groups)):
        if not group:
            shards.append(UNIT)
            continue
        cut = _box_position(group, start, length)
        if cut is None:
            raise LayoutError(
                f"region entry {index} [{start}, {_end(start, length)}) is not a box of the "
                f"layout: it wraps around shards of extents {[s.extent for s in group]}"
            )
        inner = group[cut + 1 :]
        outer = group[cut]
        shards.append(Iter(length // product([s.extent for s in inner]), outer.stride, outer.axis))
        shards.extend(inner)
        unflatten_into(base, start, group)
    for axis, offset in base.items():
        if axis != MEMORY and not isinstance(offset, int):
            # A symbolic tile origin such as c * 64 may still keep threads in place.
            offset = oa.as_offset(simplify(op.convert(offset)))
        if axis != MEMORY and not (isinstance(offset, int) and offset == 0):
            raise LayoutError(
                f"slicing moves hardware axis {axis!r} by {offset}; only memory offsets can move"
            )
    return TileLayout(tuple(shards)), base[MEMORY]


def _box_position(group: tuple[Iter, ...], start: Offset, length: int) -> int | None:
    """The shard at which ``[start, start + length)`` becomes ``m`` whole inner blocks.

    A symbolic ``start`` is assumed to be a multiple of the inner block (as a tile origin is).
    """
    inner = 1
    for cut in range(len(group) - 1, -1, -1):
        extent = group[cut].extent
        if length % inner == 0:
            count = length // inner
            if isinstance(start, int):
                if start % inner == 0 and (start // inner) % extent + count <= extent:
                    return cut
            elif count <= extent:
                return cut
        inner *= extent
    return None
