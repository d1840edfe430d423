"""sample_partitioned_tile: perfect tilings whose inner part (the factors from
``partition_pos`` on) multiplies to a multiple of ``innerpart_factor``, drawn from a
generator, and the check that a given decision is one of them."""

from __future__ import annotations

import random

from tilewright.schedule.error import ScheduleError
from tilewright.schedule.primitives.sampling import sample_perfect_tile


def _inner_product(factors: list[int], partition_pos: int) -> int:
    product = 1
    for f in factors[partition_pos:]:
        product *= f
    return product


def sample_partitioned_tile(
    rng: random.Random, extent: int, n: int, partition_pos: int, innerpart_factor: int
) -> list[int]:
    """``n`` factors multiplying to ``extent``, outermost first, whose product from
    ``partition_pos`` on is a multiple of ``innerpart_factor`` (which divides ``extent``).

    Example::

        >>> tiles = sample_partitioned_tile(random.Random(0), 64, 3, 1, 8)
        >>> tiles[1] * tiles[2] % 8, tiles[0] * tiles[1] * tiles[2]
        (0, 64)
    """
    while True:  # ends: [extent // f, f, 1, ...] is a draw of positive probability
        factors = sample_perfect_tile(rng, extent, n, 0)
        if _inner_product(factors, partition_pos) % innerpart_factor == 0:
            return factors


def check_partitioned_tile(
    decision: object, extent: int, n: int, partition_pos: int, innerpart_factor: int, loop: str
) -> list[int]:
    """``decision`` as a list of ints, or ``ScheduleError`` (rule ``decision``) saying why it
    is not a partitioned tiling of the loop."""
    if (
        not isinstance(decision, list | tuple)
        or len(decision) != n
        or not all(isinstance(f, int) and not isinstance(f, bool) and f > 0 for f in decision)
    ):
        raise ScheduleError(
            "sample_partitioned_tile",
            "decision",
            f"decision {decision!r} for loop {loop} is not a list of {n} positive integers",
        )
    factors = [int(f) for f in decision]
    product = _inner_product(factors, 0)
    if product != extent:
        raise ScheduleError(
            "sample_partitioned_tile",
            "decision",
            f"decision {factors} for loop {loop} multiplies to {product}, not its extent {extent}",
        )
    inner = _inner_product(factors, partition_pos)
    if inner % innerpart_factor != 0:
        raise ScheduleError(
            "sample_partitioned_tile",
            "decision",
            f"decision {factors} for loop {loop}: the factors from position {partition_pos} "
            f"multiply to {inner}, not a multiple of innerpart_factor={innerpart_factor}",
        )
    return factors
