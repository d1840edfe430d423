"""Candidates in, random feature matrices out: a stand-in extractor for testing cost models
and search strategies without lowering anything (TVM's ``RandomFeatureExtractor``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tilewright.meta_schedule.feature_extractor.feature_extractor import FeatureExtractor

if TYPE_CHECKING:
    from tilewright.meta_schedule.search_strategy.search_strategy import MeasureCandidate
    from tilewright.meta_schedule.tune_context import TuneContext


class RandomFeatureExtractor(FeatureExtractor):
    """Gives each candidate a ``(rows, feature_size)`` matrix of uniform draws in [0, 1),
    ``rows`` itself drawn from 1 to ``max_block_num``.

    The draws come from the extractor's own generator (``numpy.random.RandomState(seed)``,
    never numpy's global one) and continue from call to call: two extractors of one seed
    give the same sequence of matrices.

    Args:
        feature_size: the columns of every matrix.
        max_block_num: the most rows a matrix may have (at least 1).
        seed: the generator's seed.

    Example::

        >>> extractor = RandomFeatureExtractor(feature_size=8, max_block_num=3, seed=1)
        >>> [m.shape for m in extractor.extract_from(ctx, candidates[:2])]
        [(2, 8), (2, 8)]
        >>> model = XGBModel(extractor=extractor)       # a cost model fed noise
    """

    def __init__(self, *, feature_size: int = 30, max_block_num: int = 5, seed: int = 0) -> None:
        if feature_size < 1:
            raise ValueError(
                f"RandomFeatureExtractor: feature_size must be >= 1, got {feature_size}"
            )
        if max_block_num < 1:
            raise ValueError(
                f"RandomFeatureExtractor: max_block_num must be >= 1, got {max_block_num}"
            )
        self.feature_size = feature_size
        self.max_block_num = max_block_num
        self.seed = seed
        self._rng = np.random.RandomState(seed)

    def extract_from(
        self, context: TuneContext, candidates: list[MeasureCandidate]
    ) -> list[np.ndarray]:
        """One random float32 ``(rows, feature_size)`` matrix per candidate."""
        matrices = []
        for _ in candidates:
            rows = self._rng.randint(1, self.max_block_num + 1)
            matrices.append(self._rng.rand(rows, self.feature_size).astype(np.float32))
        return matrices
