"""``from tvm import relax`` for code written for TVM: Relax, TVM's graph-level IR, is not
part of tilewright. The module imports; any use of a name in it raises
``RelaxNotSupportedError`` (``tilewright.script.relax``), which points to the
compatibility table.

Example::

    import tilewright as tvm
    from tilewright import relax   # fine
    relax.build                    # RelaxNotSupportedError
"""

from __future__ import annotations

from typing import NoReturn

from tilewright.script.relax import RelaxNotSupportedError, unsupported

__all__ = ["RelaxNotSupportedError"]


def __getattr__(name: str) -> NoReturn:
    if name.startswith("__"):
        raise AttributeError(name)
    unsupported("relax", name)
