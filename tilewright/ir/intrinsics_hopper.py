"""The Hopper (sm_90 / sm_90a) intrinsics of the one intrinsic table: mbarriers, the async
proxy fence, TMA bulk tensor copies, warpgroup MMA (``wgmma``) with shared-memory
descriptors, ``setmaxnreg``, ``elect.sync`` and ``stmatrix``.

Addresses are generic pointers (``T.address_of(buf[i])``, a buffer's data plus an offset);
the CUDA emitters (``codegen/cuda_hopper.py``) convert shared ones to the shared window.
``wgmma`` and ``setmaxnreg`` exist on sm_90a only: a kernel that uses them is compiled for
the architecture-specific target (``compute_90a`` / ``sm_90a``).

Example::

    >>> from tilewright.ir import intrinsics_hopper as hopper
    >>> hopper.MBARRIER_INIT.stmt(bar_address, 1)        # mbarrier.init.shared::cta.b64
    >>> hopper.WGMMA_FENCE.stmt()                         # wgmma.fence.sync.aligned
    >>> hopper.tensor_map(A, (128, 64), swizzle=128)      # A's TMA map, a kernel parameter
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tilewright.ir.dtype import int32
from tilewright.ir.expr import Call, IntImm
from tilewright.ir.intrinsics import Effect, Intrinsic, ResultType, register

if TYPE_CHECKING:
    from tilewright.ir.buffer import Buffer

MBARRIER_INIT = Intrinsic(
    "tw.cuda.mbarrier_init",
    2,
    ResultType.INT32,
    Effect.BARRIER,
    "(barrier, count): initialise the 8-byte shared-memory mbarrier at address barrier to "
    "expect count arrivals a phase (one thread does this, then fence_mbarrier_init)",
)
MBARRIER_ARRIVE = Intrinsic(
    "tw.cuda.mbarrier_arrive",
    1,
    ResultType.INT32,
    Effect.BARRIER,
    "(barrier): this thread arrives on the mbarrier",
)
MBARRIER_ARRIVE_EXPECT_TX = Intrinsic(
    "tw.cuda.mbarrier_arrive_expect_tx",
    2,
    ResultType.INT32,
    Effect.BARRIER,
    "(barrier, bytes): arrive and add bytes to the transaction count the current phase waits "
    "for (the bytes TMA copies completing on this barrier will deliver)",
)
MBARRIER_WAIT = Intrinsic(
    "tw.cuda.mbarrier_wait",
    2,
    ResultType.INT32,
    Effect.BARRIER,
    "(barrier, parity): block until the phase of parity parity (0 or 1) of the mbarrier has "
    "completed (a try_wait.parity loop)",
)
FENCE_MBARRIER_INIT = Intrinsic(
    "tw.cuda.fence_mbarrier_init",
    0,
    ResultType.INT32,
    Effect.BARRIER,
    "make initialised mbarriers visible to the async proxy and the cluster "
    "(fence.mbarrier_init.release.cluster)",
)
FENCE_PROXY_ASYNC = Intrinsic(
    "tw.cuda.fence_proxy_async",
    0,
    ResultType.INT32,
    Effect.BARRIER,
    "order this thread's generic-proxy shared-memory writes before later async-proxy reads "
    "(TMA stores, wgmma) (fence.proxy.async.shared::cta)",
)
TENSOR_MAP = Intrinsic(
    "tw.cuda.tensor_map",
    None,
    ResultType.HANDLE,
    doc="(data, *box, swizzle): the TMA tensor map of the global buffer whose data is data (a "
    "parameter of the function: its whole shape, strides and dtype) read or written a box at a "
    "time (box outermost first, constants), swizzle 0, 32, 64 or 128 bytes; a tma_load / "
    "tma_store map argument. The GPU lowering makes each distinct one a kernel parameter that "
    "the runtime encodes on the host and passes by value (__grid_constant__)",
    min_args=3,
)
TMA_LOAD = Intrinsic(
    "tw.cuda.tma_load",
    None,
    ResultType.INT32,
    Effect.WRITE,
    "(dst, tensor_map, barrier, *coords): copy the box at coords (innermost first, 1 to 5) of "
    "the tensor map's global tensor into shared memory at dst; completes on the mbarrier as "
    "transaction bytes (cp.async.bulk.tensor ... mbarrier::complete_tx::bytes); tensor_map is "
    "a tensor_map call or the address of a 128-byte map in global memory",
    min_args=4,
)
TMA_STORE = Intrinsic(
    "tw.cuda.tma_store",
    None,
    ResultType.INT32,
    Effect.WRITE,
    "(tensor_map, src, *coords): copy the shared-memory box at src to the global tensor at "
    "coords (innermost first); completes with the bulk groups (bulk_commit_group, "
    "bulk_wait_group)",
    min_args=3,
)
BULK_COMMIT_GROUP = Intrinsic(
    "tw.cuda.bulk_commit_group",
    0,
    ResultType.INT32,
    Effect.BARRIER,
    "close this thread's group of bulk copies (TMA stores) started since the last commit",
)
BULK_WAIT_GROUP_READ = Intrinsic(
    "tw.cuda.bulk_wait_group_read",
    1,
    ResultType.INT32,
    Effect.BARRIER,
    "(n): wait until at most n bulk groups still read their shared-memory source",
)
WGMMA_DESCRIPTOR = Intrinsic(
    "tw.cuda.wgmma_descriptor",
    4,
    ResultType.GIVEN,
    doc="(address, leading_bytes, stride_bytes, swizzle_bytes): the 64-bit shared-memory "
    "matrix descriptor wgmma reads an operand through (swizzle 0, 32, 64 or 128 bytes)",
)
WGMMA_FENCE = Intrinsic(
    "tw.cuda.wgmma_fence",
    0,
    ResultType.INT32,
    Effect.BARRIER,
    "order register and shared-memory accesses before the warpgroup's next wgmma "
    "(wgmma.fence.sync.aligned)",
)
WGMMA_COMMIT_GROUP = Intrinsic(
    "tw.cuda.wgmma_commit_group",
    0,
    ResultType.INT32,
    Effect.BARRIER,
    "close the warpgroup's group of wgmma operations issued since the last commit",
)
WGMMA_WAIT_GROUP = Intrinsic(
    "tw.cuda.wgmma_wait_group",
    1,
    ResultType.INT32,
    Effect.BARRIER,
    "(n): wait until at most n of the warpgroup's wgmma groups are pending",
)
WGMMA_MMA_ASYNC = Intrinsic(
    "tw.cuda.wgmma_mma_async",
    9,
    ResultType.INT32,
    Effect.WRITE,
    "(n, ab_type, a_descriptor, b_descriptor, acc, acc_offset, scale_d, trans_a, trans_b): the "
    "warpgroup's D (64 x n, float32, n / 2 registers a thread at acc[acc_offset:]) = A (64 x "
    "16) * B (16 x n) + (D if scale_d else 0), A and B read from shared memory through their "
    "descriptors; ab_type f16 or bf16 (wgmma.mma_async.sync.aligned.m64nNk16.f32)",
)
WGMMA_MMA_ASYNC_RS = Intrinsic(
    "tw.cuda.wgmma_mma_async_rs",
    8,
    ResultType.INT32,
    Effect.WRITE,
    "(n, ab_type, a, a_offset, b_descriptor, acc, acc_offset, scale_d): as wgmma_mma_async "
    "with A from registers (4 32-bit registers a thread at a[a_offset:], the m16n8k16 A "
    "fragment layout of each warp's 16 rows) and B from shared memory, B not transposed",
)
SETMAXNREG = Intrinsic(
    "tw.cuda.setmaxnreg",
    2,
    ResultType.INT32,
    Effect.BARRIER,
    "(increase, count): raise (increase 1) or lower (0) the warpgroup's registers a thread to "
    "count (24 to 256, a multiple of 8) (setmaxnreg.inc/dec.sync.aligned.u32)",
)
ELECT_SYNC = Intrinsic(
    "tw.cuda.elect_sync",
    0,
    ResultType.BOOL,
    Effect.BARRIER,
    "true in exactly one active lane of the warp (elect.sync); every lane calls it",
)
NAMED_BARRIER_SYNC = Intrinsic(
    "tw.cuda.named_barrier_sync",
    2,
    ResultType.INT32,
    Effect.BARRIER,
    "(id, threads): wait at hardware barrier id (1 to 15; 0 is __syncthreads') until threads "
    "threads (a multiple of 32) have arrived: a barrier for one warpgroup of a warp-specialised "
    "CTA (bar.sync id, threads)",
)
STMATRIX = Intrinsic(
    "tw.cuda.stmatrix",
    5,
    ResultType.INT32,
    Effect.WRITE,
    "(num, trans, dst, src, src_offset): every lane of the warp stores num (1, 2 or 4) 8x8 "
    "matrices of 16-bit elements from num 32-bit registers at src[src_offset:] to shared "
    "memory (lane t gives the address of row t % 8 of matrix t / 8) "
    "(stmatrix.sync.aligned.m8n8, .trans when trans)",
)

HOPPER: tuple[Intrinsic, ...] = (
    TENSOR_MAP,
    MBARRIER_INIT,
    MBARRIER_ARRIVE,
    MBARRIER_ARRIVE_EXPECT_TX,
    MBARRIER_WAIT,
    FENCE_MBARRIER_INIT,
    FENCE_PROXY_ASYNC,
    TMA_LOAD,
    TMA_STORE,
    BULK_COMMIT_GROUP,
    BULK_WAIT_GROUP_READ,
    WGMMA_DESCRIPTOR,
    WGMMA_FENCE,
    WGMMA_COMMIT_GROUP,
    WGMMA_WAIT_GROUP,
    WGMMA_MMA_ASYNC,
    WGMMA_MMA_ASYNC_RS,
    SETMAXNREG,
    ELECT_SYNC,
    NAMED_BARRIER_SYNC,
    STMATRIX,
)
# Intrinsics that exist on the architecture-specific target only (sm_90a).
ARCH_SPECIFIC: tuple[Intrinsic, ...] = (
    WGMMA_FENCE,
    WGMMA_COMMIT_GROUP,
    WGMMA_WAIT_GROUP,
    WGMMA_MMA_ASYNC,
    WGMMA_MMA_ASYNC_RS,
    SETMAXNREG,
)
# Accesses that go through the async proxy (TMA, wgmma) or are synchronisation objects
# themselves (mbarriers): ordered by mbarriers and wgmma fences, never by __syncthreads, so
# the barrier planner leaves them alone.
ASYNC_PROXY: tuple[Intrinsic, ...] = (
    TMA_LOAD,
    TMA_STORE,
    WGMMA_DESCRIPTOR,
    WGMMA_MMA_ASYNC,
    WGMMA_MMA_ASYNC_RS,
    MBARRIER_INIT,
    MBARRIER_ARRIVE,
    MBARRIER_ARRIVE_EXPECT_TX,
    MBARRIER_WAIT,
)
register(*HOPPER)


def tensor_map(buffer: Buffer, box: Sequence[int], swizzle: int = 0) -> Call:
    """The ``tw.cuda.tensor_map`` call describing global ``buffer`` (a parameter of the
    function) copied a ``box`` at a time (outermost first), with a ``swizzle``-byte
    shared-memory swizzle: what ``tma_load`` and ``tma_store`` take as their map.

    Example::

        >>> tmap = hopper.tensor_map(A, (128, 64), swizzle=128)   # A: T.Buffer((m, k), ...)
        >>> hopper.TMA_LOAD.stmt(As.access_ptr("w"), tmap, bar, k0, m0)
    """
    if len(box) != buffer.ndim:
        raise ValueError(
            f"tensor_map of buffer {buffer.name}: the box {tuple(box)} has {len(box)} "
            f"dimensions, the buffer {buffer.ndim}"
        )
    sizes = (IntImm(int(b), int32) for b in box)
    return TENSOR_MAP.call(buffer.data, *sizes, IntImm(int(swizzle), int32))
