"""``IRModule``: named functions, the unit that schedules, passes and ``build`` work on."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

from tilewright.ir.function import PrimFunc
from tilewright.ir.node import Node


@dataclasses.dataclass(frozen=True, slots=True, eq=False, repr=False, init=False)
class IRModule(Node):
    """An immutable collection of functions keyed by name.

    Example::

        >>> mod = IRModule({"main": func})
        >>> mod["main"] is func
        True
    """

    functions: tuple[tuple[str, PrimFunc], ...]

    def __init__(self, functions: Mapping[str, PrimFunc] | tuple | None = None) -> None:
        items = functions.items() if isinstance(functions, Mapping) else (functions or ())
        pairs = tuple((str(name), func) for name, func in items)
        for name, func in pairs:
            if not isinstance(func, PrimFunc):
                raise TypeError(f"IRModule function {name!r} is a {type(func).__name__}")
        object.__setattr__(self, "functions", pairs)

    def __getitem__(self, name: str) -> PrimFunc:
        for key, func in self.functions:
            if key == name:
                return func
        names = ", ".join(k for k, _ in self.functions) or "none"
        raise KeyError(f"IRModule has no function {name!r} (functions: {names})")

    def __contains__(self, name: object) -> bool:
        return any(key == name for key, _ in self.functions)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    def items(self) -> tuple[tuple[str, PrimFunc], ...]:
        return self.functions

    def get_global_vars(self) -> list[str]:
        return [key for key, _ in self.functions]

    def with_function(self, name: str, func: PrimFunc) -> IRModule:
        """A module with ``name`` set to ``func`` (added or replaced, order kept)."""
        pairs = dict(self.functions)
        pairs[name] = func
        return IRModule(pairs)

    def replace(self, **changes: object) -> IRModule:
        functions = changes.get("functions", self.functions)
        if functions is self.functions:
            return self
        if not isinstance(functions, Mapping | tuple):
            raise TypeError(f"IRModule functions are a mapping or pairs, not {type(functions)}")
        return IRModule(functions)

    @staticmethod
    def from_expr(func: PrimFunc) -> IRModule:
        return IRModule({"main": func})
