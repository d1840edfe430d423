"""Sampling: the random choices a stochastic schedule makes, as pure functions of a generator.

Each sampler draws a *decision* (a plain, JSON-friendly value) and each has a checker that
says whether a given decision is valid, so that a trace replayed with a decision someone
changed (a mutator, a user) is refused with a clear error instead of building nonsense.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from tilewright.schedule.error import ScheduleError


def divisors(n: int) -> list[int]:
    """The positive divisors of ``n``, ascending.

    Example::

        >>> divisors(12)
        [1, 2, 3, 4, 6, 12]
    """
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


def prime_factors(n: int) -> list[int]:
    """The prime factors of ``n`` with multiplicity, ascending (``[]`` for 1)."""
    found: list[int] = []
    p = 2
    while p * p <= n:
        while n % p == 0:
            found.append(p)
            n //= p
        p += 1
    return found + ([n] if n > 1 else [])


def sample_perfect_tile(
    rng: random.Random, extent: int, n: int, max_innermost_factor: int, outer_weight: float = 0.0
) -> list[int]:
    """``n`` factors whose product is ``extent``, the innermost at most
    ``max_innermost_factor`` (no bound when it is 0 or less), outermost first.

    Each prime factor of the extent goes to one of the ``n`` positions, uniformly; a draw
    whose innermost factor is above the bound is drawn again (TVM draws the same way).
    With ``outer_weight`` > 0 a prime first goes to the outermost position with that
    probability (else uniformly as before): on a GPU the outermost level is the grid, which
    a large extent needs most of.

    Example::

        >>> sample_perfect_tile(random.Random(0), 1024, 4, 16)
        [8, 8, 16, 1]
    """
    primes = prime_factors(extent)
    while True:  # ends: every prime placed outside is always a valid draw
        factors = [1] * n
        for prime in primes:
            if outer_weight > 0 and rng.random() < outer_weight:
                factors[0] *= prime
            else:
                factors[rng.randrange(n)] *= prime
        if n == 1 or max_innermost_factor <= 0 or factors[-1] <= max_innermost_factor:
            return factors


def check_perfect_tile(
    decision: object, extent: int, n: int, max_innermost_factor: int, loop: str
) -> list[int]:
    """``decision`` as a list of ints, or ``ScheduleError`` saying why it is not a perfect
    tiling of the loop."""
    if (
        not isinstance(decision, list | tuple)
        or len(decision) != n
        or not all(isinstance(f, int) and not isinstance(f, bool) and f > 0 for f in decision)
    ):
        raise ScheduleError(
            "sample_perfect_tile",
            "decision",
            f"decision {decision!r} for loop {loop} is not a list of {n} positive integers",
        )
    factors = [int(f) for f in decision]
    product = 1
    for f in factors:
        product *= f
    if product != extent:
        raise ScheduleError(
            "sample_perfect_tile",
            "decision",
            f"decision {factors} for loop {loop} multiplies to {product}, not its extent {extent}",
        )
    if n > 1 and max_innermost_factor > 0 and factors[-1] > max_innermost_factor:
        raise ScheduleError(
            "sample_perfect_tile",
            "decision",
            f"decision {factors} for loop {loop}: the innermost factor is above "
            f"max_innermost_factor={max_innermost_factor}",
        )
    return factors


def sample_categorical(rng: random.Random, probs: Sequence[float]) -> int:
    """An index into ``probs``, drawn with those weights."""
    return rng.choices(range(len(probs)), weights=probs)[0]


def check_categorical(decision: object, count: int) -> int:
    if isinstance(decision, bool) or not isinstance(decision, int) or not 0 <= decision < count:
        raise ScheduleError(
            "sample_categorical",
            "decision",
            f"decision {decision!r} is not an index into the {count} candidates",
        )
    return decision
