"""The ``Schedule`` methods of the buffer-layout primitives (unsafe_set_dtype,
transform_block_layout, set_axis_separator, padding, rolling buffers, ...), mixed into
``Schedule`` (each method checks, rewrites, commits and records, as in ``block_methods``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tilewright.schedule.instruction import Instruction, Ref
    from tilewright.schedule.state import ScheduleState


class BufferMethods:
    """Mixed into ``Schedule``."""

    _state: ScheduleState
    _insts: list[Instruction]

    if TYPE_CHECKING:  # provided by Schedule, the class this one is mixed into

        def _record(
            self,
            kind: str,
            inputs: Sequence[object],
            attrs: Sequence[object],
            outputs: Sequence[Ref] = (),
            decision: object = None,
        ) -> None: ...
