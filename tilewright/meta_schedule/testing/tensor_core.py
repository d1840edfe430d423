"""A hand tensor-core GEMM schedule (``mma.sync`` + ``ldmatrix`` + ``cp.async``), the baseline
the tensor-core rule is measured against, and the program it schedules.

``mma_matmul(n, m, k)`` is ``C = A @ B`` (A: n x k, B: k x m, both float16 or bfloat16; C
float32 or float16). ``schedule_mma(sch)`` tiles it for the tensor cores in TVM's way:

* 16x16x16 tiles blockized, grouped into a block tile of ``warps_m x warps_n`` warps, each
  computing ``frags_m x frags_n`` tiles (``blockIdx.x`` over block tiles, ``threadIdx.y``
  over warps, ``threadIdx.x`` the 32 lanes);
* A and B tiles of ``16 * k_frags`` columns / rows fetched to shared memory by the whole block
  (16 bytes a lane), rows padded by 8 elements (``storage_align``) or, with ``permuted``,
  XOR-swizzled (``permuted_layout``) so that ``ldmatrix`` reads hit distinct banks; with
  ``stages > 1`` the fetch is a ``cp.async`` software pipeline;
* each warp's fragments loaded with ``ldmatrix`` into ``warp`` buffers stored in the fragment
  layout (``transform_layout``), multiplied with ``mma.sync``, zeroed with ``mma_fill`` and
  stored with ``mma_store``.

Example::

    sch = tw.tir.Schedule(mma_matmul(4096, 4096, 4096))
    schedule_mma(sch)
    f = tw.build(sch.mod, target="cuda")
"""

from __future__ import annotations

from typing import no_type_check

from tilewright.ir import IntImm, IterKind, PrimFunc
from tilewright.meta_schedule.analysis import block_of
from tilewright.meta_schedule.schedule_rule.multi_level_tiling_tensor_core import (
    fixed_tile_sizes,
    fragment_layout,
    gemm_of,
    tile_for_tensor_cores,
)
from tilewright.schedule import Schedule
from tilewright.script import tir as T

# Script syntax (dtype strings in annotations, parsed frames) is not Python to mypy: each
# script function is @no_type_check.

__all__ = ["fragment_layout", "mma_matmul", "schedule_mma"]


def mma_matmul(
    n: int,
    m: int,
    k: int,
    in_dtype: str = "float16",
    out_dtype: str = "float32",
    trans_a: bool = False,
    trans_b: bool = False,
) -> PrimFunc:
    """``C[i, j] = sum_k A[i, k] * B[k, j]``, accumulated in ``out_dtype``; ``trans_a``
    stores A as k x n, ``trans_b`` B as m x k."""
    a_shape = (k, n) if trans_a else (n, k)
    b_shape = (m, k) if trans_b else (k, m)

    def a_at(i, kk):  # indices, called with the block's iterators
        return (kk, i) if trans_a else (i, kk)

    def b_at(kk, j):
        return (j, kk) if trans_b else (kk, j)

    @T.prim_func
    @no_type_check
    def main(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, a_shape, in_dtype)
        B = T.match_buffer(b, b_shape, in_dtype)
        C = T.match_buffer(c, (n, m), out_dtype)
        for i, j, kk in T.grid(n, m, k):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, kk])
                ai, ak = T.meta_var(a_at(vi, vk))
                bk, bj = T.meta_var(b_at(vk, vj))
                with T.init():
                    C[vi, vj] = T.cast(0, out_dtype)
                C[vi, vj] = C[vi, vj] + T.cast(A[ai, ak], out_dtype) * T.cast(B[bk, bj], out_dtype)

    return main


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
    nested: bool = False,
    unroll: bool = True,
    permuted: bool = False,
    group_rows: int = 1,
    in_dtype: str = "float16",
    out_dtype: str = "float32",
) -> Schedule:
    """Schedule the GEMM block ``block`` of ``sch`` for the tensor cores (module docstring).

    The block tile is ``(16 * warps_m * frags_m) x (16 * warps_n * frags_n)``, the k tile
    ``16 * k_frags``; the sizes must divide the GEMM's. ``stages`` shared-memory buffers
    pipeline the global fetch; with ``fragment_stages`` 2 each warp loads the fragments of
    step k + 1 while it multiplies those of step k; ``unroll`` writes out the loops over
    fragments (constant register indices); ``compute_first`` orders each pipelined step as
    compute, then fetch (one barrier a step instead of two); ``nested`` (with
    ``fragment_stages`` 2) also loads the next tile's first fragments before the tile's last
    ``mma.sync`` (``tile_for_tensor_cores``); ``permuted`` stores the shared
    tiles XOR-swizzled (``permuted_layout``) rather than with padded rows; ``group_rows``
    numbers the block tiles that many rows at a time, column by column. ``in_dtype`` and
    ``out_dtype`` must be the block's (checked). Returns ``sch``.
    """
    gemm_block = sch.get_block(block)
    # The block's extents: spatial ones in order (i, j), then the reduction (k).
    iters = sorted(block_of(sch, gemm_block).iter_vars, key=lambda iv: iv.kind is IterKind.REDUCE)
    sizes = [iv.dom.extent.value if isinstance(iv.dom.extent, IntImm) else 0 for iv in iters]
    tile = (16 * warps_m * frags_m, 16 * warps_n * frags_n, 16 * k_frags)
    if len(sizes) == 3 and any(size % t for size, t in zip(sizes, tile)):
        raise ValueError(
            f"schedule_mma: block {block!r} is {' x '.join(map(str, sizes))}, not a multiple "
            f"of the {' x '.join(map(str, tile))} block tile (16 x warps x fragments; the "
            "schedule has no tails)"
        )
    gemm = gemm_of(sch, gemm_block)
    if gemm is None or (gemm.in_dtype, gemm.out_dtype) != (in_dtype, out_dtype):
        raise ValueError(
            f"block {block!r} is not a {in_dtype} x {in_dtype} -> {out_dtype} GEMM the tensor "
            "cores compute"
        )
    return tile_for_tensor_cores(
        sch,
        gemm_block,
        gemm,
        fixed_tile_sizes(warps_m, warps_n, frags_m, frags_n, k_frags),
        fetch_threads=warps_m * warps_n,
        stages=stages,
        fragment_stages=fragment_stages,
        compute_first=compute_first,
        nested=nested,
        unroll=unroll,
        permuted=permuted,
        group_rows=group_rows,
    )
