"""The tuning loop (TVM's ``ms.task_scheduler``): pick a task, let its search strategy
propose a batch, build it, measure it, report the results to the callbacks (database, cost
model) and the strategy; until the trial budget is spent or every task is done.

Subclasses choose the next task (``RoundRobin``, ``GradientBased``). A candidate that fails
to build or run is recorded as a failed trial; nothing a candidate does ends the session.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tilewright.ir import IRModule, structural_hash
from tilewright.meta_schedule.arg_info import TensorInfo
from tilewright.meta_schedule.builder.builder import Builder, BuilderInput, BuilderResult
from tilewright.meta_schedule.database.database import Workload
from tilewright.meta_schedule.measure_callback import remove_artifacts
from tilewright.meta_schedule.runner.runner import (
    ReferenceCheck,
    Runner,
    RunnerInput,
    RunnerResult,
)
from tilewright.meta_schedule.search_strategy.search_strategy import (
    MeasureCandidate,
    SearchStrategy,
)
from tilewright.meta_schedule.task_scheduler.time_budget import TimeBudget
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
        self.budget = TimeBudget(None)

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
        max_seconds: float | TimeBudget | None = None,
    ) -> None:
        """Tune ``tasks`` until ``max_trials_global`` trials are spent, all are done, or
        (when given) the ``max_seconds`` budget (seconds from now, or a ``TimeBudget``
        started earlier) is spent: a round takes only the candidates that its estimated
        cost lets finish inside it, the runs of a round stop at the deadline, and the log
        says how the session ended against the budget."""
        self.tasks, self.database, self.cost_model, self.log = tasks, database, cost_model, log
        budget = max_seconds if isinstance(max_seconds, TimeBudget) else TimeBudget(max_seconds)
        self.budget = budget
        per_task = max_trials_per_task or max_trials_global
        for k, task in enumerate(tasks):
            # A search ends its round early, with what it has, once the budget is spent.
            task.strategy.time_is_up = budget.expired
            spaces = task.context.generate_design_space()
            if not spaces:
                raise ValueError(f"task {task.context.task_name!r}: the design space is empty")
            log.info(f"task {k} ({task.context.task_name}): {len(spaces)} design space(s)")
            task.strategy.pre_tuning(per_task, num_trials_per_iter, spaces, database, cost_model)
        total = 0
        while total < max_trials_global:
            limit = budget.fits(min(num_trials_per_iter, max_trials_global - total))
            if limit == 0:
                log.info(f"{budget.stopped}: tuning stops")
                break
            task_id = self.next_task_id()
            if task_id < 0:
                break
            task = tasks[task_id]
            measured = self._round(task_id, measure_callbacks, limit)
            total += measured
            if measured == 0 or task.trials >= per_task:
                task.done = True
                log.tasks[task_id].done = True
        for task in tasks:
            task.strategy.post_tuning()
        summary = budget.summary()
        if summary is not None:
            log.info(summary)

    def _round(self, task_id: int, callbacks: list[MeasureCallback], limit: int) -> int:
        """One round of ``task_id``: at most ``limit`` candidates proposed, built and run
        (fewer when the budget's deadline stops the runs); how many were measured."""
        task = self.tasks[task_id]
        assert self.log is not None
        start = self.budget.now()
        proposed = task.strategy.generate_measure_candidates()
        searched = self.budget.now()
        report = getattr(task.strategy, "last_report", None)
        if report is not None:
            self.log.info(f"task {task.context.task_name}: search: {report}")
        if not proposed:
            return 0
        candidates = proposed[:limit]
        if len(candidates) < len(proposed):
            self.log.info(
                f"task {task.context.task_name}: {len(candidates)} of {len(proposed)} "
                "candidates fit the time budget"
            )
        all_builds, results, build_secs = self._measure(task, [c.sch.mod for c in candidates])
        ran = self.budget.now()
        builds = all_builds[: len(results)]
        if len(results) < len(candidates):
            self.log.info(
                f"task {task.context.task_name}: the time budget's deadline stopped the runs "
                f"after {len(results)} of {len(candidates)} candidates"
            )
            candidates = candidates[: len(results)]
        self.log.info(
            f"task {task.context.task_name}: search {searched - start:.1f} s, build "
            f"{build_secs:.1f} s, run {ran - searched - build_secs:.1f} s for "
            f"{len(candidates)} candidates"
        )
        times: list[float | None] = []
        for r in results:
            ok = r.error_msg is None and r.run_secs
            times.append(sum(r.run_secs) / len(r.run_secs) if ok and r.run_secs else None)
        kept = self._keep_fastest(candidates, builds, times)
        for callback in callbacks:
            callback.apply(self, task_id, candidates, builds, results)
        task.strategy.notify_runner_results(candidates, results)
        task.trials += len(candidates)
        task.best_secs = min([task.best_secs, *(t for t in times if t is not None)])
        try:
            if not self.budget.expired():
                self.confirm_leaders(task_id, kept)
        finally:
            remove_artifacts(kept.values())
            # Artifacts of candidates the deadline left unrun (the callbacks saw none).
            remove_artifacts(b.artifact_path for b in all_builds[len(results) :] if b.artifact_path)
        task.history.append(task.best_secs)
        self.log.batch(task_id, times, [r.error_msg for r in results if r.error_msg])
        done = self.budget.now()
        self.budget.record(len(candidates), (searched - start) + (done - ran), (ran - searched))
        return len(candidates)

    # Candidates handed to the runner at a time: between two batches the deadline is checked.
    run_batch = 4

    def _measure(
        self, task: TaskRecord, mods: list[IRModule]
    ) -> tuple[list[BuilderResult], list[RunnerResult], float]:
        """Build ``mods`` for the task's target and run what built (a failed build becomes
        a failed run), a few at a time until the budget's deadline; the builds, the results
        (one per module run, in order: fewer than the builds when the deadline came first)
        and the seconds spent building.

        Without a budget everything is built at once. With one, builds go in chunks of
        twice the builder's workers and runs in batches of ``run_batch``, the deadline
        checked before each."""
        target = task.context.target
        assert target is not None
        chunk = len(mods)
        if self.budget.seconds is not None:
            # A builder that says how many it builds at once (LocalBuilder) is kept busy.
            workers = getattr(self._builder, "max_workers", self.run_batch)
            chunk = max(self.run_batch, 2 * workers)
        builds: list[BuilderResult] = []
        results: list[RunnerResult] = []
        build_secs = 0.0
        for first in range(0, len(mods), chunk):
            if self.budget.expired():
                break
            start = self.budget.now()
            built = self._builder.build(
                [BuilderInput(mod, target) for mod in mods[first : first + chunk]]
            )
            build_secs += self.budget.now() - start
            builds += built
            for at in range(0, len(built), self.run_batch):
                if self.budget.expired():
                    break
                results += self._run(task, built[at : at + self.run_batch])
        return builds, results, build_secs

    def _run(self, task: TaskRecord, builds: list[BuilderResult]) -> list[RunnerResult]:
        """Run what built of ``builds``, one result each (a failed build fails its run)."""
        inputs = [
            RunnerInput(b.artifact_path, task.device_type, task.args_info, task.check)
            for b in builds
            if b.artifact_path is not None
        ]
        futures = iter(self._runner.run(inputs)) if inputs else iter(())
        return [
            next(futures).result()
            if b.artifact_path is not None
            else RunnerResult(error_msg=f"build failed: {b.error_msg}")
            for b in builds
        ]

    # Beyond TVM: after each round the task's fastest candidates are timed again, until
    # each holds ``confirm_times`` timings; the database ranks candidates by their median.
    # On a loaded machine one timing can flatter a candidate by half, and the fastest of
    # hundreds of single timings is mostly the luckiest.
    confirm_top_k = 2
    confirm_times = 3

    def _keep_fastest(
        self,
        candidates: list[MeasureCandidate],
        builds: list[BuilderResult],
        times: list[float | None],
    ) -> dict[int, str]:
        """Copies of the artifacts of the round's ``confirm_top_k`` fastest candidates, by
        candidate hash: the leaders to time again are mostly among them, and the callbacks
        delete the round's artifacts."""
        ranked = sorted(
            (t, k) for k, t in enumerate(times) if t is not None and builds[k].artifact_path
        )
        kept: dict[int, str] = {}
        for _, k in ranked[: self.confirm_top_k]:
            path = builds[k].artifact_path
            assert path is not None
            copy = _copy_artifact(path)
            if copy is not None:
                kept[structural_hash(candidates[k].sch.mod)] = copy
        return kept

    def confirm_leaders(self, task_id: int, kept: dict[int, str] | None = None) -> None:
        """Time the task's ``confirm_top_k`` best candidates again (each measurement checks
        the result again too) until each has been measured ``confirm_times`` times; the
        task's best time becomes the database's best median.

        The missing timings of all pending leaders go to the runner in one batch, from the
        artifacts in ``kept`` (candidate hash to artifact path) where there is one; the
        others are built again, together."""
        task = self.tasks[task_id]
        database = self.database
        if database is None or self.confirm_top_k <= 0:
            return
        kept = kept or {}
        retimed = 0
        # A leader timed slower drops out and the next one comes in: until the leaders hold.
        for _ in range(self.confirm_top_k + 1):
            counts = Counter(
                r.candidate_shash
                for r in database.get_all_tuning_records()
                if r.workload.shash == task.workload.shash
            )
            leaders = database.get_top_k(task.workload, self.confirm_top_k)
            pending = [
                r
                for r in leaders
                if r.candidate_shash is not None and counts[r.candidate_shash] < self.confirm_times
            ]
            if not pending:
                break
            rebuild = [r for r in pending if r.candidate_shash not in kept]
            target = task.context.target
            assert target is not None
            builds = self._builder.build(
                [BuilderInput(r.as_schedule().mod, target) for r in rebuild]
            )
            paths = dict(kept)
            for record, build in zip(rebuild, builds):
                if build.artifact_path is not None:
                    paths[record.candidate_shash] = build.artifact_path  # type: ignore[index]
            jobs = [
                (record, paths.get(record.candidate_shash))  # type: ignore[arg-type]
                for record in pending
                for _ in range(self.confirm_times - counts[record.candidate_shash])
            ]
            inputs = [
                RunnerInput(path, task.device_type, task.args_info, task.check)
                for _, path in jobs
                if path is not None
            ]
            futures = iter(self._runner.run(inputs)) if inputs else iter(())
            for record, path in jobs:
                result = next(futures).result() if path is not None else None
                ok = result is not None and result.error_msg is None
                database.commit_tuning_record(
                    dataclasses.replace(record, run_secs=result.run_secs if ok else None)  # type: ignore[union-attr]
                )
                retimed += 1
            remove_artifacts(b.artifact_path for b in builds if b.artifact_path)
        best = database.get_top_k(task.workload, 1)
        if best:
            task.best_secs = best[0].median_secs
        if retimed and self.log is not None:
            self.log.info(
                f"task {task.context.task_name}: timed leaders {retimed} time(s) again; the "
                f"best median is {_gflops(task.flops, task.best_secs)}"
            )

    # The loop's builder and runner, set by ``tune_tasks`` before ``tune``.
    _builder: Builder
    _runner: Runner


def _copy_artifact(path: str) -> str | None:
    """A copy of the artifact at ``path`` (and its description), or None if it is gone."""
    try:
        handle, copy = tempfile.mkstemp(prefix="leader-", suffix=os.path.splitext(path)[1])
        os.close(handle)
        shutil.copyfile(path, copy)
        if os.path.exists(path + ".json"):
            shutil.copyfile(path + ".json", copy + ".json")
    except OSError:
        return None
    return copy


def _gflops(flops: int, secs: float) -> str:
    return f"{flops / secs / 1e9:.2f} GFLOP/s" if flops and 0 < secs < math.inf else f"{secs:.3g} s"
