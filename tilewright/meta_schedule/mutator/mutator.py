"""``Mutator``: proposes a neighbour of a measured candidate by changing one decision of its
trace (or, for ``MutateParallel``, one annotation value)."""

from __future__ import annotations

import copy
import random
from typing import TYPE_CHECKING

from tilewright.schedule import Trace

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext


class Mutator:
    """Base class of mutators (TVM's ``PyMutator`` protocol).

    ``apply`` returns a new trace that replays to a legal schedule, or None when the trace
    offers this mutator nothing to change.

    Example::

        class FlipUnroll(Mutator):
            def apply(self, trace, rng=None):
                ...  # find a sample_categorical, return trace.with_decision(k, other)
    """

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        """Read what the mutator needs from the tuning context (the module, the target)."""

    def apply(self, trace: Trace, rng: random.Random | None = None) -> Trace | None:
        raise NotImplementedError

    def clone(self) -> Mutator:
        return copy.deepcopy(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
