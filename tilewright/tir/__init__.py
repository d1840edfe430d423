"""The TVM-compatible ``tir`` namespace: IR node names, ``Schedule`` and ``transform``.

A thin re-export: the IR lives in ``tilewright.ir``, schedules in ``tilewright.schedule`` and
passes in ``tilewright.transform``. Example::

    sch = tw.tir.Schedule(mod)
    (i,) = sch.get_loops(sch.get_block("C"))
"""

from __future__ import annotations

import importlib
from typing import Any

from tilewright.ir import *  # noqa: F403 - this namespace mirrors the IR's public names
from tilewright.ir import op
from tilewright.ir.op import (
    call,
    floordiv,
    floormod,
    if_then_else,
    logical_and,
    logical_not,
    logical_or,
    max_value,
    min_value,
    truncdiv,
    truncmod,
)

_LAZY = {
    "Schedule": ("tilewright.schedule", "Schedule"),
    "ScheduleError": ("tilewright.schedule", "ScheduleError"),
    "BlockRV": ("tilewright.schedule", "BlockRV"),
    "LoopRV": ("tilewright.schedule", "LoopRV"),
    "Trace": ("tilewright.schedule", "Trace"),
    "IndexMap": ("tilewright.schedule.index_map", "IndexMap"),
    "transform": ("tilewright.transform", None),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        loaded = importlib.import_module(module)
        return loaded if attr is None else getattr(loaded, attr)
    raise AttributeError(f"module 'tilewright.tir' has no attribute {name!r}")
