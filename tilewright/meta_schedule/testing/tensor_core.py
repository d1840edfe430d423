"""A hand tensor-core GEMM schedule (``mma.sync`` + ``ldmatrix`` + ``cp.async``), the baseline
the tensor-core rule is measured against, and the program it schedules.

``mma_matmul(n, m, k)`` is ``C = A @ B`` (A: n x k, B: k x m, both float16 or bfloat16; C
float32 or float16). ``schedule_mma(sch)`` tiles it for the tensor cores in TVM's way:

* 16x16x16 tiles blockized, grouped into a block tile of ``warps_m x warps_n`` warps, each
  computing ``frags_m x frags_n`` tiles (``blockIdx.x`` over block tiles, ``threadIdx.y``
  over warps, ``threadIdx.x`` the 32 lanes);
* A and B tiles of ``16 * k_frags`` columns / rows fetched to shared memory by the whole block
  (16 bytes a lane), rows padded by 8 elements (``storage_align``) so that ``ldmatrix`` reads
  hit distinct banks; with ``stages > 1`` the fetch is a ``cp.async`` software pipeline;
* each warp's fragments loaded with ``ldmatrix`` into ``warp`` buffers stored in the fragment
  layout (``transform_layout``), multiplied with ``mma.sync``, zeroed with ``mma_fill`` and
  stored with ``mma_store``.

Example::

    sch = tw.tir.Schedule(mma_matmul(4096, 4096, 4096))
    schedule_mma(sch)
    f = tw.build(sch.mod, target="cuda")
"""

from __future__ import annotations

from tilewright.ir import PrimFunc
from tilewright.schedule import Schedule
from tilewright.schedule.tensor_intrin_cuda import (
    get_mma_intrin_group,
    shared_16x16_to_ldmatrix_32x8_layout,
)
from tilewright.script import tir as T


def mma_matmul(
    n: int, m: int, k: int, in_dtype: str = "float16", out_dtype: str = "float32"
) -> PrimFunc:
    """``C[i, j] = sum_k A[i, k] * B[k, j]``, accumulated in ``out_dtype``."""

    @T.prim_func
    def main(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, (n, k), in_dtype)
        B = T.match_buffer(b, (k, m), in_dtype)
        C = T.match_buffer(c, (n, m), out_dtype)
        for i, j, kk in T.grid(n, m, k):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, kk])
                with T.init():
                    C[vi, vj] = T.cast(0, out_dtype)
                C[vi, vj] = C[vi, vj] + T.cast(A[vi, vk], out_dtype) * T.cast(B[vk, vj], out_dtype)

    return main


def fragment_layout(i, j):
    """A 2-D tile's element (i, j) → (tile row, tile column, lane, register)."""
    return (i // 16, j // 16, *shared_16x16_to_ldmatrix_32x8_layout(i % 16, j % 16))


def schedule_mma(
    sch: Schedule,
    block: str = "C",
    *,
    warps_m: int = 2,
    warps_n: int = 2,
    frags_m: int = 4,
    frags_n: int = 4,
    k_frags: int = 2,
    stages: int = 2,
    fragment_stages: int = 1,
    compute_first: bool = False,
    unroll: bool = True,
    in_dtype: str = "float16",
    out_dtype: str = "float32",
) -> Schedule:
    """Schedule the GEMM block ``block`` of ``sch`` for the tensor cores (module docstring).

    The block tile is ``(16 * warps_m * frags_m) x (16 * warps_n * frags_n)``, the k tile
    ``16 * k_frags``; the sizes must divide the GEMM's. ``stages`` shared-memory buffers
    pipeline the global fetch; with ``fragment_stages`` 2 each warp loads the fragments of
    step k + 1 while it multiplies those of step k; ``unroll`` writes out the loops over
    fragments (constant register indices); ``compute_first`` orders each pipelined step as
    compute, then fetch (one barrier a step instead of two). Returns ``sch``.
    """
    intrins = get_mma_intrin_group("shared", "global", in_dtype, out_dtype, False, False)
    threads = warps_m * warps_n
    gemm = sch.get_block(block)
    i, j, k = sch.get_loops(gemm)
    i, i_tc = sch.split(i, [None, 16])
    j, j_tc = sch.split(j, [None, 16])
    k, k_tc = sch.split(k, [None, 16])
    sch.reorder(i, j, k, i_tc, j_tc, k_tc)
    outer = sch.blockize(i_tc)
    i0, i1, i2 = sch.split(i, [None, warps_m, frags_m])
    j0, j1, j2 = sch.split(j, [None, warps_n, frags_n])
    k0, k1 = sch.split(k, [None, k_frags])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.bind(sch.fuse(i0, j0), "blockIdx.x")
    warp = sch.fuse(i1, j1)
    sch.bind(warp, "threadIdx.y")

    for index in (0, 1):
        tile = sch.cache_read(outer, index, "shared")
        sch.compute_at(tile, k0)
        fused = sch.fuse(*sch.get_loops(tile)[-2:])
        _, ty, tx, lanes = sch.split(fused, [None, threads, 32, 8])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
        sch.vectorize(lanes)
        sch.storage_align(tile, 0, axis=-2, factor=32, offset=8)

    loads, unrolled = [], [k1, i2, j2]
    for index in (0, 1):
        fragment = sch.cache_read(outer, index, "warp")
        sch.compute_at(fragment, k1)
        a, b = sch.get_loops(fragment)[-2:]
        a0, a1 = sch.split(a, [None, 16])
        b0, b1 = sch.split(b, [None, 16])
        sch.reorder(a0, b0, a1, b1)
        sch.transform_layout(fragment, ("write", 0), fragment_layout)
        loads.append(a1)
        unrolled += [a0, b0]
    store = sch.cache_write(outer, 0, "warp")
    sch.reverse_compute_at(store, warp)
    a, b = sch.get_loops(store)[-2:]
    a0, a1 = sch.split(a, [None, 16])
    b0, b1 = sch.split(b, [None, 16])
    sch.reorder(a0, b0, a1, b1)
    sch.transform_layout(store, ("read", 0), fragment_layout)
    unrolled += [a0, b0]
    init = sch.decompose_reduction(outer, k0)
    unrolled += sch.get_loops(init)[-2:]

    sch.tensorize(loads[0], intrins["load_a"])
    sch.tensorize(loads[1], intrins["load_b"])
    sch.tensorize(sch.get_loops(gemm)[-3], intrins["compute"])
    sch.tensorize(sch.get_loops(sch.get_child_blocks(init)[0])[-2], intrins["init"])
    sch.tensorize(a1, intrins["store"])
    if unroll:
        for loop in unrolled:
            sch.unroll(loop)
    if stages > 1:  # fetch tile k0 + stages - 1 (cp.async) while computing tile k0
        sch.annotate(k0, "software_pipeline_stage", [0, 0, stages - 1])
        sch.annotate(k0, "software_pipeline_async_stages", [0])
        if compute_first:
            sch.annotate(k0, "software_pipeline_order", [1, 2, 0])
    if fragment_stages > 1:  # ldmatrix of step k1 + 1 while mma.sync computes step k1
        sch.annotate(k1, "software_pipeline_stage", [0, 0, fragment_stages - 1])
    return sch
