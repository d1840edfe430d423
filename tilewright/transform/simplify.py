"""PrimFunc → the same function with every expression simplified by ``tilewright.arith``."""

from __future__ import annotations

import logging

from tilewright.ir import PrimFunc

logger = logging.getLogger(__name__)


def simplify(func: PrimFunc) -> PrimFunc:
    """Simplify the body's expressions (constant folding, canonical linear forms, ...).

    A thin pass over ``tilewright.arith.simplify_stmt``. When ``tilewright.arith`` cannot be
    imported the function is returned unchanged and a warning is logged.

    Args:
        func: the function to simplify.

    Example::

        # before                    # after
        C[i * 1 + 0] = A[i + 0]     C[i] = A[i]
    """
    try:
        # arith sits earlier in the pipeline; imported on use so that lowering works while
        # the simplifier is unavailable.
        from tilewright.arith import simplify_stmt
    except ImportError as err:
        logger.warning("simplify skipped: tilewright.arith is not available (%s)", err)
        return func
    return func.with_body(simplify_stmt(func.body))
