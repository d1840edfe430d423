"""The database protocol: workloads and tuning records (TVM's ``ms.database`` names).

A ``Workload`` is a module with its structural hash (``tilewright.ir.structural_hash``:
equal for structurally equal modules, stable across processes and machines). A
``TuningRecord`` is one measured candidate: its trace (the schedule, replayable on the
workload), the run times (``None`` when the build or run failed), the target and the
argument descriptions. Records serialise to JSON lists (``as_json`` / ``from_json``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from typing import Any

from tilewright.ir import IRModule, structural_hash
from tilewright.meta_schedule.arg_info import TensorInfo
from tilewright.schedule import Schedule, Trace
from tilewright.target import Target


@dataclasses.dataclass(frozen=True, eq=False)
class Workload:
    """A module to tune and its structural hash (``shash``)."""

    mod: IRModule
    shash: int

    @staticmethod
    def of(mod: IRModule) -> Workload:
        return Workload(mod, structural_hash(mod))

    def as_json(self) -> list[Any]:
        """``[hash as a decimal string, the module as script]``."""
        return [str(self.shash), self.mod.script()]

    @staticmethod
    def from_json(data: list[Any]) -> Workload:
        from tilewright.script import from_source

        shash, text = data
        mod = from_source(text)
        if not isinstance(mod, IRModule):
            mod = IRModule({"main": mod})
        return Workload(mod, int(shash))


@dataclasses.dataclass(frozen=True, eq=False)
class TuningRecord:
    """One measured (or failed) candidate of ``workload``."""

    trace: Trace
    workload: Workload
    run_secs: tuple[float, ...] | None = None
    target: Target | None = None
    args_info: tuple[TensorInfo, ...] | None = None
    # Structural hash of the candidate's scheduled (postprocessed) module: the search
    # measures no module twice, across sessions too.
    candidate_shash: int | None = None

    @property
    def is_valid(self) -> bool:
        """The candidate built, ran and was correct."""
        return bool(self.run_secs) and all(math.isfinite(s) for s in self.run_secs or ())

    @property
    def mean_secs(self) -> float:
        """Mean run time, ``inf`` for a failed candidate."""
        if not self.is_valid:
            return math.inf
        secs = self.run_secs or ()
        return sum(secs) / len(secs)

    @property
    def median_secs(self) -> float:
        """Median of the run times (``inf`` for a failed candidate): what ranks records."""
        if not self.is_valid:
            return math.inf
        return float(statistics.median(self.run_secs or ()))

    def as_schedule(self) -> Schedule:
        """The workload with this record's trace replayed."""
        sch = Schedule(self.workload.mod)
        self.trace.apply_to_schedule(sch)
        return sch

    def as_json(self) -> list[Any]:
        """``[trace, run_secs, target, args_info, candidate hash]`` (the workload is stored
        apart)."""
        return [
            self.trace.as_json(),
            list(self.run_secs) if self.run_secs is not None else None,
            str(self.target) if self.target is not None else None,
            [a.as_json() for a in self.args_info] if self.args_info is not None else None,
            str(self.candidate_shash) if self.candidate_shash is not None else None,
        ]

    @staticmethod
    def from_json(data: list[Any], workload: Workload) -> TuningRecord:
        trace, run_secs, target, args_info = data[:4]
        shash = data[4] if len(data) > 4 else None
        return TuningRecord(
            Trace.from_json(trace),
            workload,
            tuple(float(s) for s in run_secs) if run_secs is not None else None,
            Target(target) if target is not None else None,
            tuple(TensorInfo.from_json(a) for a in args_info) if args_info is not None else None,
            int(shash) if shash is not None else None,
        )


def rank_records(records: Sequence[TuningRecord], top_k: int) -> list[TuningRecord]:
    """The ``top_k`` fastest valid candidates among ``records``, fastest first, ties in
    commit order.

    Records of one candidate (the same ``candidate_shash``: a leader the tuner timed again,
    see ``TaskScheduler.confirm_leaders``) count as one, holding every measurement in
    ``run_secs``, and candidates rank by the median of their measurements: one lucky timing
    on a noisy machine does not keep a candidate first. A candidate that failed any of its
    measurements (a result wrong once is a race) is left out, as are failed records.
    """
    if top_k < 0:
        raise ValueError(f"get_top_k: top_k must be non-negative, got {top_k}")
    merged: dict[object, TuningRecord] = {}
    failed: set[object] = set()
    for k, record in enumerate(records):
        key = record.candidate_shash if record.candidate_shash is not None else ("record", k)
        if not record.is_valid:
            failed.add(key)
            continue
        first = merged.get(key)
        if first is None:
            merged[key] = record
        else:
            secs = (*(first.run_secs or ()), *(record.run_secs or ()))
            merged[key] = dataclasses.replace(first, run_secs=secs)
    ranked = [r for key, r in merged.items() if key not in failed]
    ranked.sort(key=lambda r: r.median_secs)
    return ranked[:top_k]


class Database:
    """Stores workloads and tuning records; subclasses implement the storage.

    The query methods (``query_tuning_record``, ``query_schedule``, ``query_ir_module``)
    are shared: the best valid record of the module's workload for the target.
    """

    def has_workload(self, mod: IRModule) -> bool:
        raise NotImplementedError(f"{type(self).__name__} does not implement has_workload")

    def commit_workload(self, mod: IRModule) -> Workload:
        """The stored workload structurally equal to ``mod``, added if new."""
        raise NotImplementedError(f"{type(self).__name__} does not implement commit_workload")

    def commit_tuning_record(self, record: TuningRecord) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement commit_tuning_record")

    def get_all_tuning_records(self) -> list[TuningRecord]:
        raise NotImplementedError(
            f"{type(self).__name__} does not implement get_all_tuning_records"
        )

    def get_top_k(self, workload: Workload, top_k: int) -> list[TuningRecord]:
        """The ``top_k`` fastest valid candidates of ``workload``, fastest first (see
        ``rank_records``)."""
        records = self.get_all_tuning_records()
        return rank_records([r for r in records if r.workload.shash == workload.shash], top_k)

    def __len__(self) -> int:
        return len(self.get_all_tuning_records())

    def query_tuning_record(
        self, mod: IRModule, target: Target | str, workload_name: str = "main"
    ) -> TuningRecord | None:
        """The fastest valid record of ``mod`` for ``target``; None when there is none."""
        if not self.has_workload(mod):
            return None
        target_text = str(Target(target) if isinstance(target, str) else target)
        workload = self.commit_workload(mod)
        for record in self.get_top_k(workload, len(self)):
            if record.target is None or str(record.target) == target_text:
                return record
        return None

    def query_schedule(
        self, mod: IRModule, target: Target | str, workload_name: str = "main"
    ) -> Schedule | None:
        """``mod`` with the best record's trace replayed; None when there is none."""
        record = self.query_tuning_record(mod, target, workload_name)
        if record is None:
            return None
        sch = Schedule(mod)
        record.trace.apply_to_schedule(sch)
        return sch

    def query_ir_module(
        self, mod: IRModule, target: Target | str, workload_name: str = "main"
    ) -> IRModule | None:
        sch = self.query_schedule(mod, target, workload_name)
        return sch.mod if sch is not None else None
