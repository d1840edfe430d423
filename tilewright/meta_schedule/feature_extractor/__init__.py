"""feature_extractor."""
