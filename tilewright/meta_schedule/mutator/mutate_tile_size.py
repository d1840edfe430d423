"""``MutateTileSize``: a trace in, the same trace with one tiling decision changed out: a
divisor of one tile size moved to another tile of the same loop, or another vector length
for a cooperative fetch."""

from __future__ import annotations

import random

from tilewright.meta_schedule.analysis import COOPERATIVE_FETCH
from tilewright.meta_schedule.mutator.categorical import (
    annotated_categoricals,
    can_change,
    only_annotated,
    other_index,
)
from tilewright.meta_schedule.mutator.replay import ReplayingMutator, design_space, generator
from tilewright.schedule import Instruction, Trace
from tilewright.schedule.primitives.sampling import divisors, prime_factors


class MutateTileSize(ReplayingMutator):
    """Change one ``sample_perfect_tile`` decision, or the ``sample_categorical`` that picks
    a cooperative fetch's vector length (its value annotates ``meta_schedule.cooperative_fetch``).

    The instruction is drawn uniformly among those whose decision can change. For tile sizes
    ``[t0, ..., tn-1]``: a position ``x`` with ``tx > 1``, another position ``y``, and a
    divisor ``d > 1`` of ``tx`` are drawn, and ``d`` moves from ``x`` to ``y`` (the product
    stays the loop's extent); when ``y`` is the innermost position, ``d * ty`` stays within
    the instruction's ``max_innermost_factor``. A vector length moves to another candidate,
    drawn with the probabilities of the others.

    The result ends before ``enter_postproc``; with a tuning context it replays on the task's
    module (otherwise None, after a few tries).

    Example::

        >>> trace.insts[2].decision   # a loop of 16, max_innermost_factor=16
        [4, 2, 2]
        >>> MutateTileSize().apply(trace, random.Random(0)).insts[2].decision
        [8, 1, 2]
    """

    def apply(self, trace: Trace, rng: random.Random | None = None) -> Trace | None:
        rng = generator(rng)
        space = design_space(trace)
        tiles = [k for k, inst in enumerate(space.insts) if _tiles_can_change(inst)]
        fetched = annotated_categoricals(space, [COOPERATIVE_FETCH])
        fetches = [k for k in fetched if can_change(space.insts[k])]
        candidates = sorted(tiles + fetches)
        if not candidates:
            return None
        safe = all(only_annotated(space, k) for k in fetches)

        def propose() -> Trace:
            k = rng.choice(candidates)
            inst = space.insts[k]
            if inst.kind == "sample_perfect_tile":
                return space.with_decision(k, move_factor(rng, _tiles(inst), _limit(inst)))
            return space.with_decision(k, other_index(rng, inst))

        if not tiles and safe:
            return propose()
        return self.first_accepted(propose)


def move_factor(rng: random.Random, tiles: list[int], max_innermost_factor: int) -> list[int]:
    """``tiles`` with a divisor ``d > 1`` of one tile moved to another tile (TVM's draw: the
    source, then the destination, then the divisor, again until the innermost bound allows
    one). The caller knows that some move is possible.

    Example::

        >>> move_factor(random.Random(1), [8, 1, 2], 4)
        [2, 4, 2]
    """
    n = len(tiles)
    while True:
        x = rng.randrange(n)
        if tiles[x] <= 1:
            continue
        y = rng.randrange(n - 1)
        y += y >= x
        allowed = divisors(tiles[x])[1:]
        if y == n - 1 and max_innermost_factor > 0:
            allowed = [d for d in allowed if d * tiles[y] <= max_innermost_factor]
        if not allowed:
            continue
        d = rng.choice(allowed)
        moved = list(tiles)
        moved[x] //= d
        moved[y] *= d
        return moved


def can_move(tiles: list[int], max_innermost_factor: int) -> bool:
    """Whether some divisor of a tile can move to another tile within the innermost bound."""
    n = len(tiles)
    for x, tile in enumerate(tiles):
        if tile <= 1:
            continue
        smallest = prime_factors(tile)[0]
        for y in range(n):
            inner_ok = max_innermost_factor <= 0 or smallest * tiles[y] <= max_innermost_factor
            if y != x and (y != n - 1 or inner_ok):
                return True
    return False


def _tiles(inst: Instruction) -> list[int]:
    decision = inst.decision
    assert isinstance(decision, list | tuple), f"sample_perfect_tile decision {decision!r}"
    return [int(t) for t in decision]


def _limit(inst: Instruction) -> int:
    bound = inst.attrs[1]
    assert isinstance(bound, int), f"max_innermost_factor {bound!r}"
    return bound


def _tiles_can_change(inst: Instruction) -> bool:
    return (
        inst.kind == "sample_perfect_tile"
        and len(_tiles(inst)) >= 2
        and can_move(_tiles(inst), _limit(inst))
    )
