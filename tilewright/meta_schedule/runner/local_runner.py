"""``LocalRunner``: built candidates in, measured times out, one at a time in a child process.

Measurements are sequential (one device, one kernel at a time) in one long-lived worker
process (``runner/worker.py``). A candidate that crashes the process, runs past
``timeout_sec`` or faults on a GPU becomes an error result, and the worker is replaced
before the next candidate.
"""

from __future__ import annotations

from tilewright.meta_schedule.builder.process_pool import WorkerPool
from tilewright.meta_schedule.runner.runner import (
    EvaluatorConfig,
    Runner,
    RunnerFuture,
    RunnerInput,
    RunnerResult,
)
from tilewright.meta_schedule.runner.worker import measure_or_report


class LocalRunner(Runner):
    """Measures candidates on this machine's device (TVM's ``ms.runner.LocalRunner``).

    Arguments:
        timeout_sec: the longest one candidate may take (check and timing); past it the
            worker is killed and the result says ``timeout after 30 s``.
        evaluator_config: how candidates are timed (``EvaluatorConfig()`` by default).
        max_restarts: after this many worker replacements in a row with no successful
            measurement between them, the rest of the batch is reported as not measured
            (the device or the build is broken; measuring on would only waste time). The
            count runs on across calls (the tuner hands over a round a few candidates at a
            time); once over the limit, a call tries its first input only.

    ``run`` measures every input before it returns (eagerly) and gives futures that are
    already done; the worker process stays alive between calls (``close()`` stops it).

    Example::

        >>> runner = ms.runner.LocalRunner(timeout_sec=10)
        >>> infos = tuple(ms.arg_info.ArgInfo.from_entry_func(mod))
        >>> (future,) = runner.run([RunnerInput(built.artifact_path, "cpu", infos)])
        >>> future.result().run_secs        # (0.00042,)
    """

    def __init__(
        self,
        timeout_sec: float = 30.0,
        evaluator_config: EvaluatorConfig | None = None,
        max_restarts: int = 16,
    ) -> None:
        if timeout_sec <= 0:
            raise ValueError(f"LocalRunner: timeout_sec must be positive, got {timeout_sec}")
        self.timeout_sec = timeout_sec
        self.evaluator_config = evaluator_config or EvaluatorConfig()
        self.max_restarts = max_restarts
        self._restarts = 0  # worker replacements since the last successful measurement
        self._pool = WorkerPool(1, what="runner")

    def run(self, runner_inputs: list[RunnerInput]) -> list[RunnerFuture]:
        """Measure each input in order; one (done) future per input."""
        return [RunnerFuture.ready(r) for r in self.measure_all(runner_inputs)]

    def measure_all(self, runner_inputs: list[RunnerInput]) -> list[RunnerResult]:
        """The results of ``run`` as a list."""
        results: list[RunnerResult] = []
        self._restarts = min(self._restarts, self.max_restarts)
        for index, runner_input in enumerate(runner_inputs):
            if self._restarts > self.max_restarts:
                message = (
                    f"not measured: the runner process was replaced {self._restarts} times in "
                    "a row without a successful measurement (last error: "
                    f"{results[-1].error_msg})"
                )
                results += [RunnerResult(error_msg=message)] * (len(runner_inputs) - index)
                break
            (outcome,) = self._pool.map(
                measure_or_report, [(runner_input, self.evaluator_config)], self.timeout_sec
            )
            if outcome.error is not None:  # the process died or timed out: already replaced
                results.append(RunnerResult(error_msg=outcome.error))
                self._restarts += 1
                continue
            result, poisoned = outcome.value
            results.append(result)
            if poisoned:
                self._pool.restart()
                self._restarts += 1
            elif result.error_msg is None:
                self._restarts = 0
        return results

    def close(self) -> None:
        """Stop the worker process (a later ``run`` starts a new one)."""
        self._pool.close()
