"""The search-strategy protocol (TVM's ``ms.search_strategy`` names).

A strategy proposes ``MeasureCandidate``s in rounds: ``pre_tuning`` gives it the design
space, the database and the cost model; ``generate_measure_candidates`` returns the next
batch (``None`` when the budget is spent); ``notify_runner_results`` reports their
measurements; ``post_tuning`` ends the session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from tilewright.meta_schedule.arg_info import TensorInfo
from tilewright.schedule import Schedule

if TYPE_CHECKING:
    from tilewright.meta_schedule.cost_model.cost_model import CostModel
    from tilewright.meta_schedule.database.database import Database
    from tilewright.meta_schedule.runner.runner import RunnerResult
    from tilewright.meta_schedule.tune_context import TuneContext


@dataclasses.dataclass(frozen=True, eq=False)
class MeasureCandidate:
    """A postprocessed schedule to build and measure, with its argument descriptions."""

    sch: Schedule
    args_info: tuple[TensorInfo, ...]


def _never() -> bool:
    return False


class SearchStrategy:
    """Proposes candidates; subclasses implement the four protocol methods.

    ``time_is_up`` (beyond TVM) is asked between the batches of a search: once it says so,
    the search ends the round with what it has. The task scheduler sets it to its time
    budget's ``expired``; it never says so by default."""

    time_is_up: Callable[[], bool] = staticmethod(_never)

    def _initialize_with_tune_context(self, context: TuneContext) -> None:
        self.context = context

    def pre_tuning(
        self,
        max_trials: int,
        num_trials_per_iter: int,
        design_spaces: list[Schedule],
        database: Database | None = None,
        cost_model: CostModel | None = None,
    ) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement pre_tuning")

    def post_tuning(self) -> None:
        """End of the session (nothing to release by default)."""

    def generate_measure_candidates(self) -> list[MeasureCandidate] | None:
        raise NotImplementedError(
            f"{type(self).__name__} does not implement generate_measure_candidates"
        )

    def notify_runner_results(
        self, measure_candidates: list[MeasureCandidate], results: list[RunnerResult]
    ) -> None:
        """Measurements of the last batch, in order (ignored by default)."""

    def clone(self) -> SearchStrategy:
        raise NotImplementedError(f"{type(self).__name__} does not implement clone")
