"""``T.cuda``: CUDA intrinsics of tile programs (barrier, vector byte copies, the Hopper fences
and wgmma group waits around ``Tx.warpgroup.gemm``, and the mbarriers, cp.async groups and bulk
groups that complete ``Tx.<scope>.copy_async``).

Each function returns a ``Call``; as a statement it becomes ``Evaluate`` (see
``tilewright.ir.intrinsics``, ``CTA_SYNC`` and ``COPY_BYTES``, and
``tilewright.ir.intrinsics_hopper`` for their meaning).
"""

from __future__ import annotations

from tilewright.ir import BufferLoad, BufferRegion, Call, IntImm, PrimExpr, op
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.ir.dtype import int32
from tilewright.ir.intrinsics import (
    ADDRESS_OF,
    COPY_BYTES,
    COPY_WIDTHS,
    CP_ASYNC_COMMIT,
    CP_ASYNC_WAIT,
    CTA_SYNC,
)


def cta_sync() -> Call:
    """``T.cuda.cta_sync()``: every thread of the CTA waits here (``__syncthreads()``)."""
    return CTA_SYNC.call()


def named_barrier_sync(ident: object, threads: object) -> Call:
    """``T.cuda.named_barrier_sync(1, 128)``: the running warpgroup (``threads`` threads, a
    multiple of 32) waits at hardware barrier ``ident`` (1 to 15) until all of them arrive;
    the other threads of the CTA go on (``bar.sync``). Warp-specialised kernels give each
    consumer warpgroup its own id.

    Example::

        T.cuda.named_barrier_sync(wg, 128)   # warpgroups 1 and 2: ids 1 and 2
    """
    return hopper.NAMED_BARRIER_SYNC.call(
        _expr(ident, "T.cuda.named_barrier_sync"),
        _count(threads, "T.cuda.named_barrier_sync", 32, 1024),
    )


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


def setmaxnreg(increase: object, count: object) -> Call:
    """``T.cuda.setmaxnreg(increase, count)``: every thread of the warpgroup gives up registers
    down to ``count`` a thread (``increase`` False) or asks for up to ``count`` (True);
    ``count`` is a constant 24 to 256, a multiple of 8, the same in every thread of the
    warpgroup (sm_90a: ``setmaxnreg.dec/inc.sync.aligned.u32``).

    Example: ``T.cuda.setmaxnreg(False, 40)`` in a producer warpgroup,
    ``T.cuda.setmaxnreg(True, 232)`` in the consumers.
    """
    up = increase.value if isinstance(increase, IntImm) else increase
    if up not in (0, 1):  # False / True compare equal to 0 / 1
        raise ValueError(f"T.cuda.setmaxnreg: increase is True or False, got {increase!r}")
    regs = _count(count, "T.cuda.setmaxnreg", 24, 256)
    if regs.value % 8:
        raise ValueError(f"T.cuda.setmaxnreg takes a multiple of 8 registers, got {count!r}")
    return hopper.SETMAXNREG.call(IntImm(int(up), int32), regs)


def _barrier(bar: object, where: str) -> PrimExpr:
    """The address of an mbarrier given as ``bar[i]`` (or already as an address)."""
    if isinstance(bar, BufferLoad):
        if str(bar.buffer.dtype) != "uint64" or not bar.buffer.scope.startswith("shared"):
            raise TypeError(
                f"{where}: the mbarrier {bar.buffer.name} must be a uint64 shared buffer, got "
                f"{bar.buffer.dtype} in {bar.buffer.scope!r}"
            )
        return ADDRESS_OF.call(bar)
    if isinstance(bar, PrimExpr) and bar.dtype.is_handle:
        return bar
    raise TypeError(f"{where}: expected an mbarrier element such as bar[0], got {bar!r}")


def _expr(value: object, where: str) -> PrimExpr:
    if isinstance(value, PrimExpr | int):
        return op.convert(value)
    raise TypeError(f"{where}: expected an integer expression, got {value!r}")


def _count(value: object, where: str, low: int, high: int) -> IntImm:
    count = value.value if isinstance(value, IntImm) else value
    if isinstance(count, bool) or not isinstance(count, int) or not low <= count <= high:
        raise ValueError(f"{where} takes a constant {low} to {high}, got {value!r}")
    return IntImm(count, int32)


def mbarrier_init(bar: object, count: object) -> Call:
    """``T.cuda.mbarrier_init(bar[0], n)``: one thread makes ``bar[0]`` (a uint64 in shared
    memory) expect ``n`` arrivals a phase; then ``T.cuda.fence_mbarrier_init()`` and a
    ``T.cuda.cta_sync()`` before any thread uses it.

    Example::

        if tid == 0:
            T.cuda.mbarrier_init(bar[0], 1)
            T.cuda.fence_mbarrier_init()
        T.cuda.cta_sync()
    """
    return hopper.MBARRIER_INIT.call(
        _barrier(bar, "T.cuda.mbarrier_init"), _expr(count, "T.cuda.mbarrier_init")
    )


def fence_mbarrier_init() -> Call:
    """``T.cuda.fence_mbarrier_init()``: make initialised mbarriers visible to TMA."""
    return hopper.FENCE_MBARRIER_INIT.call()


def mbarrier_arrive(bar: object) -> Call:
    """``T.cuda.mbarrier_arrive(bar[s])``: this thread arrives on the mbarrier."""
    return hopper.MBARRIER_ARRIVE.call(_barrier(bar, "T.cuda.mbarrier_arrive"))


def mbarrier_arrive_expect_tx(bar: object, nbytes: object) -> Call:
    """``T.cuda.mbarrier_arrive_expect_tx(bar[s], n)``: arrive and make the phase also wait for
    ``n`` bytes of TMA loads (``T.cuda.region_bytes`` of the loads' destinations).

    Example: ``T.cuda.mbarrier_arrive_expect_tx(bar[0], T.cuda.region_bytes(As[0:128, 0:64]))``.
    """
    return hopper.MBARRIER_ARRIVE_EXPECT_TX.call(
        _barrier(bar, "T.cuda.mbarrier_arrive_expect_tx"),
        _expr(nbytes, "T.cuda.mbarrier_arrive_expect_tx"),
    )


def mbarrier_wait(bar: object, parity: object) -> Call:
    """``T.cuda.mbarrier_wait(bar[s], parity)``: block until the phase of that parity (0 for
    the first phase, then alternating) has completed.

    Example: ``T.cuda.mbarrier_wait(full[s], k // stages % 2)``.
    """
    return hopper.MBARRIER_WAIT.call(
        _barrier(bar, "T.cuda.mbarrier_wait"), _expr(parity, "T.cuda.mbarrier_wait")
    )


def region_bytes(*regions: object) -> IntImm:
    """``T.cuda.region_bytes(As[0:128, 0:64], ...)``: the bytes the regions hold, what an
    mbarrier must expect for the TMA loads into them.

    Example: ``T.cuda.region_bytes(As[0:128, 0:64])`` is 16384 for float16 ``As``.
    """
    total = 0
    for region in regions:
        if not isinstance(region, BufferRegion):
            raise TypeError(f"T.cuda.region_bytes takes buffer regions, got {region!r}")
        size = 1
        for r in region.region:
            if not isinstance(r.extent, IntImm):
                raise ValueError(
                    f"T.cuda.region_bytes: {region.buffer.name}'s extent {r.extent} is not constant"
                )
            size *= r.extent.value
        total += size * region.buffer.dtype.bytes
    return IntImm(total, int32)


def cp_async_commit_group() -> Call:
    """``T.cuda.cp_async_commit_group()``: close this thread's group of cp.async copies
    (``Tx.<scope>.copy_async``'s ``cp_async`` variant commits its own)."""
    return CP_ASYNC_COMMIT.call()


def cp_async_wait_group(pending: object) -> Call:
    """``T.cuda.cp_async_wait_group(n)``: wait until at most ``n`` of this thread's cp.async
    groups are in flight; the GPU pipeline adds a ``__syncthreads()`` after it, so every
    thread must reach it.

    Example: ``T.cuda.cp_async_wait_group(0)`` before reading the copied tile.
    """
    return CP_ASYNC_WAIT.call(_count(pending, "T.cuda.cp_async_wait_group", 0, 7))


def bulk_commit_group() -> Call:
    """``T.cuda.bulk_commit_group()``: close this thread's group of TMA stores (the ``tma``
    variant of a store commits its own)."""
    return hopper.BULK_COMMIT_GROUP.call()


def bulk_wait_group_read(pending: object) -> Call:
    """``T.cuda.bulk_wait_group_read(n)``: wait until at most ``n`` of this thread's TMA store
    groups still read shared memory; ``0`` before reusing the source or ending the kernel.

    Example::

        Tx.thread.copy_async(C[0:128, 0:64], Cs[0:128, 0:64])
        T.cuda.bulk_wait_group_read(0)
    """
    return hopper.BULK_WAIT_GROUP_READ.call(_count(pending, "T.cuda.bulk_wait_group_read", 0, 7))
