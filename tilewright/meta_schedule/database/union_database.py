"""Several databases in, one answer out: ``UnionDatabase`` (the fastest record of any
member) and ``OrderedUnionDatabase`` (the first member that has one), TVM's names.

Both only answer queries (``query_tuning_record``, ``query_schedule``, ``query_ir_module``);
they hold no records of their own, so committing, listing or counting records raises
``NotImplementedError``: commit to a member instead. Members may be unions themselves.
"""

from __future__ import annotations

from tilewright.ir import IRModule
from tilewright.meta_schedule.database.database import Database, TuningRecord
from tilewright.meta_schedule.database.query_only_database import QueryOnlyDatabase
from tilewright.target import Target


def _check_members(owner: str, databases: tuple[Database, ...]) -> tuple[Database, ...]:
    for db in databases:
        if not isinstance(db, Database):
            raise TypeError(
                f"{owner} takes databases as separate arguments, "
                f"{owner}(db1, db2, ...); got a {type(db).__name__}"
            )
    return databases


class _Union(QueryOnlyDatabase):
    _instead = "commit to one of its member databases"

    def __init__(self, *databases: Database) -> None:
        self.databases = _check_members(type(self).__name__, databases)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(db) for db in self.databases)})"


class UnionDatabase(_Union):
    """Asks every member and answers with the record of the shortest mean run time
    (TVM's ``ms.database.UnionDatabase``).

    A record without run times (what a ``ScheduleFnDatabase`` answers) ranks after every
    measured one; between equal times the earlier member wins. Members must not be
    committed to through the union: the union is read-only.

    Args:
        *databases: the members, queried in order.

    Example::

        >>> old = JSONDatabase(work_dir="tune_monday")
        >>> new = JSONDatabase(work_dir="tune_friday")
        >>> both = UnionDatabase(old, new)
        >>> sch = ms.tir_integration.compile_tir(both, mod, "llvm")  # the faster of the two
        >>> both.commit_workload(mod)
        Traceback (most recent call last):
        NotImplementedError: UnionDatabase answers queries only ...
    """

    def query_tuning_record(
        self, mod: IRModule, target: Target | str, workload_name: str = "main"
    ) -> TuningRecord | None:
        """The member answers' record with the shortest mean run time; None when no member
        has one."""
        found = [
            record
            for db in self.databases
            if (record := db.query_tuning_record(mod, target, workload_name)) is not None
        ]
        # min() keeps the first of equal keys: on a tie the earlier member's record wins.
        return min(found, key=lambda r: r.mean_secs, default=None)


class OrderedUnionDatabase(_Union):
    """Asks the members in order and answers with the first record found (TVM's
    ``ms.database.OrderedUnionDatabase``): an earlier member overrides later ones whatever
    their run times, e.g. hand-written schedules before tuned ones.

    Args:
        *databases: the members, by priority (first: highest).

    Example::

        >>> handmade = ScheduleFnDatabase(my_schedule)   # answers for the modules it knows
        >>> tuned = JSONDatabase(work_dir="tune_logs")
        >>> db = OrderedUnionDatabase(handmade, tuned)
        >>> sch = ms.tir_integration.compile_tir(db, mod, "llvm")
    """

    def query_tuning_record(
        self, mod: IRModule, target: Target | str, workload_name: str = "main"
    ) -> TuningRecord | None:
        """The first member's record for ``mod``; None when no member has one."""
        for db in self.databases:
            record = db.query_tuning_record(mod, target, workload_name)
            if record is not None:
                return record
        return None
