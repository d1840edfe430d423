"""The base of databases that answer queries but store nothing (the unions, the schedule
functions): every storage method refuses, naming the class and the method.

TVM's union and schedule-function databases refuse the same six methods; so does this base,
with ``NotImplementedError`` as there.
"""

from __future__ import annotations

from typing import NoReturn

from tilewright.ir import IRModule
from tilewright.meta_schedule.database.database import Database, TuningRecord, Workload


class QueryOnlyDatabase(Database):
    """A database that only answers ``query_tuning_record`` / ``query_schedule`` /
    ``query_ir_module``; subclasses implement ``query_tuning_record`` (and may override the
    other two)."""

    # What the refusal suggests instead; subclasses say it their way.
    _instead = "commit to a MemoryDatabase or JSONDatabase"

    def _refuse(self, method: str) -> NoReturn:
        raise NotImplementedError(
            f"{type(self).__name__} answers queries only and stores nothing: "
            f"{method} is not supported ({self._instead})"
        )

    def has_workload(self, mod: IRModule) -> bool:
        self._refuse("has_workload")

    def commit_workload(self, mod: IRModule) -> Workload:
        self._refuse("commit_workload")

    def commit_tuning_record(self, record: TuningRecord) -> None:
        self._refuse("commit_tuning_record")

    def get_top_k(self, workload: Workload, top_k: int) -> list[TuningRecord]:
        self._refuse("get_top_k")

    def get_all_tuning_records(self) -> list[TuningRecord]:
        self._refuse("get_all_tuning_records")

    def __len__(self) -> int:
        self._refuse("size (len)")

    def __bool__(self) -> bool:
        # ``if database:`` must not fall back on ``__len__``, which refuses.
        return True
