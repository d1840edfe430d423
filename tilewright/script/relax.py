"""``from tvm.script import relax as R`` for code written for TVM: Relax, TVM's graph-level
IR, is not part of tilewright (TensorIR and the tile layer are). The module imports, so
that TVM programs whose import lines name it load; any use of a name in it raises
``RelaxNotSupportedError``, which says so and points to the compatibility table.

Example::

    from tilewright.script import tir as T, relax as R   # fine
    R.function                                            # RelaxNotSupportedError
"""

from __future__ import annotations

from typing import NoReturn

COMPAT_TABLE = "docs/tvm-compat.md"


class RelaxNotSupportedError(NotImplementedError):
    """A Relax name was used: tilewright compiles TensorIR (``T.prim_func``) only."""


def unsupported(module: str, name: str) -> NoReturn:
    """Raise the error for ``module.name`` (``R.function``, ``relax.build``, ...)."""
    raise RelaxNotSupportedError(
        f"{module}.{name}: Relax, TVM's graph-level IR, is not supported by tilewright, "
        f"which compiles TensorIR (T.prim_func) and tile programs; write the computation "
        f"as a T.prim_func (see {COMPAT_TABLE}, section Relax)"
    )


def __getattr__(name: str) -> NoReturn:
    if name.startswith("__"):  # module protocol lookups (copy, pickle, pytest) stay normal
        raise AttributeError(name)
    unsupported("R", name)
