"""``T.cuda``: CUDA intrinsics of tile programs (barrier and vector byte copies).

Each function returns a ``Call``; as a statement it becomes ``Evaluate`` (see
``tilewright.ir.intrinsics``, ``CTA_SYNC`` and ``COPY_BYTES``, for their meaning).
"""

from __future__ import annotations

from tilewright.ir import Call, IntImm, PrimExpr
from tilewright.ir.dtype import int32
from tilewright.ir.intrinsics import COPY_BYTES, COPY_WIDTHS, CTA_SYNC


def cta_sync() -> Call:
    """``T.cuda.cta_sync()``: every thread of the CTA waits here (``__syncthreads()``)."""
    return CTA_SYNC.call()


def copy_bytes(dst: PrimExpr, src: PrimExpr, nbytes: object) -> Call:
    """``T.cuda.copy_bytes(dst_ptr, src_ptr, 16)``: one aligned transfer of 1-16 bytes.

    Example: ``T.cuda.copy_bytes(T.address_of(S[i]), T.address_of(A[i]), 16)``.
    """
    count = nbytes.value if isinstance(nbytes, IntImm) else nbytes
    if count not in COPY_WIDTHS:
        raise ValueError(f"T.cuda.copy_bytes moves 1, 2, 4, 8 or 16 bytes, got {nbytes!r}")
    return COPY_BYTES.call(dst, src, IntImm(count, int32))


def copy_8b(dst: PrimExpr, src: PrimExpr) -> Call:
    """A 1-byte copy (``copy_bytes(dst, src, 1)``)."""
    return copy_bytes(dst, src, 1)


def copy_16b(dst: PrimExpr, src: PrimExpr) -> Call:
    """A 2-byte copy."""
    return copy_bytes(dst, src, 2)


def copy_32b(dst: PrimExpr, src: PrimExpr) -> Call:
    """A 4-byte copy."""
    return copy_bytes(dst, src, 4)


def copy_64b(dst: PrimExpr, src: PrimExpr) -> Call:
    """An 8-byte copy."""
    return copy_bytes(dst, src, 8)


def copy_128b(dst: PrimExpr, src: PrimExpr) -> Call:
    """A 16-byte copy (``uint4``)."""
    return copy_bytes(dst, src, 16)
