"""``Postproc``: finishes a sampled schedule (turns annotations into primitives) or rejects
it (``apply`` returns False) before it is built."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from tilewright.schedule import Instruction, Schedule

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext


class Postproc:
    """Base class of postprocessors (TVM's ``PyPostproc`` protocol).

    Example::

        class RejectBigUnroll(Postproc):
            def apply(self, sch):
                return "pragma_auto_unroll_max_step=1024" not in sch.mod.script()
    """

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        """Read what the postprocessor needs from the tuning context (the target)."""

    def apply(self, sch: Schedule) -> bool:
        """Rewrite ``sch`` in place; False rejects the candidate."""
        raise NotImplementedError

    def early_check(self, inst: Instruction, sch: Schedule) -> bool:
        """Called during a candidate's replay after ``inst``: False when ``apply`` is sure
        to reject the finished candidate (what was checked cannot change later), so the
        search stops replaying it at once. The default checks nothing."""
        return True

    def clone(self) -> Postproc:
        return copy.deepcopy(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
