"""A corpus of small TVMScript programs written in TVM's style, grouped by construct.

Each module lists its programs in ``CASES``: a ``Case`` holds the parsed function and, when it
runs on the CPU, a numpy reference that takes the same arguments as the kernel (arrays and
scalars) and updates the output arrays in place. ``tests/script/test_corpus.py`` checks that
every program prints, parses back to an equal function and prints the same text again, and
that the executable ones built for C agree with their reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import import_module

import numpy as np

from tilewright.ir import IntImm, PrimFunc

MODULES = (
    "expressions",
    "math",
    "statements",
    "loops",
    "buffers",
    "blocks",
    "threads",
    "intrinsics",
    "host_builtins",
)


@dataclass(frozen=True)
class Case:
    """One program; ``reference`` None means it is checked for printing and parsing only
    (it needs a GPU, or TVM's runtime)."""

    func: PrimFunc
    reference: Callable[..., None] | None = None
    scalars: dict[str, int | float] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # symbolic buffers
    low: float = 0.5
    high: float = 1.5
    rtol: float = 1e-5

    @property
    def name(self) -> str:
        return self.func.name

    def arguments(self, rng: np.random.Generator) -> list[object]:
        """Arguments for a call: random arrays in ``[low, high)`` (integers in
        ``[0, 10)``), then the scalars by parameter name."""
        values: list[object] = []
        for param in self.func.params:
            buffer = self.func.buffer_of(param)
            if buffer is None:
                values.append(self.scalars[param.name])
                continue
            shape = self.shapes.get(buffer.name) or tuple(
                d.value for d in buffer.shape if isinstance(d, IntImm)
            )
            values.append(random_array(rng, shape, str(buffer.dtype), self.low, self.high))
        return values


def random_array(
    rng: np.random.Generator, shape: Sequence[int], dtype: str, low: float, high: float
) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        return rng.integers(0, 10, shape).astype(dtype)
    return rng.uniform(low, high, shape).astype(dtype)


def all_cases() -> dict[str, list[Case]]:
    """Every module's cases, by module name."""
    return {name: list(import_module(f"corpus.{name}").CASES) for name in MODULES}
