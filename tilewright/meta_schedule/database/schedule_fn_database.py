"""A schedule function in, a database out: hand-written schedules answer queries as if they
had been tuned (TVM's ``ms.database.ScheduleFnDatabase``).

Each query makes a fresh ``Schedule`` of the module and calls ``schedule_fn`` on it; the
function schedules it and returns True, or returns False to say it does not know this module
(then the query answers None). Nothing is stored: committing or listing records raises
``NotImplementedError``.
"""

from __future__ import annotations

from collections.abc import Callable

from tilewright.ir import IRModule
from tilewright.meta_schedule.database.database import TuningRecord, Workload
from tilewright.meta_schedule.database.memory_database import check_module_equality
from tilewright.meta_schedule.database.query_only_database import QueryOnlyDatabase
from tilewright.schedule import Schedule
from tilewright.target import Target


class ScheduleFnDatabase(QueryOnlyDatabase):
    """Answers queries by running a scheduling function on a fresh schedule of the module.

    The record it answers has the function's trace and no run times (``run_secs`` None):
    in a ``UnionDatabase`` any measured record beats it; put it first in an
    ``OrderedUnionDatabase`` to make it override tuned records.

    Args:
        schedule_fn: ``schedule_fn(sch) -> bool``: schedules ``sch`` in place and returns
            True, or returns False when it has nothing for ``sch.mod``.
        module_equality: how modules are compared; only ``"structural"``.

    Example::

        >>> def tile_matmul(sch: Schedule) -> bool:
        ...     try:
        ...         block = sch.get_block("C")
        ...     except ScheduleError:
        ...         return False                      # not a module this function knows
        ...     i, j, k = sch.get_loops(block)
        ...     sch.split(j, [None, 8])
        ...     return True
        >>> db = ScheduleFnDatabase(tile_matmul)
        >>> sch = ms.tir_integration.compile_tir(db, matmul_mod, "llvm")
        >>> db.query_schedule(vector_add_mod, "llvm") is None
        True
    """

    _instead = "it holds no records; commit to a MemoryDatabase or JSONDatabase"

    def __init__(
        self, schedule_fn: Callable[[Schedule], bool], module_equality: str = "structural"
    ) -> None:
        if not callable(schedule_fn):
            raise TypeError(
                f"ScheduleFnDatabase takes a function sch -> bool, not a "
                f"{type(schedule_fn).__name__}"
            )
        check_module_equality(module_equality)
        self.schedule_fn = schedule_fn
        self.module_equality = module_equality

    def __repr__(self) -> str:
        name = getattr(self.schedule_fn, "__qualname__", repr(self.schedule_fn))
        return f"ScheduleFnDatabase({name})"

    def query_schedule(
        self, mod: IRModule, target: Target | str, workload_name: str = "main"
    ) -> Schedule | None:
        """A fresh schedule of ``mod`` that ``schedule_fn`` scheduled; None when it returned
        False."""
        sch = Schedule(mod)
        applies = self.schedule_fn(sch)
        if not isinstance(applies, bool):
            raise TypeError(
                f"ScheduleFnDatabase: {self!r} must return True (it scheduled the module) or "
                f"False (it does not apply), not a {type(applies).__name__}"
            )
        return sch if applies else None

    def query_tuning_record(
        self, mod: IRModule, target: Target | str, workload_name: str = "main"
    ) -> TuningRecord | None:
        """A record of the function's trace (no run times) for ``target``; None when the
        function does not apply."""
        sch = self.query_schedule(mod, target, workload_name)
        if sch is None:
            return None
        return TuningRecord(
            sch.trace,
            Workload.of(mod),
            run_secs=None,
            target=Target(target) if isinstance(target, str) else target,
        )

    def query_ir_module(
        self, mod: IRModule, target: Target | str, workload_name: str = "main"
    ) -> IRModule | None:
        sch = self.query_schedule(mod, target, workload_name)
        return sch.mod if sch is not None else None
