"""The runner protocol: artifacts in, measured times out (TVM's ``ms.runner`` names).

A ``RunnerInput`` is plain, serialisable data: the artifact's path, the device kind, the
argument descriptions and, for checking, where the reference outputs live. ``run`` returns
futures at once; ``result()`` of each gives the times in seconds or the error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tilewright.meta_schedule.arg_info import TensorInfo


@dataclasses.dataclass(frozen=True)
class EvaluatorConfig:
    """How a candidate is timed: ``number`` calls per repeat, ``repeat`` repeats, each
    repeat at least ``min_repeat_ms`` long; ``enable_cpu_cache_flush`` (on by default)
    rotates inputs through copies larger than twice the last-level cache (the L2 on a GPU)
    so that no call finds its inputs in cache. A candidate whose kernel call (timed alone,
    not with the check of its outputs) takes over ``slow_candidate_secs`` is timed by one
    call only (0 turns this off).

    ``warmup_ms`` (beyond TVM; 0 by default) runs each candidate untimed for that long
    first. A GPU under its power limit (the H200's 700 W) keeps its boost clock for about a
    second of load, then settles at a clock that depends on the running kernel's power
    draw: a kernel that does more per clock settles lower. Timed in their first
    milliseconds, kernels rank by a clock they do not keep; with ``warmup_ms=1000`` each is
    timed in its own steady state, as a long workload runs it.

    Example::

        runner = ms.runner.LocalRunner(evaluator_config=EvaluatorConfig(warmup_ms=1000))
    """

    number: int = 3
    repeat: int = 1
    min_repeat_ms: int = 40
    enable_cpu_cache_flush: bool = True
    slow_candidate_secs: float = 0.25
    warmup_ms: float = 0


@dataclasses.dataclass(frozen=True)
class ReferenceCheck:
    """How a runner checks a candidate's output before its time counts.

    The runner draws the arguments from ``seed`` (``runner.random_arguments``: uniform,
    never zero), calls the candidate once and compares every argument afterwards with the
    arrays stored at ``reference_path`` (an ``.npz`` of the unscheduled module's results on
    the same arguments, ``arg0``, ``arg1``, ...).
    """

    reference_path: str
    seed: int = 0
    rtol: float = 1e-3
    atol: float = 1e-4


@dataclasses.dataclass(frozen=True)
class RunnerInput:
    """One built candidate to measure."""

    artifact_path: str
    device_type: str
    args_info: tuple[TensorInfo, ...]
    check: ReferenceCheck | None = None


@dataclasses.dataclass(frozen=True)
class RunnerResult:
    """``run_secs`` (one entry per repeat) when the candidate ran and matched the reference,
    else ``error_msg`` (crash, timeout, device fault, wrong result)."""

    run_secs: tuple[float, ...] | None = None
    error_msg: str | None = None


class RunnerFuture:
    """A measurement in flight: ``done()`` polls, ``result()`` waits."""

    def __init__(self, f_done: Callable[[], bool], f_result: Callable[[], RunnerResult]) -> None:
        self._done = f_done
        self._result = f_result

    def done(self) -> bool:
        return self._done()

    def result(self) -> RunnerResult:
        return self._result()

    @staticmethod
    def ready(result: RunnerResult) -> RunnerFuture:
        """A future that is already done."""
        return RunnerFuture(lambda: True, lambda: result)


class Runner:
    """Measures candidates; subclasses implement ``run``."""

    def run(self, runner_inputs: list[RunnerInput]) -> list[RunnerFuture]:
        """One future per input, in order."""
        raise NotImplementedError(f"{type(self).__name__} does not implement run")
