"""search_strategy."""
