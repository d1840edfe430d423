"""``TileLayout``: shards mapping a tile's logical coordinates to memory and hardware-axis offsets.

Input: logical coordinates (ints or integer PrimExprs). Output: a dict of offsets per axis
(``"m"`` the memory offset, hardware axes such as ``"laneid"``). The layout is an immutable IR
node, so it can sit in ``Buffer.layout`` and takes part in structural equality and hashing.
"""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.ir.layout import Layout
from tilewright.ir.node import node
from tilewright.layout import offset_arith as oa
from tilewright.layout.grouping import (
    LayoutError,
    merged_groups,
    normalize_shape,
)
from tilewright.layout.offset_arith import Offset
from tilewright.layout.shard import MEMORY, Iter, merge_adjacent, product

UNIT = Iter(1, 1)


@node
class TileLayout(Layout):
    """A layout: one shard per logical dimension, coordinates flattened row-major.

    ``TileLayout(S[(32, 32) : (32, 1)])`` is a row-major 32x32 tile; a shard whose axis is not
    ``"m"`` places its coordinate on a hardware axis (lane, warp, thread) instead of memory.

    Example::

        >>> layout = TileLayout(S[32, 32])
        >>> layout.apply(1, 2)
        {'m': 34}
        >>> layout.apply(f, tid, 0, shape=[8, 32, 4])["m"]   # f * 128 + tid * 4
    """

    shard: tuple[Iter, ...]

    def __post_init__(self) -> None:
        shards = self.shard
        if isinstance(shards, TileLayout):
            shards = shards.shard
        elif isinstance(shards, Iter):
            shards = (shards,)
        if not isinstance(shards, Sequence) or not all(isinstance(s, Iter) for s in shards):
            raise TypeError(
                f"TileLayout takes S[...] or a sequence of Iter shards, got {type(shards).__name__}"
            )
        object.__setattr__(self, "shard", tuple(shards) or (UNIT,))

    # -- shape and span -------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        """The shard extents: the logical shape this layout indexes directly."""
        return tuple(s.extent for s in self.shard)

    @property
    def strides(self) -> tuple[int, ...]:
        """The shard strides, each on its shard's axis."""
        return tuple(s.stride for s in self.shard)

    @property
    def ndim(self) -> int:
        return len(self.shard)

    def cosize(self) -> int:
        """The span of memory offsets: the largest ``"m"`` offset plus one."""
        return 1 + sum((s.extent - 1) * s.stride for s in self.shard if s.is_memory)

    def axes(self) -> tuple[str, ...]:
        """The axis names this layout places coordinates on, ``"m"`` first."""
        names = [MEMORY]
        for s in self.shard:
            if s.axis not in names:
                names.append(s.axis)
        return tuple(names)

    def is_bijective(self) -> bool:
        """True when the memory shards map onto ``[0, n)`` one to one (a compact layout)."""
        expect = 1
        for s in sorted((s for s in self.shard if s.is_memory and s.extent > 1), key=_stride):
            if s.stride != expect:
                return False
            expect *= s.extent
        return True

    # -- applying --------------------------------------------------------------------------

    def apply(self, *coords: object, shape: Sequence[int] | None = None) -> dict[str, Offset]:
        """The offsets, per axis, of the element at ``coords``.

        With ``shape``, ``coords`` index that shape instead: they are flattened row-major
        against ``shape`` and unflattened against the shards (splitting shards along the way
        when the extents divide, so offsets stay free of needless ``//`` and ``%``).

        Example::

            >>> TileLayout(S[(32, 32) : (32, 1)]).apply(f, tid, 0, shape=[8, 32, 4])
            {'m': f * 128 + tid * 4}
        """
        if len(coords) == 1 and isinstance(coords[0], tuple | list):
            coords = tuple(coords[0])
        dims = self.shape if shape is None else normalize_shape(shape)
        if len(coords) != len(dims):
            raise LayoutError(
                f"apply got {len(coords)} coordinates for the {len(dims)}-d shape {list(dims)}"
            )
        values = [oa.as_offset(c) for c in coords]
        for index, (value, extent) in enumerate(zip(values, dims)):
            if isinstance(value, int) and not 0 <= value < extent:
                raise IndexError(
                    f"coordinate {value} at dimension {index} is outside [0, {extent}) "
                    f"of shape {list(dims)}"
                )
        if product(list(dims)) != self.size():
            raise LayoutError(
                f"cannot apply a layout of {self.size()} elements to shape {list(dims)} "
                f"({product(list(dims))} elements)"
            )
        try:
            groups = merged_groups(self.shard, dims)
        except LayoutError:
            # No shard boundary alignment: index through the flat row-major position.
            flat: Offset = 0
            for value, stride in zip(values, _row_major_strides(dims)):
                flat = oa.add(flat, oa.mul(value, stride))
            values, groups = [flat], (merge_adjacent(self.shard),)
        result: dict[str, Offset] = {axis: 0 for axis in self.axes()}
        for value, group in zip(values, groups):
            unflatten_into(result, value, group)
        return result

    def offset_of(self, *coords: object, shape: Sequence[int] | None = None) -> Offset:
        """The memory offset of ``coords``: ``apply(...)["m"]``."""
        return self.apply(*coords, shape=shape)[MEMORY]

    # -- reshaping -------------------------------------------------------------------------

    def canonicalize(self) -> TileLayout:
        """The same mapping with contiguous neighbours merged and unit shards dropped.

        Example: ``S[(32, 32) : (32, 1)].canonicalize()`` is ``S[1024 : 1]``.
        """
        return TileLayout(merge_adjacent(self.shard))

    def group(self, shape: Sequence[int]) -> tuple[TileLayout, ...]:
        """One layout per dimension of ``shape``, splitting shards where needed.

        Raises ``LayoutError`` when the sizes differ or an extent does not divide.
        Example: ``S[32, 32].group([8, 32, 4])`` gives ``(S[8 : 128], S[32 : 4], S[4 : 1])``.
        """
        groups = merged_groups(self.shard, normalize_shape(shape))
        return tuple(TileLayout(g) for g in groups)

    def regroup(self, shape: Sequence[int]) -> TileLayout:
        """This layout with shards split at ``shape``'s boundaries (merged within each dim).

        When every dimension merges into one shard, the result's ``shape`` equals ``shape``.
        Example: ``S[32, 32].regroup([8, 32, 4])`` is ``S[(8, 32, 4) : (128, 4, 1)]``.
        """
        groups = merged_groups(self.shard, normalize_shape(shape))
        return TileLayout(tuple(s for g in groups for s in (g or (UNIT,))))

    def with_shape(self, shape: Sequence[int]) -> TileLayout:
        """This layout as seen by a buffer of ``shape`` (``regroup``); sizes must match."""
        return self.regroup(shape)

    def canonical_order(self) -> tuple[int, ...]:
        """Shard indices sorted by stride, largest first (stable): the memory-order walk.

        Example: ``S[(4, 8) : (1, 4)].canonical_order() == (1, 0)``.
        """
        return tuple(sorted(range(self.ndim), key=lambda i: -self.shard[i].stride))

    def permute(self, order: Sequence[int]) -> TileLayout:
        """The shards reordered: shard ``i`` of the result is shard ``order[i]`` of this one."""
        if sorted(order) != list(range(self.ndim)):
            raise LayoutError(f"{list(order)} is not a permutation of {self.ndim} shards")
        return TileLayout(tuple(self.shard[i] for i in order))

    def slice(
        self, region: Sequence[object], shape: Sequence[int] | None = None
    ) -> tuple[TileLayout, Offset]:
        """The layout of a sub-tile and the memory offset of its first element.

        ``region`` has one entry per dimension of ``shape`` (default: this layout's shape):
        a ``slice``, a ``(start, extent)`` pair, a ``Range`` or a single index.
        Example: ``S[32, 32].slice((slice(8, 16), slice(0, 32)))`` is
        ``(S[(8, 32) : (32, 1)], 256)``.
        """
        from tilewright.layout.slicing import slice_layout

        return slice_layout(self, region, shape)

    # -- printing --------------------------------------------------------------------------

    def __repr__(self) -> str:
        if self.ndim == 1:
            return f"S[{self.shard[0].extent} : {self.shard[0].stride_text()}]"
        extents = ", ".join(str(s.extent) for s in self.shard)
        strides = ", ".join(s.stride_text() for s in self.shard)
        return f"S[({extents}) : ({strides})]"

    def script(self) -> str:
        """This layout as script text: ``T.TileLayout(S[(32, 32) : (32, 1)])``."""
        return f"T.TileLayout({self!r})"


def unflatten_into(result: dict[str, Offset], value: Offset, group: tuple[Iter, ...]) -> None:
    """Add to ``result`` the offsets of position ``value`` in ``group`` (row-major shards).

    The outermost shard takes ``value // inner`` without a ``% extent``: the caller keeps
    ``value`` in range.
    """
    inner = product([s.extent for s in group])
    for position, shard in enumerate(group):
        inner //= shard.extent
        digit = oa.floordiv(value, inner)
        if position > 0:
            digit = oa.floormod(digit, shard.extent)
        result[shard.axis] = oa.add(result.get(shard.axis, 0), oa.mul(digit, shard.stride))


def _row_major_strides(dims: tuple[int, ...]) -> tuple[int, ...]:
    strides, running = [], 1
    for extent in reversed(dims):
        strides.append(running)
        running *= extent
    return tuple(reversed(strides))


def _stride(shard: Iter) -> int:
    return shard.stride
