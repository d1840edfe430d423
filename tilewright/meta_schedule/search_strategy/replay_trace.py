"""``ReplayTrace``: design-space traces in, candidates out: each round replays random traces
of the design space with fresh decisions, postprocessed, never a module measured before."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tilewright.meta_schedule.search_strategy.sampling import (
    RoundReport,
    SearchSession,
    log_round,
)
from tilewright.meta_schedule.search_strategy.search_strategy import (
    MeasureCandidate,
    SearchStrategy,
)

if TYPE_CHECKING:
    from tilewright.meta_schedule.cost_model.cost_model import CostModel
    from tilewright.meta_schedule.database.database import Database
    from tilewright.meta_schedule.runner.runner import RunnerResult
    from tilewright.meta_schedule.tune_context import TuneContext
    from tilewright.schedule import Schedule


class ReplayTrace(SearchStrategy):
    """Random search over the design space (TVM's ``ReplayTrace``).

    Each round proposes up to ``num_trials_per_iter`` candidates, each a random design-space
    trace replayed with fresh decisions and postprocessed. A candidate whose module was
    measured before (the database's records of this workload) or proposed in this session
    is drawn again; a slot that fails ``max_fail_count`` draws in a row ends the round (the
    space is exhausted, or nearly all of it is rejected). Returns None once ``max_trials``
    candidates were proposed, or when a round finds none.

    Example::

        strategy = ms.search_strategy.ReplayTrace()
        strategy._initialize_with_tune_context(ctx)
        strategy.pre_tuning(64, 16, ctx.generate_design_space(), database)
        while (batch := strategy.generate_measure_candidates()) is not None:
            strategy.notify_runner_results(batch, measure(batch))
        strategy.post_tuning()
    """

    def __init__(self, max_fail_count: int = 100) -> None:
        if max_fail_count <= 0:
            raise ValueError(f"ReplayTrace: max_fail_count must be positive, not {max_fail_count}")
        self.max_fail_count = max_fail_count
        self.session: SearchSession | None = None
        self.last_report: RoundReport | None = None

    def pre_tuning(
        self,
        max_trials: int,
        num_trials_per_iter: int,
        design_spaces: list[Schedule],
        database: Database | None = None,
        cost_model: CostModel | None = None,
    ) -> None:
        context: TuneContext | None = getattr(self, "context", None)
        if context is None:
            raise ValueError(
                f"{type(self).__name__}: call _initialize_with_tune_context before pre_tuning"
            )
        self.session = SearchSession(
            context,
            max_trials,
            num_trials_per_iter,
            design_spaces,
            database,
            cost_model,
            owner=type(self).__name__,
        )

    def post_tuning(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session = None

    def _active(self) -> SearchSession:
        if self.session is None:
            raise ValueError(f"{type(self).__name__}: call pre_tuning first")
        return self.session

    def _draw(self, session: SearchSession, report: RoundReport) -> Schedule | None:
        return session.sample_fresh(report)

    def generate_measure_candidates(self) -> list[MeasureCandidate] | None:
        session = self._active()
        count = session.remaining()
        if count == 0:
            return None
        start = time.perf_counter()
        report = RoundReport()
        found = session.draw_new(
            lambda r: self._draw(session, r), count, self.max_fail_count, report, self.time_is_up
        )
        report.proposed = len(found)
        report.picked = ["random"] * len(found)
        log_round(type(self).__name__, session.context, report, start)
        self.last_report = report
        return session.propose(found)

    def notify_runner_results(
        self, measure_candidates: list[MeasureCandidate], results: list[RunnerResult]
    ) -> None:
        """Nothing to learn: the proposed modules are already marked measured."""

    def clone(self) -> ReplayTrace:
        return ReplayTrace(self.max_fail_count)
