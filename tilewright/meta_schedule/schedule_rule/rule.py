"""``ScheduleRule``: what a design space is made of. A rule looks at one block of a schedule
and returns the schedules it turns it into (one: a deterministic rewrite or none; several:
a fork of the design space)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, ClassVar

from tilewright.schedule import BlockRV, Schedule

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext


class ScheduleRule:
    """Base class of schedule rules (TVM's ``PyScheduleRule`` protocol).

    Subclasses override ``apply``; ``_initialize_with_tune_context`` reads the target.

    Example::

        class TileInnermost(ScheduleRule):
            def apply(self, sch, block):
                *_, inner = sch.get_loops(block)
                factors = sch.sample_perfect_tile(inner, n=2, max_innermost_factor=16)
                sch.split(inner, factors)
                return [sch]
    """

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        """Read what the rule needs from the tuning context (the target's limits)."""

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        """The schedules ``block`` of ``sch`` becomes; ``[sch]`` leaves it as it is."""
        raise NotImplementedError

    def clone(self) -> ScheduleRule:
        return copy.deepcopy(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ApplyCustomRule(ScheduleRule):
    """Apply the rule a block names in its ``schedule_rule`` annotation.

    Rules are registered by name (``ApplyCustomRule.register("my_rule", fn)`` with
    ``fn(sch, block) -> list[Schedule]``); a block annotated
    ``T.block_attr({"schedule_rule": "my_rule"})`` is scheduled by ``fn`` alone: the other
    rules leave it untouched (``PostOrderApply`` skips it for them).

    Example::

        ApplyCustomRule.register("tile_by_4", lambda sch, b: [tile_by_4(sch, b)])
    """

    registry: ClassVar[dict[str, object]] = {}

    @classmethod
    def register(cls, name: str, fn: object) -> None:
        if not callable(fn):
            raise TypeError(f"custom rule {name!r} must be callable, not {type(fn).__name__}")
        cls.registry[name] = fn

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        from tilewright.meta_schedule.analysis import CUSTOM_RULE, annotation, block_of

        name = annotation(block_of(sch, block), CUSTOM_RULE)
        if name is None:
            return [sch]
        if name == "None":
            return [sch]
        fn = self.registry.get(str(name))
        if fn is None:
            known = ", ".join(sorted(self.registry)) or "none"
            raise ValueError(
                f"block {block_of(sch, block).name!r} names the schedule rule {name!r}, which "
                f"is not registered (registered: {known})"
            )
        result = fn(sch, block)  # type: ignore[operator]  # checked callable at registration
        if isinstance(result, Schedule):
            return [result]
        return list(result) if result is not None else [sch]
