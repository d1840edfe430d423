"""A generated function's argument contract, as plain data: what a runtime checks and passes.

One argument per parameter (a pointer for a buffer, a value for a scalar), then one ``int64``
per symbolic variable of the buffer shapes and strides that is not itself a parameter, in
order of first appearance. It serializes to JSON so that a built artifact can be loaded
without its IR (``tilewright.codegen.signature`` derives it from a lowered function).
"""

from __future__ import annotations

import dataclasses
from typing import Any

# A dimension: a constant, a symbolic variable's name, or (op, lhs, rhs) over dimensions;
# op is one of DIM_OPS.
Dim = int | str | tuple
DIM_OPS = ("add", "sub", "mul", "floordiv", "floormod", "min", "max")


class SignatureError(ValueError):
    """A function whose arguments no runtime could check or pass."""


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """One parameter: a buffer (``shape`` set) or a scalar (``shape is None``).

    ``strides`` is ``None`` for a compact row-major buffer; ``written`` says whether the
    kernel stores into the buffer (a read-only array is refused only then); ``align`` is the
    byte alignment the kernel's vector accesses need of the buffer's first element.
    """

    name: str
    dtype: str
    shape: tuple[Dim, ...] | None = None
    strides: tuple[Dim, ...] | None = None
    written: bool = False
    align: int = 1

    @property
    def is_buffer(self) -> bool:
        return self.shape is not None


@dataclasses.dataclass(frozen=True)
class FuncSignature:
    """A kernel's name, its exported symbol, its parameters and its trailing symbolic sizes."""

    name: str
    symbol: str
    params: tuple[ParamSpec, ...]
    sym_vars: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> FuncSignature:
        params = tuple(
            ParamSpec(
                name=p["name"],
                dtype=p["dtype"],
                shape=None if p["shape"] is None else tuple(_dim_from_json(d) for d in p["shape"]),
                strides=None
                if p["strides"] is None
                else tuple(_dim_from_json(d) for d in p["strides"]),
                written=p["written"],
                align=p.get("align", 1),
            )
            for p in data["params"]
        )
        return FuncSignature(data["name"], data["symbol"], params, tuple(data["sym_vars"]))


def _dim_from_json(value: object) -> Dim:
    if isinstance(value, list):
        return tuple(_dim_from_json(v) for v in value)
    if isinstance(value, int | str | tuple):
        return value
    raise ValueError(f"a signature dimension is a number, a name or a list, not {value!r}")
