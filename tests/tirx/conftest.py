"""Shared test support for the tile layer: evaluate integer offset expressions."""

from __future__ import annotations

import pytest
from expr_eval import evaluate


@pytest.fixture(scope="session")
def evaluate_expr():
    return evaluate
