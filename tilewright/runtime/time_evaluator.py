"""A kernel + arguments → timing statistics: warm up once, then ``repeat`` timed batches."""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable

from tilewright.runtime.device import Device


@dataclasses.dataclass(frozen=True)
class ProfileResult:
    """Timings in seconds: ``results`` holds each repeat's mean time per call.

    Example::

        >>> result = rt_mod.time_evaluator("main", tw.cpu(0), number=10)(a, b, c)
        >>> result.mean, result.median, len(result.results)
    """

    results: tuple[float, ...]
    number: int

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results)

    def __str__(self) -> str:
        return (
            f"mean {self.mean * 1e3:.4f} ms, median {self.median * 1e3:.4f} ms "
            f"over {len(self.results)} repeats of {self.number} calls"
        )


def time_evaluator(
    bind: Callable[..., Callable[[], None]],
    dev: Device,
    number: int = 10,
    repeat: int = 1,
    min_repeat_ms: float = 0,
    measure: Callable[[Callable[[], None], int], float] | None = None,
    warmup_ms: float = 0,
) -> Callable[..., ProfileResult]:
    """A function that times a kernel on given arguments.

    Arguments:
        bind: checks arguments once and returns a no-argument launcher (``PackedFunc.bind``).
        dev: the device to synchronize after each batch.
        number: calls per repeat; raised until a repeat lasts ``min_repeat_ms``.
        repeat: how many timed batches (the length of ``results``).
        min_repeat_ms: the shortest duration of one repeat, in milliseconds.
        measure: ``measure(run, count)`` gives the seconds ``count`` calls take (CUDA events
            on a GPU); by default the wall clock around the calls and a ``dev.sync()``.
        warmup_ms: keep calling the kernel, untimed, for this long before the first repeat
            (beyond TVM: a GPU under its power limit lowers its clock after about a second
            of load, by how much depending on the kernel's own power draw, so that kernels
            timed in their first milliseconds rank by a clock they do not keep).

    Example::

        >>> timer = time_evaluator(func.bind, tw.cpu(0), number=100, repeat=3)
        >>> timer(a, b).median
    """
    if number < 1 or repeat < 1:
        raise ValueError(f"time_evaluator: number and repeat must be >= 1, got {number}, {repeat}")
    if warmup_ms < 0 or min_repeat_ms < 0:
        raise ValueError(
            f"time_evaluator: min_repeat_ms and warmup_ms must be >= 0, got {min_repeat_ms}, "
            f"{warmup_ms}"
        )

    def wall_clock(run: Callable[[], None], count: int) -> float:
        start = time.perf_counter()
        for _ in range(count):
            run()
        dev.sync()
        return time.perf_counter() - start

    def evaluate(*args: object) -> ProfileResult:
        run = bind(*args)
        run()
        dev.sync()
        warm, until = 1, time.perf_counter() + warmup_ms / 1e3
        while time.perf_counter() < until:
            for _ in range(warm):
                run()
            dev.sync()
            warm = min(2 * warm, 1024)
        count = number
        results = []
        for _ in range(repeat):
            while True:
                elapsed = (measure or wall_clock)(run, count)
                if elapsed * 1e3 >= min_repeat_ms:
                    break
                # Aim past the minimum, growing at most 1000x per attempt.
                scale = min(1000.0, 1.2 * min_repeat_ms / max(elapsed * 1e3, 1e-6))
                count = max(count + 1, math.ceil(count * scale))
            results.append(elapsed / count)
        return ProfileResult(tuple(results), count)

    return evaluate


def stage_table(times: dict[str, float]) -> str:
    """Seconds per stage as an aligned table of milliseconds and shares of the total.

    Example: ``print(stage_table({"codegen": 0.002, "compile": 0.038}))``.
    """
    total = sum(times.values()) or 1.0
    width = max((len(name) for name in times), default=5)
    rows = [f"{'stage':<{width}}  {'ms':>9}  {'share':>6}"]
    for name, seconds in times.items():
        rows.append(f"{name:<{width}}  {seconds * 1e3:9.3f}  {seconds / total:6.1%}")
    rows.append(f"{'total':<{width}}  {sum(times.values()) * 1e3:9.3f}  {1:6.1%}")
    return "\n".join(rows)
