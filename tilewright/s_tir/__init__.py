"""TVM's ``s_tir`` namespace (schedulable TIR, where newer TVM keeps ``Schedule``, traces and
meta-schedule): a thin re-export of ``tilewright.schedule`` and ``tilewright.meta_schedule``.

Example::

    from tilewright import s_tir

    sch = s_tir.Schedule(mod)
    (i,) = sch.get_loops(sch.get_sblock("C"))
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Schedule": ("tilewright.schedule", "Schedule"),
    "ScheduleError": ("tilewright.schedule", "ScheduleError"),
    "SBlockRV": ("tilewright.schedule", "BlockRV"),
    "BlockRV": ("tilewright.schedule", "BlockRV"),
    "LoopRV": ("tilewright.schedule", "LoopRV"),
    "ExprRV": ("tilewright.schedule", "ExprRV"),
    "Trace": ("tilewright.schedule", "Trace"),
    "Instruction": ("tilewright.schedule", "Instruction"),
    "InstructionKind": ("tilewright.schedule", "InstructionKind"),
    "IndexMap": ("tilewright.schedule.index_map", "IndexMap"),
    "TensorIntrin": ("tilewright.schedule.tensor_intrin", "TensorIntrin"),
    "schedule": ("tilewright.s_tir.schedule", None),
    "meta_schedule": ("tilewright.meta_schedule", None),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        loaded = importlib.import_module(module)
        return loaded if attr is None else getattr(loaded, attr)
    raise AttributeError(f"module 'tilewright.s_tir' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
