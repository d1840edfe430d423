"""The tuning loop (TVM's ``ms.task_scheduler``): pick a task, let its search strategy
propose a batch, build it, measure it, report the results to the callbacks (database, cost
model) and the strategy; until the trial budget is spent or every task is done.

Subclasses choose the next task (``RoundRobin``, ``GradientBased``). A candidate that fails
to build or run is recorded as a failed trial; nothing a candidate does ends the session.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tilewright.meta_schedule.arg_info import TensorInfo
from tilewright.meta_schedule.builder.builder import Builder, BuilderInput
from tilewright.meta_schedule.database.database import Workload
from tilewright.meta_schedule.runner.runner import (
    ReferenceCheck,
    Runner,
    RunnerInput,
    RunnerResult,
)
from tilewright.meta_schedule.search_strategy.search_strategy import SearchStrategy
from tilewright.meta_schedule.tune_log import TuneLog

if TYPE_CHECKING:
    from tilewright.meta_schedule.cost_model.cost_model import CostModel
    from tilewright.meta_schedule.database.database import Database
    from tilewright.meta_schedule.measure_callback import MeasureCallback
    from tilewright.meta_schedule.tune_context import TuneContext


@dataclass
class TaskRecord:
    """A task during tuning: its context, strategy, workload, weight and progress."""

    context: TuneContext
    strategy: SearchStrategy
    workload: Workload
    args_info: tuple[TensorInfo, ...]
    device_type: str
    weight: float = 1.0
    check: ReferenceCheck | None = None
    flops: int = 0
    trials: int = 0
    done: bool = False
    best_secs: float = math.inf
    history: list[float] = field(default_factory=list)  # best seconds after each round


class TaskScheduler:
    """Runs the loop; ``next_task_id`` is the policy (-1: nothing left to tune)."""

    def __init__(self) -> None:
        self.tasks: list[TaskRecord] = []
        self.database: Database | None = None
        self.cost_model: CostModel | None = None
        self.log: TuneLog | None = None

    def next_task_id(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} does not implement next_task_id")

    def _live(self) -> list[int]:
        return [k for k, t in enumerate(self.tasks) if not t.done]

    def tune(
        self,
        tasks: list[TaskRecord],
        *,
        max_trials_global: int,
        max_trials_per_task: int | None,
        num_trials_per_iter: int,
        builder: Builder,
        runner: Runner,
        measure_callbacks: list[MeasureCallback],
        database: Database | None,
        cost_model: CostModel | None,
        log: TuneLog,
        max_seconds: float | None = None,
    ) -> None:
        """Tune ``tasks`` until ``max_trials_global`` trials are spent, all are done, or
        (when given) ``max_seconds`` have passed: no round starts after that."""
        start = time.perf_counter()
        self.tasks, self.database, self.cost_model, self.log = tasks, database, cost_model, log
        per_task = max_trials_per_task or max_trials_global
        for k, task in enumerate(tasks):
            spaces = task.context.generate_design_space()
            if not spaces:
                raise ValueError(f"task {task.context.task_name!r}: the design space is empty")
            log.info(f"task {k} ({task.context.task_name}): {len(spaces)} design space(s)")
            task.strategy.pre_tuning(per_task, num_trials_per_iter, spaces, database, cost_model)
        total = 0
        while total < max_trials_global:
            if max_seconds is not None and time.perf_counter() - start > max_seconds:
                log.info(f"time budget of {max_seconds:g} s spent: tuning stops")
                break
            task_id = self.next_task_id()
            if task_id < 0:
                break
            task = tasks[task_id]
            measured = self._round(task_id, measure_callbacks)
            total += measured
            if measured == 0 or task.trials >= per_task:
                task.done = True
                log.tasks[task_id].done = True
        for task in tasks:
            task.strategy.post_tuning()

    def _round(self, task_id: int, callbacks: list[MeasureCallback]) -> int:
        task = self.tasks[task_id]
        assert self.log is not None
        start = time.perf_counter()
        candidates = task.strategy.generate_measure_candidates()
        searched = time.perf_counter()
        report = getattr(task.strategy, "last_report", None)
        if report is not None:
            self.log.info(f"task {task.context.task_name}: search: {report}")
        if not candidates:
            return 0
        target = task.context.target
        assert target is not None
        builds = self._builder.build([BuilderInput(c.sch.mod, target) for c in candidates])
        built = time.perf_counter()
        inputs = [
            RunnerInput(b.artifact_path, task.device_type, task.args_info, task.check)
            for b in builds
            if b.artifact_path is not None
        ]
        futures = iter(self._runner.run(inputs)) if inputs else iter(())
        results: list[RunnerResult] = []
        for b in builds:
            if b.artifact_path is None:
                results.append(RunnerResult(error_msg=f"build failed: {b.error_msg}"))
            else:
                results.append(next(futures).result())
        ran = time.perf_counter()
        self.log.info(
            f"task {task.context.task_name}: search {searched - start:.1f} s, build "
            f"{built - searched:.1f} s, run {ran - built:.1f} s for {len(candidates)} candidates"
        )
        for callback in callbacks:
            callback.apply(self, task_id, candidates, builds, results)
        task.strategy.notify_runner_results(candidates, results)
        times: list[float | None] = []
        for r in results:
            ok = r.error_msg is None and r.run_secs
            times.append(sum(r.run_secs) / len(r.run_secs) if ok and r.run_secs else None)
        task.trials += len(candidates)
        task.best_secs = min([task.best_secs, *(t for t in times if t is not None)])
        task.history.append(task.best_secs)
        self.log.batch(task_id, times, [r.error_msg for r in results if r.error_msg])
        return len(candidates)

    # The loop's builder and runner, set by ``tune_tasks`` before ``tune``.
    _builder: Builder
    _runner: Runner
