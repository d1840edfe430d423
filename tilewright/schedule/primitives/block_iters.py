"""Block iterators: reorder_block_iter_var permutes a block's iterators (and their bindings)."""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.ir.function import PrimFunc
from tilewright.ir.stmt import BlockRealize
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.tree import Site, update


def reorder_block_iter_var(site: Site, new_order: Sequence[int]) -> PrimFunc:
    """The function with the block's iterators (and their bindings) in ``new_order``:
    iterator ``k`` of the result is iterator ``new_order[k]`` of the block.

    Raises ``ScheduleError`` (rule ``iter-permutation``) unless ``new_order`` is a
    permutation of ``0 .. n-1`` for the block's ``n`` iterators.

    Example (``new_order=[2, 1, 0]``)::

        vi, vj, vk = T.axis.remap("SSR", [i, j, k])
        ->  vk, vj, vi = T.axis.remap("RSS", [k, j, i])
    """
    block = site.block
    realize = site.path[-2] if len(site.path) > 2 else None
    if not isinstance(realize, BlockRealize):  # the root block, the body of the function
        raise ScheduleError(
            "reorder_block_iter_var",
            "root-block",
            f"block {block.name!r} is the function's root block",
            site.func,
            block,
        )
    count = len(block.iter_vars)
    order = list(new_order)
    if sorted(order) != list(range(count)):
        raise ScheduleError(
            "reorder_block_iter_var",
            "iter-permutation",
            f"{order} is not a permutation of [0, ..., {count - 1}] for the {count} iterators "
            f"of block {block.name!r}",
            site.func,
            block,
        )
    iter_vars = tuple(block.iter_vars[k] for k in order)
    values = tuple(realize.iter_values[k] for k in order)
    new_block = update(block, iter_vars=iter_vars)
    return site.at(site.path[:-1]).replaced(update(realize, iter_values=values, block=new_block))
