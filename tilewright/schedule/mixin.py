"""``ScheduleMixin``: what every family of ``Schedule`` methods (``block_methods``,
``sampling_methods``, ``iter_methods``, ``buffer_methods``, ``reindex_methods``) relies on from
``Schedule`` itself: its state, its generator, trace records and reference resolution."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from tilewright.ir.expr import PrimExpr
    from tilewright.schedule.instruction import Instruction, Ref
    from tilewright.schedule.reference import BlockRV, LoopRV
    from tilewright.schedule.state import ScheduleState
    from tilewright.schedule.tree import Site

    BlockArg = BlockRV | str


class ScheduleMixin:
    """The base of the method mixins; ``Schedule`` provides the members declared here."""

    _state: ScheduleState
    _insts: list[Instruction]
    _rng: random.Random

    if TYPE_CHECKING:  # provided by Schedule (and _block by BlockMethods)

        def _record(
            self,
            kind: str,
            inputs: Sequence[object],
            attrs: Sequence[object],
            outputs: Sequence[Ref | None] = (),
            decision: object = None,
        ) -> None: ...

        def _expr(self, ref: PrimExpr, primitive: str) -> int: ...

        @overload
        def _target(self, ref: BlockArg) -> BlockRV: ...
        @overload
        def _target(self, ref: LoopRV) -> LoopRV: ...
        def _target(self, ref: BlockArg | LoopRV) -> BlockRV | LoopRV: ...

        def _block(self, block: BlockArg, primitive: str) -> tuple[BlockRV, Site]: ...
