"""A tensor-core schedule written the way TVM's own ldmatrix/mma tests write it (TVM's names
throughout: ``tir.Schedule``, ``tir.tensor_intrin.cuda``, index maps as lambdas), with only
the import changed: it schedules, replays, compiles with NVRTC and computes ``A @ B`` on the
evaluator."""

from __future__ import annotations

import numpy as np
from evaluator import run_module

import tilewright as tvm
from tilewright import tir
from tilewright.codegen import codegen_cuda
from tilewright.ir import assert_structural_equal
from tilewright.meta_schedule.testing.tensor_core import mma_matmul
from tilewright.runtime.cuda_runtime.nvrtc import compile_cuda, nvrtc_version
from tilewright.tir.tensor_intrin.cuda import (
    LDMATRIX_f16_A_INTRIN,
    LDMATRIX_f16_B_INTRIN,
    MMA_f16f16f32_INTRIN,
    MMA_fill_16x16_f32_INTRIN,
    MMA_store_16x16_f32_global_INTRIN,
    shared_16x16_to_ldmatrix_32x8_layout,
)


def index_map(i, j):
    return (i // 16, j // 16, *shared_16x16_to_ldmatrix_32x8_layout(i % 16, j % 16))


def schedule(sch: tir.Schedule) -> tir.Schedule:
    i_factors, j_factors, k_factors = [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], [4, 2, 1]
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i, i_tc = sch.split(i, factors=[None, 16])
    j, j_tc = sch.split(j, factors=[None, 16])
    k, k_tc = sch.split(k, factors=[None, 16])
    sch.reorder(i, j, k, i_tc, j_tc, k_tc)
    block_inner = block
    block_outer = sch.blockize(i_tc)
    num_ty = i_factors[2] * j_factors[2]
    i0, i1, i2, i3, i4 = sch.split(i, factors=i_factors)
    j0, j1, j2, j3, j4 = sch.split(j, factors=j_factors)
    k0, k1, k2 = sch.split(k, k_factors)
    sch.reorder(i0, j0, i1, j1, j2, i2, k0, k1, i3, j3, k2, i4, j4)
    sch.bind(sch.fuse(i0, j0), "blockIdx.x")
    sch.bind(sch.fuse(i1, j1), "blockIdx.y")
    thread_idy = sch.fuse(j2, i2)
    sch.bind(thread_idy, "threadIdx.y")

    def fetch_to_shared(block, idx):
        block_read = sch.cache_read(block, idx, "shared")
        sch.compute_at(block_read, k0)
        fused = sch.fuse(*sch.get_loops(block_read)[-2:])
        _, f_1, f_2, f_3 = sch.split(fused, factors=[None, num_ty, 32, 8])
        sch.bind(f_2, "threadIdx.x")
        sch.bind(f_1, "threadIdx.y")
        sch.vectorize(f_3)
        sch.storage_align(block_read, 0, axis=-2, factor=32, offset=8)

    fetch_to_shared(block_outer, 0)
    fetch_to_shared(block_outer, 1)
    A_warp = sch.cache_read(block_outer, 0, "warp")
    B_warp = sch.cache_read(block_outer, 1, "warp")
    sch.compute_at(A_warp, k1)
    sch.compute_at(B_warp, k1)
    C_warp = sch.cache_write(block_outer, 0, "warp")
    sch.reverse_compute_at(C_warp, thread_idy)
    ii, jj = sch.get_loops(C_warp)[-2:]
    io, ii = sch.split(ii, factors=[None, 16])
    jo, ji = sch.split(jj, factors=[None, 16])
    sch.reorder(io, jo, ii, ji)
    sch.decompose_reduction(block_outer, sch.get_loops(block_outer)[3])
    block_init_c = sch.get_block("C_init")

    def tile_wmma_fragment(block_read, height, width):
        i, j = sch.get_loops(block_read)[-2:]
        i0, i1 = sch.split(i, factors=[None, height])
        j0, j1 = sch.split(j, factors=[None, width])
        sch.reorder(i0, j0, i1, j1)
        return i1

    loop_a = tile_wmma_fragment(A_warp, 16, 16)
    loop_b = tile_wmma_fragment(B_warp, 16, 16)
    sch.transform_layout(A_warp, ("write", 0), index_map)
    sch.transform_layout(B_warp, ("write", 0), index_map)
    sch.transform_layout(C_warp, ("read", 0), index_map)
    sch.tensorize(loop_a, LDMATRIX_f16_A_INTRIN)
    sch.tensorize(loop_b, LDMATRIX_f16_B_INTRIN)
    sch.tensorize(sch.get_loops(block_inner)[-3], MMA_f16f16f32_INTRIN)
    sch.tensorize(sch.get_loops(block_init_c)[-2], MMA_fill_16x16_f32_INTRIN)
    sch.tensorize(sch.get_loops(C_warp)[-2], MMA_store_16x16_f32_global_INTRIN)
    return sch


def test_tvm_style_ldmatrix_mma_schedule_runs_as_written():
    mod = tvm.IRModule({"main": mma_matmul(128, 128, 128)})
    sch = schedule(tir.Schedule(mod))
    replayed = tir.Schedule(mod)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.mod, sch.mod)
    lowered = tvm.lower(sch.mod, "nvidia/h200")
    if nvrtc_version() is not None:
        compile_cuda(codegen_cuda(lowered), "sm_80", ["main_kernel"], "nvrtc")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((128, 128)).astype(np.float16) for _ in range(2))
    c = run_module(lowered, "main", a, b, np.full((128, 128), np.nan, np.float32))[2]
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, want, rtol=0, atol=1e-5 * np.abs(want).max())
