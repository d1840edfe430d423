"""``MutateThreadBinding``: a trace in, the same trace with another thread extent out (the
``sample_categorical`` that sets the inner factor of a split whose inner loop is bound to a
``threadIdx`` axis)."""

from __future__ import annotations

import random

from tilewright.meta_schedule.mutator.categorical import (
    can_change,
    categorical_producers,
    other_index,
)
from tilewright.meta_schedule.mutator.replay import ReplayingMutator, design_space, generator
from tilewright.schedule import ExprRV, LoopRV, Trace


class MutateThreadBinding(ReplayingMutator):
    """Change the decision of one ``sample_categorical`` that chooses a thread extent, in the
    pattern the rules ``AutoBind`` and ``CrossThreadReduction`` write::

        v = sch.sample_categorical([32, 64, 128], [1/3] * 3)
        l0, l1 = sch.split(loop, [None, v])
        sch.bind(l1, "threadIdx.x")

    The instruction is drawn uniformly among those in the pattern with another candidate;
    the new index is drawn with the probabilities of the others. TVM looks for
    ``threadIdx.x`` only; any ``threadIdx`` axis counts here. The result ends before
    ``enter_postproc`` and, with a tuning context, replays on the task's module (another
    extent can clash with a thread extent bound elsewhere in the same kernel).

    Example::

        >>> MutateThreadBinding().apply(trace, random.Random(0)).insts[k].decision != 1
        True
    """

    def apply(self, trace: Trace, rng: random.Random | None = None) -> Trace | None:
        rng = generator(rng)
        space = design_space(trace)
        candidates = [k for k in thread_extent_samples(space) if can_change(space.insts[k])]
        if not candidates:
            return None

        def propose() -> Trace:
            k = rng.choice(candidates)
            return space.with_decision(k, other_index(rng, space.insts[k]))

        return self.first_accepted(propose)


def thread_extent_samples(trace: Trace) -> list[int]:
    """Indices (trace order, each once) of the ``sample_categorical`` instructions whose value
    is the inner factor of a two-way split ``[None, v]`` whose inner loop is bound to a
    ``threadIdx`` axis.

    Example::

        >>> thread_extent_samples(sch.trace)
        [3]
    """
    producers = categorical_producers(trace)
    split_by_sample: dict[LoopRV, int] = {}
    found: set[int] = set()
    for inst in trace.insts:
        if inst.kind == "split":
            factors = inst.inputs[1]
            if (
                isinstance(factors, list | tuple)
                and len(factors) == 2
                and factors[0] is None
                and isinstance(factors[1], ExprRV)
                and factors[1] in producers
                and len(inst.outputs) == 2
            ):
                inner = inst.outputs[1]
                assert isinstance(inner, LoopRV)
                split_by_sample[inner] = producers[factors[1]]
        elif inst.kind == "bind":
            (loop,) = inst.inputs
            axis = inst.attrs[0]
            if isinstance(loop, LoopRV) and loop in split_by_sample and _is_thread_idx(axis):
                found.add(split_by_sample[loop])
    return sorted(found)


def _is_thread_idx(axis: object) -> bool:
    return isinstance(axis, str) and axis.startswith("threadIdx.")
