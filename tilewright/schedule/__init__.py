"""Schedules: transform a module's loops and blocks by primitives, keeping a replayable trace."""

from tilewright.schedule.error import RULES, ScheduleError
from tilewright.schedule.instruction import Instruction, InstructionKind
from tilewright.schedule.reference import BlockRV, ExprRV, LoopRV
from tilewright.schedule.schedule import Schedule
from tilewright.schedule.trace import Trace

__all__ = [
    "RULES",
    "BlockRV",
    "ExprRV",
    "Instruction",
    "InstructionKind",
    "LoopRV",
    "Schedule",
    "ScheduleError",
    "Trace",
]
