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
from tilewright.ir import intrinsics as _intrinsics
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


def _math(name: str) -> Any:
    def function(*args: object) -> PrimExpr:
        return op.math_call(name, *args)  # type: ignore[arg-type]

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``{name}`` of its arguments (TVM's ``tvm.tir.{name}``)."
    return function


# TVM's tir.exp, tir.sqrt, ...: one function per math intrinsic of the intrinsic table.
for _name in (*_intrinsics.UNARY_MATH, *_intrinsics.BINARY_MATH):
    globals()[_name] = _math(_name)


def call_intrin(dtype: str, name: str, *args: object) -> PrimExpr:
    """A call of the intrinsic ``name`` returning ``dtype`` (TVM's ``tvm.tir.call_intrin``).

    Example: ``tw.tir.call_intrin("int32", "tw.cuda.wgmma_fence")``.
    """
    _intrinsics.lookup(name)  # KeyError naming close names when there is none
    return op.call(name, *args, dtype_=dtype)  # type: ignore[arg-type]


def call_extern(dtype: str, name: str, *args: object) -> PrimExpr:
    """A call of the external function ``name`` (TVM's ``tvm.tir.call_extern``)."""
    return op.call("call_extern", op.StringImm(name), *args, dtype_=dtype)  # type: ignore[arg-type]


_LAZY = {
    "build": ("tilewright.driver", "build"),
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
