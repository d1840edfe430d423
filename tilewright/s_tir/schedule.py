"""TVM's ``s_tir.schedule`` namespace: a thin re-export of ``tilewright.schedule`` with TVM's
newer names (``SBlockRV`` is ``BlockRV``).

Example::

    from tilewright.s_tir.schedule import InstructionKind, SBlockRV, Trace

    kind = InstructionKind.get("GetSBlock")   # kind.name == "GetSBlock"
"""

from __future__ import annotations

from tilewright.schedule import BlockRV as SBlockRV
from tilewright.tir.schedule import (
    BlockRV,
    ExprRV,
    IndexMap,
    Instruction,
    InstructionKind,
    LoopRV,
    Schedule,
    ScheduleError,
    TensorIntrin,
    Trace,
)

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
