"""The TVM-compatible ``tir`` namespace: IR node names, ``Schedule`` and ``transform``.

A thin re-export: the IR lives in ``tilewright.ir``, schedules in ``tilewright.schedule`` and
passes in ``tilewright.transform``. Example::

    sch = tw.tir.Schedule(mod)
    (i,) = sch.get_loops(sch.get_block("C"))
"""

from __future__ import annotations

import importlib
from typing import Any

from tilewright.ir import *  # noqa: F403 - this namespace mirrors the IR's public names
from tilewright.ir import PrimExpr, op
from tilewright.ir.op import (
    call,
    floordiv,
    floormod,
    if_then_else,
    logical_and,
    logical_not,
    logical_or,
    truncdiv,
    truncmod,
)
from tilewright.ir.op import dtype_max as max_value  # TVM's names: a dtype's limits
from tilewright.ir.op import dtype_min as min_value


def all(*conditions: object) -> PrimExpr:
    """The conjunction of ``conditions`` (TVM's ``tvm.tir.all``).

    Example: ``tw.tir.all(i < n, j < m)`` is ``i < n and j < m``.
    """
    return _fold(logical_and, conditions, "all")


def any(*conditions: object) -> PrimExpr:
    """The disjunction of ``conditions`` (TVM's ``tvm.tir.any``)."""
    return _fold(logical_or, conditions, "any")


def _fold(combine: Any, conditions: tuple[object, ...], name: str) -> PrimExpr:
    if not conditions:
        raise ValueError(f"tir.{name} needs at least one condition")
    result = op.convert(conditions[0])  # type: ignore[arg-type]
    for condition in conditions[1:]:
        result = combine(result, condition)
    return result


_LAZY = {
    "Schedule": ("tilewright.schedule", "Schedule"),
    "ScheduleError": ("tilewright.schedule", "ScheduleError"),
    "BlockRV": ("tilewright.schedule", "BlockRV"),
    "LoopRV": ("tilewright.schedule", "LoopRV"),
    "ExprRV": ("tilewright.schedule", "ExprRV"),
    "Trace": ("tilewright.schedule", "Trace"),
    "IndexMap": ("tilewright.schedule.index_map", "IndexMap"),
    "TensorIntrin": ("tilewright.schedule.tensor_intrin", "TensorIntrin"),
    "transform": ("tilewright.transform", None),
    "schedule": ("tilewright.tir.schedule", None),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        loaded = importlib.import_module(module)
        return loaded if attr is None else getattr(loaded, attr)
    raise AttributeError(f"module 'tilewright.tir' has no attribute {name!r}")
