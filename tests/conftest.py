"""Puts tests/ on sys.path so that every test directory imports the shared fixture modules
(``seed_notebook``) by their plain names."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
