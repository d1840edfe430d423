"""Candidates drawn from a design space: each a design-space trace replayed with fresh
decisions, then finished by the postprocessors (or rejected by one of them).

This is the sampling half of TVM's ``ReplayTrace`` search; the tuner's search strategies
draw their initial populations the same way.
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from tilewright.meta_schedule.defaults import is_gpu
from tilewright.meta_schedule.tune_context import TuneContext
from tilewright.schedule import Instruction, Schedule, ScheduleError, Trace
from tilewright.schedule.primitives.sampling import prime_factors, sample_perfect_tile


@dataclass
class SampleReport:
    """What one round of sampling did.

    Attributes:
        sampled: candidates that passed every postprocessor.
        attempts: replays tried.
        rejected: rejections by the name of the postprocessor that refused (``replay`` when
            the fresh decisions made a primitive refuse during the replay).
        seconds: wall time.
    """

    sampled: int = 0
    attempts: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    @property
    def rejection_rate(self) -> float:
        return 1.0 - self.sampled / self.attempts if self.attempts else 0.0

    @property
    def per_second(self) -> float:
        return self.sampled / self.seconds if self.seconds else 0.0

    def __str__(self) -> str:
        reasons = ", ".join(f"{k} {v}" for k, v in self.rejected.most_common()) or "none"
        return (
            f"{self.sampled} candidates from {self.attempts} attempts in {self.seconds:.2f} s "
            f"({self.per_second:.1f}/s; rejected: {reasons})"
        )


def fresh_decision(inst: Instruction, decision: object) -> object:
    """A decision provider for replays: every sampling instruction draws again."""
    return None


# GPU spaces: how many prime factors of a fresh perfect tile, on average, stay inside a block.
BLOCK_FACTORS = 6


def grid_weight(extent: int, n: int) -> float:
    """The probability that a prime factor of ``extent`` goes to the grid first, so that on
    average ``BLOCK_FACTORS`` of them land inside the block (0 for small extents: TVM's draw).

    Example::

        >>> grid_weight(4096, 5), grid_weight(64, 5)
        (0.375, 0.0)
    """
    primes = len(prime_factors(extent))
    inside = primes * (n - 1) / n  # what TVM's uniform draw puts inside, on average
    return max(0.0, 1.0 - BLOCK_FACTORS / inside) if inside else 0.0


def fresh_decisions(
    context: TuneContext, rng: random.Random
) -> Callable[[Instruction, object], object]:
    """The decision provider for fresh samples of ``context``'s space.

    Every sampling instruction draws again. On a GPU target, a perfect tile's prime factors
    go first to the outermost level (the grid) with probability ``grid_weight``, then
    uniformly, so that about six of them stay inside a block: TVM's uniform draw gives the
    grid a fifth of a 4096 loop's twelve factors, and nearly every draw of a large matmul
    asked for more threads, virtual threads or shared memory than a block has. Counted on
    the matmul's tile constraints, the draws that fit: 0.12% uniformly at 4096^3, 6.3% this
    way; 2.3% and 6.6% at 1024^3; 7.4% and 7.6% at 64^3 (unchanged: small loops are drawn
    uniformly). Every perfect tile can still be drawn, and the decisions are ordinary ones:
    replaying the trace needs nothing new.

    Example::

        provider = fresh_decisions(ctx, random.Random(0))
        replay_candidate(ctx, spaces[0].trace, sch, provider)
    """
    if context.target is None or not is_gpu(context.target):
        return fresh_decision

    def provide(inst: Instruction, decision: object) -> object:
        if inst.kind != "sample_perfect_tile" or not isinstance(decision, list | tuple):
            return None
        extent = math.prod(int(f) for f in decision)
        n, max_innermost = (int(a) for a in inst.attrs[:2])  # type: ignore[call-overload]
        weight = grid_weight(extent, n)
        if weight <= 0:
            return None
        return sample_perfect_tile(rng, extent, n, max_innermost, outer_weight=weight)

    return provide


def apply_postprocs(context: TuneContext, sch: Schedule) -> str | None:
    """Run the context's postprocessors on ``sch`` in order; the name of the one that
    rejected it, or None when all accepted."""
    sch.enter_postproc()
    for postproc in context.space_generator.postprocs:
        if not postproc.apply(sch):
            reason = getattr(postproc, "reason", "")
            return type(postproc).__name__ + (f" ({reason})" if reason else "")
    return None


class _EarlyReject(ScheduleError):
    def __init__(self, by: str) -> None:
        super().__init__("replay", "early-reject", by)
        self.by = by


def replay_candidate(
    context: TuneContext,
    trace: Trace,
    sch: Schedule,
    decision_provider: Callable[[Instruction, object], object] | None = None,
) -> str | None:
    """Replay ``trace``'s design-space part on ``sch`` (with ``decision_provider``'s
    decisions), then run the postprocessors. None when ``sch`` is a finished candidate,
    else why it was rejected: ``"replay"`` when a primitive refused the decisions, or the
    rejecting postprocessor's name and reason.

    The postprocessors' ``early_check`` runs after every instruction, so a candidate that
    ``VerifyGPUCode`` would refuse for its thread extents is dropped as soon as its loops
    are bound, before the costly rest of the replay.

    Example::

        sch = Schedule(ctx.mod, seed=1)
        reason = replay_candidate(ctx, spaces[0].trace, sch, lambda inst, d: None)
    """
    postprocs = context.space_generator.postprocs

    def check(inst: Instruction, current: Schedule) -> None:
        for postproc in postprocs:
            if not postproc.early_check(inst, current):
                reason = getattr(postproc, "reason", "")
                name = type(postproc).__name__ + (f" ({reason})" if reason else "")
                raise _EarlyReject(name)

    try:
        trace.apply_to_schedule(
            sch, remove_postproc=True, decision_provider=decision_provider, after_instruction=check
        )
    except _EarlyReject as err:
        return err.by
    except (ScheduleError, ValueError):
        return "replay"
    return apply_postprocs(context, sch)


def sample_candidates(
    context: TuneContext,
    count: int,
    *,
    max_attempts: int | None = None,
    spaces: list[Schedule] | None = None,
    progress: bool = False,
) -> tuple[list[Schedule], SampleReport]:
    """Draw ``count`` postprocessed candidates from the context's design space.

    Args:
        context: the task (module, target, space generator with its postprocessors).
        count: how many candidates to return.
        max_attempts: stop after this many replays (default ``20 * count``).
        spaces: the design space, if already generated.
        progress: print a progress line to stderr.

    Example::

        ctx = ms.TuneContext(mod=mod, target="llvm", rand_state=0)
        candidates, report = ms.sample_candidates(ctx, 64)
        print(report)   # 64 candidates from 70 attempts in 3.1 s (...)
    """
    if context.mod is None:
        raise ValueError("the TuneContext has no module")
    start = time.perf_counter()
    spaces = spaces if spaces is not None else context.generate_design_space()
    if not spaces:
        raise ValueError(f"task {context.task_name!r}: the design space is empty")
    traces = [s.trace for s in spaces]
    limit = max_attempts if max_attempts is not None else 20 * count
    report = SampleReport()
    found: list[Schedule] = []
    while len(found) < count and report.attempts < limit:
        report.attempts += 1
        trace: Trace = traces[context.rng.randrange(len(traces))]
        seed = context.fork_seed()
        sch = Schedule(context.mod, seed=seed)
        provider = fresh_decisions(context, random.Random(f"decisions {seed}"))
        rejected_by = replay_candidate(context, trace, sch, provider)
        if rejected_by is not None:
            report.rejected[rejected_by] += 1
            continue
        found.append(sch)
        if progress:
            line = f"\r{context.task_name}: {len(found)}/{count} candidates"
            print(line, end="", file=sys.stderr)
    if progress:
        print(file=sys.stderr)
    report.sampled = len(found)
    report.seconds = time.perf_counter() - start
    return found, report
