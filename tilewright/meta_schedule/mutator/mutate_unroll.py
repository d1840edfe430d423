"""``MutateUnroll``: a trace in, the same trace with another maximal unroll step out (the
``sample_categorical`` whose value annotates ``meta_schedule.unroll_explicit`` or
``meta_schedule.unroll_implicit``)."""

from __future__ import annotations

import random

from tilewright.meta_schedule.analysis import UNROLL_EXPLICIT, UNROLL_IMPLICIT
from tilewright.meta_schedule.mutator.categorical import (
    annotated_categoricals,
    can_change,
    only_annotated,
    other_index,
)
from tilewright.meta_schedule.mutator.replay import ReplayingMutator, design_space, generator
from tilewright.schedule import Trace


class MutateUnroll(ReplayingMutator):
    """Change the decision of one ``sample_categorical`` that chooses an unroll step.

    The instruction is drawn uniformly among those whose value an unroll annotation sets and
    that have another candidate; the new index is drawn with the probabilities of the other
    candidates (uniformly when the rule sampled uniformly). The result ends before
    ``enter_postproc``. A value used only by annotations replays whatever it is; one used
    elsewhere too is checked on the task's module.

    Example::

        >>> # v = sch.sample_categorical([0, 16, 64, 512], [0.25] * 4, decision=1)
        >>> # sch.annotate(root, "meta_schedule.unroll_explicit", v)
        >>> MutateUnroll().apply(trace, random.Random(0)).insts[k].decision in (0, 2, 3)
        True
    """

    def apply(self, trace: Trace, rng: random.Random | None = None) -> Trace | None:
        rng = generator(rng)
        space = design_space(trace)
        keys = [UNROLL_EXPLICIT, UNROLL_IMPLICIT]
        candidates = [k for k in annotated_categoricals(space, keys) if can_change(space.insts[k])]
        if not candidates:
            return None

        def propose() -> Trace:
            k = rng.choice(candidates)
            return space.with_decision(k, other_index(rng, space.insts[k]))

        if all(only_annotated(space, k) for k in candidates):
            return propose()
        return self.first_accepted(propose)
