"""``T.cuda``: CUDA intrinsics of tile programs (barrier, vector byte copies, and the Hopper
fences and wgmma group waits that tile programs around ``Tx.warpgroup.gemm`` need).

Each function returns a ``Call``; as a statement it becomes ``Evaluate`` (see
``tilewright.ir.intrinsics``, ``CTA_SYNC`` and ``COPY_BYTES``, and
``tilewright.ir.intrinsics_hopper`` for their meaning).
"""

from __future__ import annotations

from tilewright.ir import Call, IntImm, PrimExpr
from tilewright.ir import intrinsics_hopper as hopper
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


def fence_proxy_async() -> Call:
    """``T.cuda.fence_proxy_async()``: order this thread's ordinary shared-memory writes before
    later async-proxy reads (wgmma, TMA stores); each writer runs it before the barrier.

    Example::

        Tx.cta.copy(A_smem[0:128, 0:64], A[0:128, 0:64])
        T.cuda.fence_proxy_async()
        T.cuda.cta_sync()
    """
    return hopper.FENCE_PROXY_ASYNC.call()


def wgmma_fence() -> Call:
    """``T.cuda.wgmma_fence()``: order register and shared-memory accesses before the
    warpgroup's next wgmma (``Tx.warpgroup.gemm`` emits it itself)."""
    return hopper.WGMMA_FENCE.call()


def wgmma_commit_group() -> Call:
    """``T.cuda.wgmma_commit_group()``: close the warpgroup's group of wgmmas issued so far."""
    return hopper.WGMMA_COMMIT_GROUP.call()


def wgmma_wait_group(pending: object) -> Call:
    """``T.cuda.wgmma_wait_group(n)``: wait until at most ``n`` (a constant) of the warpgroup's
    wgmma groups are in flight; ``0`` completes every ``Tx.warpgroup.gemm_async`` issued.

    Example: ``T.cuda.wgmma_wait_group(0)`` before reading the accumulator.
    """
    count = pending.value if isinstance(pending, IntImm) else pending
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 7:
        raise ValueError(f"T.cuda.wgmma_wait_group takes a constant 0 to 7, got {pending!r}")
    return hopper.WGMMA_WAIT_GROUP.call(IntImm(count, int32))
