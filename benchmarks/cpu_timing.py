"""Timing CPU kernels beside numpy on a machine whose speed drifts (the CPU benchmarks share it).

On the 2-core machine the benchmarks run on, one kernel's speed moves between ~190 and ~300
GFLOP/s from one second to the next, and numpy's OpenBLAS threads keep spinning for a moment
after each call, slowing whatever runs next. So the contenders are timed in many short
rounds, in a rotated order, each after a pause; a contender's figure is the median over the
rounds, and a ratio is the median of the ratios within each round (both contenders measured
seconds apart, under the same conditions).

    medians, ratios = interleaved({"ours": f, "numpy": g}, rounds=9)
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def call_seconds(call: Callable[[], object], calls: int = 3) -> float:
    """The median seconds of ``calls`` calls, after one warm-up call."""
    call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def interleaved(
    contenders: dict[str, Callable[[], object]],
    rounds: int = 9,
    pause: float = 0.2,
    baseline: str = "numpy",
) -> tuple[dict[str, float], dict[str, float]]:
    """Time each contender once per round, the order rotated each round, ``pause`` seconds
    before each timing. Returns each contender's median seconds, and the median over rounds
    of ``baseline``'s time divided by each contender's (how many times the baseline's speed)."""
    names = list(contenders)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            time.sleep(pause)
            seconds[name].append(call_seconds(contenders[name]))
    medians = {name: float(np.median(s)) for name, s in seconds.items()}
    ratios = {}
    if baseline in seconds:
        for name in names:
            per_round = [b / s for b, s in zip(seconds[baseline], seconds[name])]
            ratios[name] = float(np.median(per_round))
    return medians, ratios
