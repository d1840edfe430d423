"""``RandomModel``: uniform random scores, the baseline (and the fallback) cost model.

Example::

    >>> model = RandomModel(seed=0)
    >>> model.predict(ctx, candidates)      # one score in [0, max_range) per candidate
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from tilewright.meta_schedule.cost_model.cost_model import CostModel

if TYPE_CHECKING:
    from tilewright.meta_schedule.runner.runner import RunnerResult
    from tilewright.meta_schedule.search_strategy.search_strategy import MeasureCandidate
    from tilewright.meta_schedule.tune_context import TuneContext


class RandomModel(CostModel):
    """Scores drawn uniformly from ``[0, max_range)``; it learns nothing.

    Args:
        seed: seed of the generator (None: fresh entropy).
        path: a file written by ``save`` to restore the generator from.
        max_range: the upper end of the scores.

    ``save`` writes the generator's state as JSON, so a loaded model continues the same
    sequence of scores.
    """

    def __init__(self, *, seed: int | None = None, path: str | None = None, max_range: int = 100):
        self.seed = seed
        self.max_range = max_range
        self.rng = np.random.default_rng(seed)
        self.updates = 0
        if path is not None:
            self.load(path)

    def load(self, path: str) -> None:
        with open(path) as f:
            data = json.load(f)
        if data.get("model") != "RandomModel":
            raise ValueError(f"{path}: not a RandomModel file (model={data.get('model')!r})")
        self.seed = data["seed"]
        self.max_range = data["max_range"]
        self.updates = data["updates"]
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = data["state"]

    def save(self, path: str) -> None:
        data = {
            "model": "RandomModel",
            "seed": self.seed,
            "max_range": self.max_range,
            "updates": self.updates,
            "state": self.rng.bit_generator.state,
        }
        with open(path, "w") as f:
            json.dump(data, f)

    def update(
        self,
        context: TuneContext,
        candidates: list[MeasureCandidate],
        results: list[RunnerResult],
    ) -> None:
        """Count the measured candidates; the scores stay random."""
        if len(candidates) != len(results):
            raise ValueError(f"{len(candidates)} candidates but {len(results)} runner results")
        self.updates += len(candidates)

    def predict(
        self, context: TuneContext | None, candidates: list[MeasureCandidate]
    ) -> np.ndarray:
        return self.scores(len(candidates))

    def scores(self, count: int) -> np.ndarray:
        """``count`` random scores (``predict`` without candidates)."""
        return self.rng.uniform(0, self.max_range, size=count)
