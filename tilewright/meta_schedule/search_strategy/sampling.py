"""Traces in, postprocessed and deduplicated candidates out: the state one search session
keeps (budget, measured modules) and the replays every search strategy makes.

A candidate is known by the structural hash of its postprocessed module
(``tilewright.ir.structural_hash(sch.mod)``, the ``candidate_shash`` of a tuning record);
the session never proposes a module whose hash the database measured before or the session
already proposed.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from tilewright.ir import structural_hash
from tilewright.meta_schedule.arg_info import ArgInfo, TensorInfo
from tilewright.meta_schedule.candidates import apply_postprocs
from tilewright.meta_schedule.replay_pool import Job, ReplayPool
from tilewright.meta_schedule.search_strategy.search_strategy import MeasureCandidate
from tilewright.schedule import Schedule, Trace

if TYPE_CHECKING:
    from tilewright.meta_schedule.cost_model.cost_model import CostModel
    from tilewright.meta_schedule.database.database import Database, Workload
    from tilewright.meta_schedule.tune_context import TuneContext

logger = logging.getLogger("tilewright.meta_schedule.search_strategy")


SAMPLE_PART = 32  # fresh samples replayed at a time: a search can stop between parts


@dataclasses.dataclass
class RoundReport:
    """What one call of ``generate_measure_candidates`` did.

    Attributes:
        proposed: candidates returned.
        attempts: replays tried (fresh samples, database records, mutations).
        rejected: failures by cause: ``replay`` (a primitive refused the decisions),
            ``mutator`` (a mutator had nothing to change), a postprocessor's name, or
            ``duplicate`` (a module measured or proposed before).
        seconds: wall time of the round; ``phases`` splits it (``sample``, ``evolve``, ...).
        picked: for each proposed candidate, where it came from: ``random`` (a fresh sample),
            ``best`` (a fresh sample the cost model ranked best), ``mutant`` (a mutation the
            cost model ranked best).
    """

    proposed: int = 0
    attempts: int = 0
    rejected: Counter[str] = dataclasses.field(default_factory=Counter)
    seconds: float = 0.0
    phases: dict[str, float] = dataclasses.field(default_factory=dict)
    picked: list[str] = dataclasses.field(default_factory=list)

    def __str__(self) -> str:
        reasons = ", ".join(f"{k} {v}" for k, v in self.rejected.most_common()) or "none"
        phases = ", ".join(f"{k} {v:.2f} s" for k, v in self.phases.items())
        return (
            f"{self.proposed} candidates from {self.attempts} attempts in {self.seconds:.2f} s"
            + (f" ({phases})" if phases else "")
            + f"; rejected: {reasons}"
        )


class SearchSession:
    """The state of one tuning session of a strategy (between ``pre_tuning`` and
    ``post_tuning``): the budget, the design space, the database and cost model, the hashes
    of every module measured or proposed, and a generator seeded from the context.

    Example::

        session = SearchSession(ctx, max_trials=64, num_trials_per_iter=16,
                                design_spaces=ctx.generate_design_space())
        sch = session.sample_fresh(report)     # None when rejected or already measured
    """

    def __init__(
        self,
        context: TuneContext,
        max_trials: int,
        num_trials_per_iter: int,
        design_spaces: list[Schedule],
        database: Database | None = None,
        cost_model: CostModel | None = None,
        owner: str = "search strategy",
    ) -> None:
        if context.mod is None:
            raise ValueError(f"{owner}: the TuneContext has no module")
        if max_trials <= 0 or num_trials_per_iter <= 0:
            raise ValueError(
                f"{owner}: max_trials ({max_trials}) and num_trials_per_iter "
                f"({num_trials_per_iter}) must be positive"
            )
        if not design_spaces:
            raise ValueError(f"{owner}: task {context.task_name!r} has an empty design space")
        self.context = context
        self.mod = context.mod
        self.max_trials = max_trials
        self.num_trials_per_iter = num_trials_per_iter
        self.design_spaces = list(design_spaces)
        self.traces = [s.trace for s in design_spaces]
        self.database = database
        self.cost_model = cost_model
        self.rng = random.Random(context.fork_seed())
        self.args_info: tuple[TensorInfo, ...] = tuple(ArgInfo.from_entry_func(self.mod))
        self.workload: Workload | None = None
        self.measured: set[int] = set()
        if database is not None:
            self.workload = database.commit_workload(self.mod)
            self.measured |= measured_hashes(database, self.workload)
        self.trials = 0
        self.pool: ReplayPool | None = None

    # ---- budget --------------------------------------------------------------------------
    def remaining(self) -> int:
        """How many candidates this round may still propose (0: the budget is spent)."""
        return max(0, min(self.num_trials_per_iter, self.max_trials - self.trials))

    def propose(self, schedules: list[Schedule]) -> list[MeasureCandidate] | None:
        """Count ``schedules`` against the budget and wrap them (None when there are none)."""
        if not schedules:
            return None
        self.trials += len(schedules)
        return [MeasureCandidate(sch, self.args_info) for sch in schedules]

    # ---- identity ------------------------------------------------------------------------
    def is_new(self, shash: int) -> bool:
        return shash not in self.measured

    def claim(self, sch: Schedule) -> bool:
        """Mark ``sch``'s module as proposed; False when it was measured or proposed before."""
        shash = structural_hash(sch.mod)
        if shash in self.measured:
            return False
        self.measured.add(shash)
        return True

    # ---- replays -------------------------------------------------------------------------
    def new_schedule(self) -> Schedule:
        return Schedule(self.mod, seed=self.rng.randrange(1, 2**31 - 1))

    def finish(self, sch: Schedule, report: RoundReport) -> Schedule | None:
        """Run the postprocessors on ``sch``; None (counted in ``report``) when one refuses."""
        rejected_by = apply_postprocs(self.context, sch)
        if rejected_by is not None:
            report.rejected[rejected_by] += 1
            return None
        return sch

    def sample_fresh(self, report: RoundReport) -> Schedule | None:
        """A random design-space trace replayed with fresh decisions and postprocessed."""
        return self.run_jobs([("fresh", self.random_trace(), self.seed())], report)[0]

    def replay(self, trace: Trace, report: RoundReport) -> Schedule | None:
        """``trace``'s design-space part replayed with its own decisions, postprocessed."""
        return self.run_jobs([("replay", trace, self.seed())], report)[0]

    def random_trace(self) -> Trace:
        return self.traces[self.rng.randrange(len(self.traces))]

    def seed(self) -> int:
        return self.rng.randrange(1, 2**31 - 1)

    def run_jobs(self, jobs: list[Job], report: RoundReport) -> list[Schedule | None]:
        """Replay ``jobs`` (``ReplayPool`` jobs: fresh samples, replays, mutations) on the
        session's worker processes; None (counted in ``report``) for each rejected one."""
        if self.pool is None:
            self.pool = ReplayPool(self.context)
        report.attempts += len(jobs)
        results: list[Schedule | None] = []
        for out in self.pool.run(jobs):
            if isinstance(out, str):
                report.rejected[out] += 1
                results.append(None)
            else:
                results.append(out)
        return results

    def close(self) -> None:
        """Stop the session's worker processes."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def _take(self, sch: Schedule | None, seen: set[int], report: RoundReport) -> bool:
        """Whether ``sch`` is new (neither measured, proposed, nor in ``seen``); adds it to
        ``seen``."""
        if sch is None:
            return False
        shash = structural_hash(sch.mod)
        if shash in self.measured or shash in seen:
            report.rejected["duplicate"] += 1
            return False
        seen.add(shash)
        return True

    def draw_new(
        self,
        draw: Callable[[RoundReport], Schedule | None],
        count: int,
        max_fail_count: int,
        report: RoundReport,
        time_is_up: Callable[[], bool] = lambda: False,
    ) -> list[Schedule]:
        """Up to ``count`` new, mutually distinct schedules from ``draw(report)``, marked
        proposed.

        Each slot tries ``max_fail_count`` draws (a rejection or a duplicate is a failure);
        a slot that gives up ends the round: the space is exhausted, or nearly all of it is
        rejected. ``time_is_up()`` ends it too, once a schedule was found.
        """
        found: list[Schedule] = []
        for _ in range(count):
            if found and time_is_up():
                break
            for _ in range(max_fail_count):
                sch = draw(report)
                if self._take(sch, self.measured, report):
                    assert sch is not None
                    found.append(sch)
                    break
            else:
                break
        return found

    def sample_population(
        self,
        count: int,
        min_count: int,
        max_fail_count: int,
        report: RoundReport,
        time_is_up: Callable[[], bool] = lambda: False,
    ) -> list[Schedule]:
        """Fresh samples, new and mutually distinct (not marked proposed), in batches (TVM's
        ``SampleInitPopulation``): a first batch of ``count`` draws, then batches of the
        missing number while fewer than ``min_count`` were found; a batch that finds none is
        a failure, and ``max_fail_count`` of them end the sampling, as does ``time_is_up()``
        after a batch."""
        found: list[Schedule] = []
        seen: set[int] = set()
        failures = 0
        while failures < max_fail_count and len(found) < count:
            if found and time_is_up():
                break
            before = len(found)
            jobs: list[Job] = [
                ("fresh", self.random_trace(), self.seed()) for _ in range(count - len(found))
            ]
            # A batch goes to the replay pool in parts, the time asked between them.
            for first in range(0, len(jobs), SAMPLE_PART):
                if first and found and time_is_up():
                    break
                for sch in self.run_jobs(jobs[first : first + SAMPLE_PART], report):
                    if self._take(sch, seen, report):
                        assert sch is not None
                        found.append(sch)
            failures += len(found) == before
            if len(found) >= min_count:
                break
        return found


def measured_hashes(database: Database, workload: Workload) -> set[int]:
    """The candidate hashes ``database`` has measured for ``workload``: its
    ``measured_hashes`` method when it has one, else the ``candidate_shash`` of its records.

    Example::

        >>> structural_hash(best.mod) in measured_hashes(db, db.commit_workload(mod))
        True
    """
    query = getattr(database, "measured_hashes", None)
    if callable(query):
        return {int(h) for h in query(workload)}
    return {
        r.candidate_shash
        for r in database.get_all_tuning_records()
        if r.workload.shash == workload.shash and r.candidate_shash is not None
    }


def log_round(name: str, context: TuneContext, report: RoundReport, start: float) -> None:
    report.seconds = time.perf_counter() - start
    logger.debug("%s %s: %s", name, context.task_name, report)
