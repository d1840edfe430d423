"""The cost-model protocol (TVM's ``ms.cost_model`` names): a model scores candidates so
the search measures the promising ones first; higher scores predict faster candidates."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tilewright.meta_schedule.runner.runner import RunnerResult
    from tilewright.meta_schedule.search_strategy.search_strategy import MeasureCandidate
    from tilewright.meta_schedule.tune_context import TuneContext


class CostModel:
    """Predicts a score per candidate (higher: faster); subclasses implement the methods."""

    def load(self, path: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement load")

    def save(self, path: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement save")

    def update(
        self,
        context: TuneContext,
        candidates: list[MeasureCandidate],
        results: list[RunnerResult],
    ) -> None:
        """Learn from measured candidates (failed ones have ``run_secs`` None)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement update")

    def predict(self, context: TuneContext, candidates: list[MeasureCandidate]) -> np.ndarray:
        """One score per candidate, higher for faster."""
        raise NotImplementedError(f"{type(self).__name__} does not implement predict")
