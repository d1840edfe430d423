"""Feature extractors: candidates to matrices the cost models learn from (TVM's
``ms.feature_extractor``)."""

from tilewright.meta_schedule.feature_extractor.feature_extractor import FeatureExtractor
from tilewright.meta_schedule.feature_extractor.per_store_feature import (
    PerStoreFeature,
    feature_names,
    per_store_features,
)
from tilewright.meta_schedule.feature_extractor.random_feature_extractor import (
    RandomFeatureExtractor,
)

# TVM's subclassable spelling; the base class here is a Python class already.
PyFeatureExtractor = FeatureExtractor

__all__ = [
    "PyFeatureExtractor",
    "FeatureExtractor",
    "PerStoreFeature",
    "RandomFeatureExtractor",
    "feature_names",
    "per_store_features",
]
