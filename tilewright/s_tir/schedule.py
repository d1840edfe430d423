"""TVM's ``s_tir.schedule`` namespace: a thin re-export of ``tilewright.schedule`` with TVM's
newer names (``SBlockRV`` is ``BlockRV``).

Example::

    from tilewright.s_tir.schedule import InstructionKind, SBlockRV, Trace

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
from tilewright.schedule import BlockRV as SBlockRV
from tilewright.schedule.index_map import IndexMap
from tilewright.schedule.tensor_intrin import TensorIntrin

__all__ = [
    "BlockRV",
    "ExprRV",
    "IndexMap",
    "Instruction",
    "InstructionKind",
    "LoopRV",
    "SBlockRV",
    "Schedule",
    "ScheduleError",
    "TensorIntrin",
    "Trace",
]
