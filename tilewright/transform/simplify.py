"""PrimFunc → the same function with every expression simplified by ``tilewright.arith``."""

from __future__ import annotations

from tilewright.arith import simplify_stmt
from tilewright.ir import PrimFunc


def simplify(func: PrimFunc) -> PrimFunc:
    """Simplify the body's expressions (constant folding, canonical linear forms, ...).

    A thin pass over ``tilewright.arith.simplify_stmt``.

    Args:
        func: the function to simplify.

    Example::

        # before                    # after
        C[i * 1 + 0] = A[i + 0]     C[i] = A[i]
    """
    return func.with_body(simplify_stmt(func.body))
