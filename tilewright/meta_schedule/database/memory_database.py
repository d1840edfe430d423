"""Workloads and tuning records in, indexed queries out: the in-memory database.

Records are kept in commit order and indexed by the structural hash of their workload, so
``get_top_k`` looks at one workload's records only, and ``measured_hashes`` answers "was
this candidate module measured already?" without scanning.
"""

from __future__ import annotations

from tilewright.ir import IRModule, structural_hash
from tilewright.meta_schedule.database.database import (
    Database,
    TuningRecord,
    Workload,
    rank_records,
)

MODULE_EQUALITIES = ("structural",)


def check_module_equality(module_equality: str) -> None:
    """Refuse a module equality this database cannot key workloads by."""
    if module_equality not in MODULE_EQUALITIES:
        raise ValueError(
            f"module_equality {module_equality!r} is not supported; "
            f"choose one of {', '.join(MODULE_EQUALITIES)}"
        )


class MemoryDatabase(Database):
    """A database that lives in this process only (TVM's ``ms.database.MemoryDatabase``).

    Workloads are keyed by structural hash: two structurally equal modules are one workload.

    Example::

        >>> db = MemoryDatabase()
        >>> workload = db.commit_workload(mod)
        >>> db.commit_tuning_record(TuningRecord(sch.trace, workload, run_secs=(1e-3,)))
        >>> db.get_top_k(workload, 1)[0].run_secs
        (0.001,)
        >>> db.query_schedule(mod, "llvm").mod        # the best schedule, replayed
    """

    def __init__(self, module_equality: str = "structural") -> None:
        check_module_equality(module_equality)
        self.module_equality = module_equality
        self._workloads: dict[int, Workload] = {}
        self._records: list[TuningRecord] = []
        # Invariant: _by_workload[h] holds, in commit order, the records of workload h.
        self._by_workload: dict[int, list[TuningRecord]] = {}
        self._measured: dict[int, set[int]] = {}

    # Index maintenance, shared with the file-backed database.

    def _add_workload(self, workload: Workload) -> Workload:
        return self._workloads.setdefault(workload.shash, workload)

    def _add_record(self, record: TuningRecord) -> None:
        shash = record.workload.shash
        self._records.append(record)
        self._by_workload.setdefault(shash, []).append(record)
        if record.candidate_shash is not None:
            self._measured.setdefault(shash, set()).add(record.candidate_shash)

    # The Database protocol.

    def has_workload(self, mod: IRModule) -> bool:
        return structural_hash(mod) in self._workloads

    def commit_workload(self, mod: IRModule) -> Workload:
        """The stored workload structurally equal to ``mod``, added if new."""
        found = self._workloads.get(structural_hash(mod))
        return found if found is not None else self._add_workload(Workload.of(mod))

    def commit_tuning_record(self, record: TuningRecord) -> None:
        """Store ``record``; its workload is committed first if this database lacks it."""
        if record.workload.shash not in self._workloads:
            self._add_workload(record.workload)
        self._add_record(record)

    def get_all_tuning_records(self) -> list[TuningRecord]:
        """Every record, in commit order."""
        return list(self._records)

    def get_top_k(self, workload: Workload, top_k: int) -> list[TuningRecord]:
        """The ``top_k`` fastest valid candidates of ``workload``, fastest first (ties in
        commit order; see ``rank_records``); failed records (``run_secs`` None) never
        appear."""
        return rank_records(self._by_workload.get(workload.shash, ()), top_k)

    def measured_hashes(self, workload: Workload) -> set[int]:
        """The structural hashes of every candidate of ``workload`` recorded so far (failed
        ones included), so that a search never measures one module twice."""
        return set(self._measured.get(workload.shash, ()))

    def __len__(self) -> int:
        return len(self._records)
