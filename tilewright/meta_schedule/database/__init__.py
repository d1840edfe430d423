"""Tuning databases: where measured candidates are kept and the best one is found again.

``MemoryDatabase`` lives in one process; ``JSONDatabase`` persists to TVM's two JSON-lines
files in a work directory and may be shared by several processes.
"""

from tilewright.meta_schedule.database.database import Database, TuningRecord, Workload
from tilewright.meta_schedule.database.json_database import JSONDatabase
from tilewright.meta_schedule.database.memory_database import MemoryDatabase
from tilewright.meta_schedule.database.schedule_fn_database import ScheduleFnDatabase
from tilewright.meta_schedule.database.union_database import OrderedUnionDatabase, UnionDatabase

# TVM's subclassable spelling; the base class here is a Python class already.
PyDatabase = Database

__all__ = [
    "PyDatabase",
    "Database",
    "JSONDatabase",
    "MemoryDatabase",
    "OrderedUnionDatabase",
    "ScheduleFnDatabase",
    "TuningRecord",
    "UnionDatabase",
    "Workload",
]
