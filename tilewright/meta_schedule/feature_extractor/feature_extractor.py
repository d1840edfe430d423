"""The feature-extractor protocol (TVM's ``ms.feature_extractor`` names): a candidate
becomes a matrix with one row per store (buffer write) of its lowered program."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tilewright.meta_schedule.search_strategy.search_strategy import MeasureCandidate
    from tilewright.meta_schedule.tune_context import TuneContext


class FeatureExtractor:
    """Candidates to feature matrices; subclasses implement ``extract_from``."""

    def extract_from(
        self, context: TuneContext, candidates: list[MeasureCandidate]
    ) -> list[np.ndarray]:
        """One ``(stores, features)`` float32 matrix per candidate."""
        raise NotImplementedError(f"{type(self).__name__} does not implement extract_from")
