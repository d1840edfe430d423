"""TVM's ``tir.schedule`` namespace: a thin re-export of ``tilewright.schedule``.

Example::

    from tilewright.tir.schedule import Instruction, InstructionKind, Trace

    kind = InstructionKind.get("GetSBlock")   # kind.name == "GetSBlock"
"""

from __future__ import annotations

from tilewright.schedule import (
    BlockRV,
    ExprRV,
    Instruction,
    InstructionKind,
    LoopRV,
    Schedule,
    ScheduleError,
    Trace,
)
from tilewright.schedule.index_map import IndexMap
from tilewright.schedule.tensor_intrin import TensorIntrin

__all__ = [
    "BlockRV",
    "ExprRV",
    "IndexMap",
    "Instruction",
    "InstructionKind",
    "LoopRV",
    "Schedule",
    "ScheduleError",
    "TensorIntrin",
    "Trace",
]
