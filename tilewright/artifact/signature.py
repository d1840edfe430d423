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
class BoundsCheck:
    """One access a ``bounds_check`` build checks at run time, as the error message names it.

    ``buffer`` is the buffer's name, ``kernel`` the kernel the access is in (empty: the
    function itself), ``index`` the flat index expression and ``extent`` the element count
    (as text), ``shape`` the buffer's N-d shape when it is a compact parameter (else empty).
    """

    buffer: str
    kernel: str
    index: str
    extent: str
    shape: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class FuncSignature:
    """A kernel's name, its exported symbol, its parameters and its trailing symbolic sizes.

    ``bounds_checks`` is non-empty for a function built with ``bounds_check=True`` that has
    accesses to check: its last parameter is then the hidden error record (``int64``, two
    elements per check: a flag and the offending index), which the runtime allocates and
    reads after each call; callers pass the other parameters.
    """

    name: str
    symbol: str
    params: tuple[ParamSpec, ...]
    sym_vars: tuple[str, ...] = ()
    bounds_checks: tuple[BoundsCheck, ...] = ()

    @property
    def user_params(self) -> tuple[ParamSpec, ...]:
        """The parameters a caller passes (all but the hidden error record)."""
        return self.params[:-1] if self.bounds_checks else self.params

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        if not self.bounds_checks:
            del data["bounds_checks"]  # the format of builds without checks stays as it was
        return data

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
        checks = tuple(
            BoundsCheck(c["buffer"], c["kernel"], c["index"], c["extent"], tuple(c["shape"]))
            for c in data.get("bounds_checks", ())
        )
        return FuncSignature(data["name"], data["symbol"], params, tuple(data["sym_vars"]), checks)


def _dim_from_json(value: object) -> Dim:
    if isinstance(value, list):
        return tuple(_dim_from_json(v) for v in value)
    if isinstance(value, int | str | tuple):
        return value
    raise ValueError(f"a signature dimension is a number, a name or a list, not {value!r}")
