"""``TensorInfo``: the dtype and shape of one argument of a workload, as plain data.

Builders, runners and records carry these instead of buffers, so a work unit holds no IR and
crosses process (and machine) boundaries as JSON.

Example::

    >>> infos = ArgInfo.from_prim_func(mod["main"])
    >>> infos[0]
    TensorInfo(dtype='float32', shape=(1024, 1024))
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tilewright.ir import IRModule, PrimFunc


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """One tensor argument: its element type and static shape."""

    dtype: str
    shape: tuple[int, ...]

    def as_json(self) -> list[Any]:
        return ["TENSOR", self.dtype, list(self.shape)]

    @staticmethod
    def from_json(data: list[Any]) -> TensorInfo:
        if not (isinstance(data, list) and len(data) == 3 and data[0] == "TENSOR"):
            raise ValueError(f"not a tensor argument description: {data!r}")
        return TensorInfo(str(data[1]), tuple(int(x) for x in data[2]))


class ArgInfo:
    """Argument descriptions of a function (TVM's ``ms.arg_info.ArgInfo``)."""

    @staticmethod
    def from_prim_func(func: PrimFunc) -> list[TensorInfo]:
        """One ``TensorInfo`` per parameter of ``func``; a dynamic shape is refused."""
        infos = []
        for param in func.params:
            buf = func.buffer_of(param)
            if buf is None:
                raise ValueError(
                    f"{func.name}: parameter "
                    f"{param.name} is a scalar; tuning needs tensor arguments"
                )
            shape = []
            for extent in buf.shape:
                value = getattr(extent, "value", extent)
                if not isinstance(value, int):
                    raise ValueError(
                        f"buffer {buf.name}: dimension {extent} is not a constant; tuning "
                        "needs static shapes"
                    )
                shape.append(value)
            infos.append(TensorInfo(str(buf.dtype), tuple(shape)))
        return infos

    @staticmethod
    def from_entry_func(mod: IRModule | PrimFunc) -> list[TensorInfo]:
        """The argument descriptions of ``mod``'s only (or ``main``) function (or of ``mod``
        itself when it is a ``PrimFunc``)."""
        if isinstance(mod, PrimFunc):
            return ArgInfo.from_prim_func(mod)
        funcs = dict(mod.items())
        func = funcs.get("main") or (next(iter(funcs.values())) if len(funcs) == 1 else None)
        if func is None:
            raise ValueError(f"the module has {len(funcs)} functions and none is named main")
        return ArgInfo.from_prim_func(func)
