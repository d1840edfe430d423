"""``ReplayFunc``: a space generator in, candidates out: each candidate runs the generator
again (a ``ScheduleFn`` samples as it schedules), then the postprocessors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilewright.meta_schedule.search_strategy.replay_trace import ReplayTrace
from tilewright.schedule import ScheduleError

if TYPE_CHECKING:
    from tilewright.meta_schedule.search_strategy.sampling import RoundReport, SearchSession
    from tilewright.schedule import Schedule


class ReplayFunc(ReplayTrace):
    """Random search that re-runs the space generator for every candidate (TVM's
    ``ReplayFunc``): suited to a ``ScheduleFn`` whose function draws its own decisions.

    One of the generated schedules is picked at random and postprocessed. Deduplication,
    the budget and ``max_fail_count`` work as in ``ReplayTrace``.

    Example::

        ctx = ms.TuneContext(mod=mod, target="llvm", space_generator=stochastic_schedule_mm)
        strategy = ms.search_strategy.ReplayFunc()
        strategy._initialize_with_tune_context(ctx)
        strategy.pre_tuning(16, 4, ctx.generate_design_space())
        batch = strategy.generate_measure_candidates()
    """

    def _draw(self, session: SearchSession, report: RoundReport) -> Schedule | None:
        report.attempts += 1
        try:
            spaces = session.context.generate_design_space()
        except (ScheduleError, ValueError):
            report.rejected["replay"] += 1
            return None
        if not spaces:
            report.rejected["empty space"] += 1
            return None
        sch = spaces[session.rng.randrange(len(spaces))]
        return session.finish(sch, report)

    def clone(self) -> ReplayFunc:
        return ReplayFunc(self.max_fail_count)
