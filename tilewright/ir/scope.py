"""Storage scopes: the names a buffer's ``scope`` may take, checked with a "did you mean".

The set is TVM's storage ranks as tilewright spells them: ``global`` (device memory, the
default), ``shared`` and ``shared.dyn`` (per thread block, static or dynamically sized),
``local`` (per thread), ``warp``, and the tensor-core fragment scopes of CUDA's ``wmma`` and
``mma`` instructions. The parser and the schedule primitives check names here.
"""

from __future__ import annotations

import difflib

# Fragments of a warp-wide matrix multiply: the A and B operands and the accumulator.
FRAGMENT_SCOPES = (
    "wmma.matrix_a",
    "wmma.matrix_b",
    "wmma.accumulator",
    "m16n8k8.matrixA",
    "m16n8k8.matrixB",
    "m16n8k8.matrixC",
)

STORAGE_SCOPES: tuple[str, ...] = (
    "global",
    "shared",
    "shared.dyn",
    "local",
    "warp",
    *FRAGMENT_SCOPES,
)


def unknown_scope_message(scope: object) -> str | None:
    """Why ``scope`` is not a storage scope, with close matches; None when it is one.

    Example::

        >>> unknown_scope_message("shard")
        "unknown storage scope 'shard' (did you mean 'shared', 'shared.dyn'?); expected one of ..."
        >>> unknown_scope_message("shared") is None
        True
    """
    if isinstance(scope, str) and scope in STORAGE_SCOPES:
        return None
    if not isinstance(scope, str):
        return f'storage scope {scope!r} is not a string such as "shared"'
    # Case-insensitive matching: "Shared" and "SHARED" are typos of "shared" too.
    lowered = {s.lower(): s for s in STORAGE_SCOPES}
    close = difflib.get_close_matches(scope.lower(), list(lowered), n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(repr(lowered[c]) for c in close)}?)" if close else ""
    return f"unknown storage scope {scope!r}{hint}; expected one of {', '.join(STORAGE_SCOPES)}"
