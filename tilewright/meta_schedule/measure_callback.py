"""What happens after each batch is measured (TVM's ``ms.measure_callback`` names): records
go to the database, the cost model learns, build artifacts are deleted.

A callback is called as ``apply(scheduler, task_id, candidates, builder_results,
runner_results)``; ``default_callbacks()`` gives the three above in that order.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tilewright.ir import structural_hash
from tilewright.meta_schedule.database.database import TuningRecord

if TYPE_CHECKING:
    from tilewright.meta_schedule.builder.builder import BuilderResult
    from tilewright.meta_schedule.runner.runner import RunnerResult
    from tilewright.meta_schedule.search_strategy.search_strategy import MeasureCandidate
    from tilewright.meta_schedule.task_scheduler.task_scheduler import TaskScheduler


class MeasureCallback:
    """Base class: subclasses implement ``apply``."""

    def apply(
        self,
        scheduler: TaskScheduler,
        task_id: int,
        candidates: list[MeasureCandidate],
        builder_results: list[BuilderResult],
        runner_results: list[RunnerResult],
    ) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement apply")


class AddToDatabase(MeasureCallback):
    """Commit one tuning record per candidate (failed ones too, with ``run_secs`` None, so
    a resumed session does not measure them again)."""

    def apply(self, scheduler, task_id, candidates, builder_results, runner_results):
        task = scheduler.tasks[task_id]
        if scheduler.database is None:
            return
        for cand, result in zip(candidates, runner_results):
            scheduler.database.commit_tuning_record(
                TuningRecord(
                    trace=cand.sch.trace,
                    workload=task.workload,
                    run_secs=result.run_secs if result.error_msg is None else None,
                    target=task.context.target,
                    args_info=cand.args_info,
                    candidate_shash=structural_hash(cand.sch.mod),
                )
            )


class UpdateCostModel(MeasureCallback):
    """Let the cost model learn from the batch."""

    def apply(self, scheduler, task_id, candidates, builder_results, runner_results):
        if scheduler.cost_model is not None:
            scheduler.cost_model.update(
                scheduler.tasks[task_id].context, candidates, runner_results
            )


class RemoveBuildArtifact(MeasureCallback):
    """Delete the batch's artifacts (the payload and its description)."""

    def apply(self, scheduler, task_id, candidates, builder_results, runner_results):
        remove_artifacts(r.artifact_path for r in builder_results if r.artifact_path)


def remove_artifacts(paths: Iterable[str]) -> None:
    """Delete the artifacts at ``paths`` and their descriptions (``path + ".json"``)."""
    for path in list(paths):
        for name in (path, path + ".json"):
            if os.path.isdir(name):
                shutil.rmtree(name, ignore_errors=True)
            elif os.path.exists(name):
                os.remove(name)


def default_callbacks() -> list[MeasureCallback]:
    return [AddToDatabase(), RemoveBuildArtifact(), UpdateCostModel()]


# TVM's subclassable spelling; the base class here is a Python class already.
PyMeasureCallback = MeasureCallback
