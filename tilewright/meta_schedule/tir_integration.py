"""From a tuning database to a schedule (TVM's ``ms.tir_integration``).

Example::

    database = ms.tune_tir(mod=MyModule, target="cuda", max_trials_global=64,
                           num_trials_per_iter=64, work_dir="./tune")
    sch = ms.tir_integration.compile_tir(database, MyModule, "cuda")
    rt_mod = tw.build(sch.mod, target="cuda")
"""

from __future__ import annotations

from tilewright.ir import IRModule, PrimFunc
from tilewright.meta_schedule.database.database import Database
from tilewright.meta_schedule.tune import best_schedule, tune_tir
from tilewright.schedule import Schedule
from tilewright.target import Target


def compile_tir(
    database: Database, mod: IRModule | PrimFunc, target: Target | str
) -> Schedule | None:
    """``mod`` scheduled by the best record of ``database`` for ``target`` (None when the
    database holds no valid record of it)."""
    return best_schedule(database, mod, target)


__all__ = ["compile_tir", "tune_tir"]
