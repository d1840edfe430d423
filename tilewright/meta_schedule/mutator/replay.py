"""Traces in, verdicts out: the design-space part of a trace that mutators change, and the
replay check that keeps a mutated trace from reaching the search unless it still schedules
the task's module.

A mutated trace ends before ``enter_postproc`` (TVM's ``WithDecision(...,
remove_postproc=True)``): the postprocessors' calls were made for the old decisions, and
the search runs the postprocessors again on the replayed candidate.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from tilewright.ir import IRModule
from tilewright.meta_schedule.mutator.mutator import Mutator
from tilewright.schedule import Schedule, ScheduleError, Trace
from tilewright.target import Target

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext

# How many proposals a mutator replays before it gives up on a trace.
ATTEMPTS = 16


def design_space(trace: Trace) -> Trace:
    """The instructions of ``trace`` before its ``enter_postproc`` (all when it has none).

    Example::

        >>> len(design_space(candidate.trace)) <= len(candidate.trace)
        True
    """
    for k, inst in enumerate(trace.insts):
        if inst.kind == "enter_postproc":
            return Trace(trace.insts[:k])
    return trace


def replays(trace: Trace, mod: IRModule) -> bool:
    """Whether ``trace`` replays on a fresh schedule of ``mod``: no primitive refuses, and
    every instruction returns as many references as the trace records (a ``get_loops`` that
    finds fewer loops than before would break the trace's Python text, which unpacks them).

    Example::

        >>> replays(sch.trace, mod)
        True
    """
    sch = Schedule(mod, seed=0)
    try:
        trace.apply_to_schedule(sch)
    except (ScheduleError, ValueError):
        return False
    made = [len(inst.outputs) for inst in sch.trace.insts]
    return made == [len(inst.outputs) for inst in trace.insts]


class ReplayingMutator(Mutator):
    """A mutator that keeps the task's module (and target) to analyse a trace by replaying
    it and to check its proposals before returning one.

    Without a tuning context the proposals are returned unchecked; mutators that cannot
    work without the module say so (``module``).
    """

    def __init__(self) -> None:
        self._mod: IRModule | None = None
        self._target: Target | None = None

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        self._mod = context.mod
        self._target = context.target

    def module(self) -> IRModule:
        """The task's module; ``ValueError`` when no tuning context gave one."""
        if self._mod is None:
            raise ValueError(
                f"{type(self).__name__} replays traces on the task's module: initialise it "
                f"with a TuneContext that has one (_initialize_with_tune_context)"
            )
        return self._mod

    def accepts(self, trace: Trace) -> bool:
        """Whether ``trace`` replays on the task's module (True when none is known)."""
        return self._mod is None or replays(trace, self._mod)

    def first_accepted(self, propose: Callable[[], Trace | None]) -> Trace | None:
        """The first of up to ``ATTEMPTS`` proposals that replays (None: a proposal was None,
        or none replayed)."""
        for _ in range(ATTEMPTS):
            proposal = propose()
            if proposal is None or self.accepts(proposal):
                return proposal
        return None


def generator(rng: random.Random | None) -> random.Random:
    """``rng``, or a freshly seeded generator when the caller gave none."""
    return rng if rng is not None else random.Random()
