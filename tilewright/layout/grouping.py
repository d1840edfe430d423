"""Grouping shards into a logical shape: split shards so each dimension owns whole shards.

Input: a layout's shards (row-major over its coordinates) and a target shape of the same size.
Output: one tuple of shards per target dimension, such that flattening coordinates row-major
against the target shape and against the shards gives the same element. This is what lets a
32x32 row-major layout be read as ``[outer, threads, vec] = [8, 32, 4]``.
"""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.layout.shard import Iter, LayoutError, merge_adjacent, product

__all__ = ["LayoutError", "merged_groups", "normalize_shape", "refine", "split_to_shape"]


def normalize_shape(shape: Sequence[object], what: str = "shape") -> tuple[int, ...]:
    """``shape`` as a tuple of positive ints (IntImm accepted), or a ``LayoutError``."""
    if isinstance(shape, int):
        shape = (shape,)
    out = []
    for dim in shape:
        value = getattr(dim, "value", dim)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise LayoutError(f"{what} {tuple(shape)!r}: every extent must be a positive int")
        out.append(value)
    return tuple(out)


def split_to_shape(
    shards: tuple[Iter, ...], shape: tuple[int, ...]
) -> tuple[tuple[Iter, ...], ...]:
    """Shards split and grouped so that group ``i`` covers exactly ``shape[i]`` coordinates.

    Unit shards are dropped; a dimension of extent 1 gets an empty group. Raises
    ``LayoutError`` when the sizes differ or an extent does not divide the next one.

    Example: ``split_to_shape((Iter(1024, 1),), (8, 32, 4))`` gives
    ``((Iter(8, 128),), (Iter(32, 4),), (Iter(4, 1),))``.
    """
    size = product([s.extent for s in shards])
    if size != product(list(shape)):
        raise LayoutError(
            f"cannot view a layout of {size} elements as shape {list(shape)} "
            f"({product(list(shape))} elements)"
        )
    pending = [s for s in shards if s.extent != 1]
    groups: list[tuple[Iter, ...]] = []
    for dim_index in range(len(shape) - 1, -1, -1):
        need = shape[dim_index]
        group: list[Iter] = []
        while need > 1:
            shard = pending.pop()
            if shard.extent <= need:
                if need % shard.extent:
                    raise LayoutError(_not_divisible(shards, shape, dim_index, shard.extent, need))
                group.insert(0, shard)
                need //= shard.extent
            else:
                if shard.extent % need:
                    raise LayoutError(_not_divisible(shards, shape, dim_index, shard.extent, need))
                outer, inner = shard.split(need)
                group.insert(0, inner)
                pending.append(outer)
                need = 1
        groups.insert(0, tuple(group))
    return tuple(groups)


def _not_divisible(
    shards: tuple[Iter, ...], shape: tuple[int, ...], dim: int, extent: int, need: int
) -> str:
    extents = [s.extent for s in shards]
    return (
        f"cannot regroup shards of extents {extents} into shape {list(shape)}: at dimension "
        f"{dim} a shard of extent {extent} and the {need} remaining coordinates do not divide "
        f"each other"
    )


def merged_groups(shards: tuple[Iter, ...], shape: tuple[int, ...]) -> tuple[tuple[Iter, ...], ...]:
    """``split_to_shape`` with contiguous shards of each group merged (fewest shards per dim)."""
    return tuple(merge_adjacent(group) for group in split_to_shape(shards, shape))


def refine(a: tuple[Iter, ...], b: tuple[Iter, ...]) -> tuple[tuple[Iter, ...], tuple[Iter, ...]]:
    """Both shard lists split at the union of their boundaries, so their extents match one to one.

    Example: ``refine((Iter(1024, 1),), (Iter(32, 1), Iter(32, 32)))`` gives
    ``((Iter(32, 32), Iter(32, 1)), (Iter(32, 1), Iter(32, 32)))``.
    """
    a_extents = tuple(s.extent for s in a if s.extent != 1)
    b_fine = _flatten(split_to_shape(b, a_extents))
    a_fine = _flatten(split_to_shape(a, tuple(s.extent for s in b_fine)))
    return a_fine, b_fine


def _flatten(groups: tuple[tuple[Iter, ...], ...]) -> tuple[Iter, ...]:
    return tuple(shard for group in groups for shard in group)
