"""cost_model."""
