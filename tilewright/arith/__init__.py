"""Integer arithmetic: simplification, constant bounds, symbolic interval sets and proofs."""

from __future__ import annotations

import importlib
from typing import Any

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.const_int_bound import NEG_INF, POS_INF, ConstIntBound, const_int_bound
from tilewright.arith.int_set import IntervalSet, eval_set
from tilewright.arith.linear_form import LinearForm, to_form
from tilewright.arith.simplify import simplify, simplify_stmt

# Modules written elsewhere in the package, resolved on first use so that this package
# imports even before they exist.
_LAZY_MODULES = ("region", "iter_map")


def __getattr__(name: str) -> Any:
    """The lazy modules themselves, or a public name defined in one of them."""
    if name in _LAZY_MODULES:
        return importlib.import_module(f"tilewright.arith.{name}")
    if not name.startswith("_"):
        for module_name in _LAZY_MODULES:
            module = importlib.import_module(f"tilewright.arith.{module_name}")
            value = getattr(module, name, None)
            # Only what the module defines, not what it imports.
            if getattr(value, "__module__", None) == module.__name__:
                return value
    raise AttributeError(f"module 'tilewright.arith' has no attribute {name!r}")


__all__ = [
    "NEG_INF",
    "POS_INF",
    "Analyzer",
    "ConstIntBound",
    "IntervalSet",
    "LinearForm",
    "const_int_bound",
    "eval_set",
    "simplify",
    "simplify_stmt",
    "to_form",
]
