"""The postprocessors on hand-made schedules (the way MultiLevelTiling and the other rules
leave them): expected scripts, trace replay (Python and JSON), numbers in the evaluator (GPU
kernels thread by thread, race-checked), on PoCL and in C, and each rejection."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from evaluator import run_module

import tilewright as tw
from tilewright import config
from tilewright.ir import PrimFunc, assert_structural_equal
from tilewright.meta_schedule import postproc as P
from tilewright.meta_schedule.analysis import (
    COOPERATIVE_FETCH,
    PARALLEL,
    THREAD_EXTENT_HIGH,
    THREAD_EXTENT_LOW,
    TILING_STRUCTURE,
    UNROLL_EXPLICIT,
    UNROLL_IMPLICIT,
    VECTORIZE,
)
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.runtime import opencl_runtime
from tilewright.schedule import Schedule
from tilewright.script import tir as T

sys.path.insert(0, str(Path(__file__).parents[1] / "schedule"))
from postproc_context import initialized, scale_n
from schedule_checks import check_schedule


def _check_gpu_numbers(sch: Schedule, name: str, sizes: dict[str, int]) -> None:
    """The lowered OpenCL module, run thread by thread (races raise), computes the workload."""
    w = WORKLOADS[name]
    args = w.inputs(np.random.default_rng(0), **sizes)
    got = run_module(tw.lower(sch.mod, "opencl"), "main", *args)
    for g, want in zip(got, w.reference(*args)):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)


needs_opencl = pytest.mark.skipif(
    not opencl_runtime.available() and not config.get().ci, reason="no OpenCL platform"
)
needs_cc = pytest.mark.skipif(
    shutil.which(config.get().cc) is None, reason="no C compiler for the CPU target"
)


# ---- a matmul tiled the way MultiLevelTiling tiles it for a GPU -------------------------------
MATMUL = {"m": 16, "n": 16, "k": 8}


def tiled_matmul(vec: int = 2) -> tuple[Schedule, PrimFunc]:
    """matmul 16x16x8: i, j in [2, 4, 2] tiles, k in [2, 4]; the outer tiles fused and bound to
    blockIdx.x / threadIdx.x, A and B cached in shared memory at k_0 and annotated for a
    cooperative fetch of ``vec`` lanes, C accumulated in a local cache written back per thread."""
    func = WORKLOADS["matmul"].func(**MATMUL)
    sch = Schedule(func)
    block = sch.get_block("C")
    c_local = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    i0, i1, i2 = sch.split(i, [2, 4, 2])
    j0, j1, j2 = sch.split(j, [2, 4, 2])
    k0, k1 = sch.split(k, [2, 4])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.bind(sch.fuse(i0, j0), "blockIdx.x")
    tx = sch.fuse(i1, j1)
    sch.bind(tx, "threadIdx.x")
    for index in (0, 1):
        cache = sch.cache_read(block, index, "shared")
        sch.compute_at(cache, k0, preserve_unit_loops=True)
        sch.annotate(cache, COOPERATIVE_FETCH, vec)
    sch.reverse_compute_at(c_local, tx, preserve_unit_loops=True)
    sch.enter_postproc()
    return sch, func


@T.prim_func
def matmul_fetched(
    A: T.Buffer((16, 8), "float32"),
    B: T.Buffer((8, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    C_local = T.alloc_buffer((16, 16), scope="local")
    A_shared = T.alloc_buffer((16, 8), scope="shared")
    B_shared = T.alloc_buffer((8, 16), scope="shared")
    for i_0_j_0_fused in T.thread_binding(4, thread="blockIdx.x"):
        for i_1_j_1_fused in T.thread_binding(16, thread="threadIdx.x"):
            for k_0 in range(2):
                # 8 x 4 elements of A: 16 threads x 2 lanes, one round.
                for ax0_ax1_fused_0 in range(1):
                    for ax0_ax1_fused_1 in T.thread_binding(16, thread="threadIdx.x"):
                        for ax0_ax1_fused_2 in T.vectorized(2):
                            with T.block("A_shared"):
                                v0 = T.axis.spatial(
                                    16,
                                    i_0_j_0_fused // 2 * 8
                                    + (ax0_ax1_fused_0 * 32 + ax0_ax1_fused_1 * 2 + ax0_ax1_fused_2)
                                    // 4,
                                )
                                v1 = T.axis.spatial(
                                    8,
                                    k_0 * 4
                                    + (ax0_ax1_fused_0 * 32 + ax0_ax1_fused_1 * 2 + ax0_ax1_fused_2)
                                    % 4,
                                )
                                A_shared[v0, v1] = A[v0, v1]
                for ax0_ax1_fused_0 in range(1):
                    for ax0_ax1_fused_1 in T.thread_binding(16, thread="threadIdx.x"):
                        for ax0_ax1_fused_2 in T.vectorized(2):
                            with T.block("B_shared"):
                                v0 = T.axis.spatial(
                                    8,
                                    k_0 * 4
                                    + (ax0_ax1_fused_0 * 32 + ax0_ax1_fused_1 * 2 + ax0_ax1_fused_2)
                                    // 8,
                                )
                                v1 = T.axis.spatial(
                                    16,
                                    i_0_j_0_fused % 2 * 8
                                    + (ax0_ax1_fused_0 * 32 + ax0_ax1_fused_1 * 2 + ax0_ax1_fused_2)
                                    % 8,
                                )
                                B_shared[v0, v1] = B[v0, v1]
                for k_1, i_2, j_2 in T.grid(4, 2, 2):
                    with T.block("C"):
                        vi = T.axis.spatial(
                            16, i_0_j_0_fused // 2 * 8 + i_1_j_1_fused // 4 * 2 + i_2
                        )
                        vj = T.axis.spatial(16, i_0_j_0_fused % 2 * 8 + i_1_j_1_fused % 4 * 2 + j_2)
                        vk = T.axis.reduce(8, k_0 * 4 + k_1)
                        with T.init():
                            C_local[vi, vj] = T.float32(0.0)
                        C_local[vi, vj] = C_local[vi, vj] + A_shared[vi, vk] * B_shared[vk, vj]
            for ax0, ax1 in T.grid(2, 2):
                with T.block("C_local"):
                    v0 = T.axis.spatial(16, i_0_j_0_fused // 2 * 8 + i_1_j_1_fused // 4 * 2 + ax0)
                    v1 = T.axis.spatial(16, i_0_j_0_fused % 2 * 8 + i_1_j_1_fused % 4 * 2 + ax1)
                    C[v0, v1] = C_local[v0, v1]


def test_cooperative_fetch_spreads_each_cache_over_the_threads_with_vectors() -> None:
    sch, func = tiled_matmul(vec=2)
    assert P.RewriteCooperativeFetch().apply(sch)
    check_schedule(sch, func, matmul_fetched)
    assert COOPERATIVE_FETCH not in sch.mod.script()
    _check_gpu_numbers(sch, "matmul", MATMUL)


def test_cooperative_fetch_binds_threadidx_y_and_predicates_an_uneven_split() -> None:
    # 12x8x4: 3 x 4 threads (y, x); A's fetch is 6 x 2 = 12 elements in 2 lanes over 24 slots,
    # B's is 2 x 4 = 8 elements over 12 slots, and 3 lanes do not divide 8: no vectors.
    sizes = {"m": 12, "n": 8, "k": 4}
    func = WORKLOADS["matmul"].func(**sizes)
    sch = Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1, i2 = sch.split(i, [2, 3, 2])
    j0, j1, j2 = sch.split(j, [2, 4, 1])
    k0, k1 = sch.split(k, [2, 2])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    for loop, axis in (
        (i0, "blockIdx.y"),
        (j0, "blockIdx.x"),
        (i1, "threadIdx.y"),
        (j1, "threadIdx.x"),
    ):
        sch.bind(loop, axis)
    for index, vec in ((0, 2), (1, 3)):
        cache = sch.cache_read(block, index, "shared")
        sch.compute_at(cache, k0, preserve_unit_loops=True)
        sch.annotate(cache, COOPERATIVE_FETCH, vec)
    sch.enter_postproc()
    assert P.RewriteCooperativeFetch().apply(sch)

    @T.prim_func
    def expected(
        A: T.Buffer((12, 4), "float32"),
        B: T.Buffer((4, 8), "float32"),
        C: T.Buffer((12, 8), "float32"),
    ):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        A_shared = T.alloc_buffer((12, 4), scope="shared")
        B_shared = T.alloc_buffer((4, 8), scope="shared")
        for i_0 in T.thread_binding(2, thread="blockIdx.y"):
            for j_0 in T.thread_binding(2, thread="blockIdx.x"):
                for i_1 in T.thread_binding(3, thread="threadIdx.y"):
                    for j_1 in T.thread_binding(4, thread="threadIdx.x"):
                        for k_0 in range(2):
                            for ax0_ax1_fused_0 in range(1):
                                for ax0_ax1_fused_1 in T.thread_binding(3, thread="threadIdx.y"):
                                    for ax0_ax1_fused_2 in T.thread_binding(
                                        4, thread="threadIdx.x"
                                    ):
                                        for ax0_ax1_fused_3 in T.vectorized(2):
                                            with T.block("A_shared"):
                                                v0 = T.axis.spatial(
                                                    12,
                                                    i_0 * 6
                                                    + (
                                                        ax0_ax1_fused_0 * 24
                                                        + ax0_ax1_fused_1 * 8
                                                        + ax0_ax1_fused_2 * 2
                                                        + ax0_ax1_fused_3
                                                    )
                                                    // 2,
                                                )
                                                v1 = T.axis.spatial(
                                                    4,
                                                    k_0 * 2
                                                    + (
                                                        ax0_ax1_fused_0 * 24
                                                        + ax0_ax1_fused_1 * 8
                                                        + ax0_ax1_fused_2 * 2
                                                        + ax0_ax1_fused_3
                                                    )
                                                    % 2,
                                                )
                                                T.where(
                                                    (
                                                        (ax0_ax1_fused_0 * 3 + ax0_ax1_fused_1) * 4
                                                        + ax0_ax1_fused_2
                                                    )
                                                    * 2
                                                    + ax0_ax1_fused_3
                                                    < 12
                                                )
                                                A_shared[v0, v1] = A[v0, v1]
                            for ax0_ax1_fused_0 in range(1):
                                for ax0_ax1_fused_1 in T.thread_binding(3, thread="threadIdx.y"):
                                    for ax0_ax1_fused_2 in T.thread_binding(
                                        4, thread="threadIdx.x"
                                    ):
                                        with T.block("B_shared"):
                                            v0 = T.axis.spatial(
                                                4,
                                                k_0 * 2
                                                + (
                                                    ax0_ax1_fused_0 * 12
                                                    + ax0_ax1_fused_1 * 4
                                                    + ax0_ax1_fused_2
                                                )
                                                // 4,
                                            )
                                            v1 = T.axis.spatial(
                                                8,
                                                j_0 * 4
                                                + (
                                                    ax0_ax1_fused_0 * 12
                                                    + ax0_ax1_fused_1 * 4
                                                    + ax0_ax1_fused_2
                                                )
                                                % 4,
                                            )
                                            T.where(
                                                (ax0_ax1_fused_0 * 3 + ax0_ax1_fused_1) * 4
                                                + ax0_ax1_fused_2
                                                < 8
                                            )
                                            B_shared[v0, v1] = B[v0, v1]
                            for k_1, i_2, j_2 in T.grid(2, 2, 1):
                                with T.block("C"):
                                    vi = T.axis.spatial(12, i_0 * 6 + i_1 * 2 + i_2)
                                    vj = T.axis.spatial(8, j_0 * 4 + j_1 + j_2)
                                    vk = T.axis.reduce(4, k_0 * 2 + k_1)
                                    with T.init():
                                        C[vi, vj] = T.float32(0.0)
                                    C[vi, vj] = C[vi, vj] + A_shared[vi, vk] * B_shared[vk, vj]

    check_schedule(sch, func, expected)
    _check_gpu_numbers(sch, "matmul", sizes)


def test_cooperative_fetch_without_a_thread_loop_is_rejected() -> None:
    func = WORKLOADS["matmul"].func(**MATMUL)
    sch = Schedule(func)
    block = sch.get_block("C")
    i, _, k = sch.get_loops(block)
    sch.bind(i, "blockIdx.x")
    cache = sch.cache_read(block, 0, "shared")
    sch.compute_at(cache, k)
    sch.annotate(cache, COOPERATIVE_FETCH, 1)
    assert not P.RewriteCooperativeFetch().apply(sch)


# ---- RewriteUnboundBlock ------------------------------------------------------------------------
TRANSPOSE = {"m": 4, "n": 8}


@T.prim_func
def transpose_bound(A: T.Buffer((4, 8), "float32"), T_transpose: T.Buffer((8, 4), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i0_i1_fused_0 in T.thread_binding(2, thread="blockIdx.x"):
        for i0_i1_fused_1 in T.thread_binding(16, thread="threadIdx.x"):
            with T.block("T_transpose"):
                v0 = T.axis.spatial(8, (i0_i1_fused_0 * 16 + i0_i1_fused_1) // 4)
                v1 = T.axis.spatial(4, (i0_i1_fused_0 * 16 + i0_i1_fused_1) % 4)
                T_transpose[v0, v1] = A[v1, v0]


@T.prim_func
def transpose_bound_few_blocks(
    A: T.Buffer((4, 8), "float32"), T_transpose: T.Buffer((8, 4), "float32")
):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i0_i1_fused_1 in T.thread_binding(2, thread="blockIdx.x"):
        for i0_i1_fused_2 in T.thread_binding(4, thread="threadIdx.x"):
            for i0_i1_fused_0 in range(4):
                with T.block("T_transpose"):
                    v0 = T.axis.spatial(
                        8, (i0_i1_fused_0 * 8 + i0_i1_fused_1 * 4 + i0_i1_fused_2) // 4
                    )
                    v1 = T.axis.spatial(
                        4, (i0_i1_fused_0 * 8 + i0_i1_fused_1 * 4 + i0_i1_fused_2) % 4
                    )
                    T_transpose[v0, v1] = A[v1, v0]


def _with_threads(n: int) -> str:
    return f"opencl -max_num_threads={n}"


@pytest.mark.parametrize(
    ("threads", "max_blocks", "expected"),
    [(16, 256, transpose_bound), (4, 2, transpose_bound_few_blocks)],
    ids=["one-thread-per-element", "threads-loop-past-the-block-limit"],
)
def test_unbound_block_is_fused_split_and_bound(
    threads: int, max_blocks: int, expected: PrimFunc
) -> None:
    func = WORKLOADS["transpose"].func(**TRANSPOSE)
    sch = Schedule(func)
    sch.enter_postproc()
    post = initialized(
        P.RewriteUnboundBlock(max_threadblocks=max_blocks), func, _with_threads(threads)
    )
    assert post.apply(sch)
    check_schedule(sch, func, expected)
    _check_gpu_numbers(sch, "transpose", TRANSPOSE)


def test_unbound_cross_thread_reduction_gets_only_blockidx() -> None:
    sizes = {"m": 3, "n": 10}
    func = WORKLOADS["row_sum_127"].func(**sizes)
    sch = Schedule(func)
    _, k = sch.get_loops("A_red")
    _, k1 = sch.split(k, [None, 4])
    sch.bind(k1, "threadIdx.x")
    sch.enter_postproc()
    assert initialized(P.RewriteUnboundBlock(), func, "opencl").apply(sch)
    # A reduction across threads keeps its init: the cross-thread lowering needs it.
    assert P.RewriteReductionBlock().apply(sch)

    @T.prim_func
    def expected(A: T.Buffer((3, 10), "float32"), A_red: T.Buffer((3,), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i0 in T.thread_binding(3, thread="blockIdx.x"):
            for k_0 in range(3):
                for k_1 in T.thread_binding(4, thread="threadIdx.x"):
                    with T.block("A_red"):
                        v0 = T.axis.spatial(3, i0)
                        vk = T.axis.reduce(10, k_0 * 4 + k_1)
                        T.where(k_0 * 4 + k_1 < 10)
                        with T.init():
                            A_red[v0] = T.float32(0.0)
                        A_red[v0] = A_red[v0] + A[v0, vk]

    check_schedule(sch, func, expected)
    _check_gpu_numbers(sch, "row_sum_127", sizes)


@T.prim_func
def total(A: T.Buffer((6,), "float32"), B: T.Buffer((1,), "float32")):
    for k in range(6):
        with T.block("B"):
            vk = T.axis.reduce(6, k)
            with T.init():
                B[0] = T.float32(0)
            B[0] = B[0] + A[vk]


def test_unbound_block_without_a_spatial_loop_gets_a_unit_loop() -> None:
    sch = Schedule(total)
    sch.enter_postproc()
    assert initialized(P.RewriteUnboundBlock(), total, "opencl").apply(sch)

    @T.prim_func
    def expected(A: T.Buffer((6,), "float32"), B: T.Buffer((1,), "float32")):
        # The unit loop's parts bind a thread each and are used by no binding.
        for u_0 in T.thread_binding(1, thread="blockIdx.x"):  # noqa: B007 - the printer's names
            for u_1 in T.thread_binding(1, thread="threadIdx.x"):  # noqa: B007 - likewise
                for k in range(6):
                    with T.block("B"):
                        vk = T.axis.reduce(6, k)
                        with T.init():
                            B[0] = T.float32(0)
                        B[0] = B[0] + A[vk]

    check_schedule(sch, total, expected)
    a = np.arange(6, dtype="float32")
    got = run_module(tw.lower(sch.mod, "opencl"), "main", a, np.zeros(1, "float32"))
    assert got[1][0] == 15.0


def test_bound_and_tiled_blocks_are_left_alone() -> None:
    func = WORKLOADS["transpose"].func(**TRANSPOSE)
    sch = Schedule(func)
    i0, _ = sch.get_loops("T_transpose")
    sch.bind(i0, "blockIdx.x")  # a kernel of one thread per block
    before = sch.mod
    assert initialized(P.RewriteUnboundBlock(), func, "opencl").apply(sch)
    assert sch.mod is before

    sch = Schedule(func)
    sch.annotate("T_transpose", TILING_STRUCTURE, "SSSRRSRS")
    before = sch.mod
    assert initialized(P.RewriteUnboundBlock(), func, "opencl").apply(sch)
    assert sch.mod is before


def test_unbound_block_needs_a_target() -> None:
    with pytest.raises(ValueError, match="TuneContext"):
        P.RewriteUnboundBlock().apply(Schedule(total))


# ---- RewriteReductionBlock ----------------------------------------------------------------------
def test_reduction_block_is_decomposed_at_its_first_reduction_loop() -> None:
    sizes = {"m": 4, "n": 4, "k": 6}
    func = WORKLOADS["matmul"].func(**sizes)
    sch = Schedule(func)
    i, j, k = sch.get_loops("C")
    k0, k1 = sch.split(k, [2, 3])
    sch.reorder(i, k0, j, k1)
    sch.enter_postproc()
    assert P.RewriteReductionBlock().apply(sch)

    @T.prim_func
    def expected(
        A: T.Buffer((4, 6), "float32"),
        B: T.Buffer((6, 4), "float32"),
        C: T.Buffer((4, 4), "float32"),
    ):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in range(4):
            for j_init in range(4):
                with T.block("C_init"):
                    vi, vj = T.axis.remap("SS", [i, j_init])
                    C[vi, vj] = T.float32(0.0)
            for k_0, j, k_1 in T.grid(2, 4, 3):
                with T.block("C_update"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    vk = T.axis.reduce(6, k_0 * 3 + k_1)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    check_schedule(sch, func, expected)


def test_reduction_without_a_reduction_loop_keeps_its_init() -> None:
    @T.prim_func
    def unit_reduction(A: T.Buffer((4, 1), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                vk = T.axis.reduce(1, 0)
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]

    sch = Schedule(unit_reduction)
    before = sch.mod
    assert P.RewriteReductionBlock().apply(sch)
    assert sch.mod is before


# ---- RewriteParallelVectorizeUnroll -------------------------------------------------------------
def _annotate_root(sch: Schedule, **values: int) -> None:
    keys = {
        "parallel": PARALLEL,
        "vectorize": VECTORIZE,
        "explicit": UNROLL_EXPLICIT,
        "implicit": UNROLL_IMPLICIT,
    }
    root = sch.get_block("root")
    for name, value in values.items():
        sch.annotate(root, keys[name], value)


@needs_cc
def test_parallel_vectorize_unroll_on_a_cpu_matmul_chain() -> None:
    sizes = {"m": 4, "n": 16, "k": 8}
    w = WORKLOADS["matmul_bias_relu"]
    func = w.func(**sizes)
    sch = Schedule(func)
    _annotate_root(sch, parallel=16, vectorize=8, explicit=64)
    i, j, k = sch.get_loops("matmul")
    j0, j1 = sch.split(j, [2, 8])
    sch.reorder(i, j0, k, j1)
    sch.enter_postproc()
    assert P.RewriteParallelVectorizeUnroll().apply(sch)

    # matmul: i * j_0 = 8 threads, k stops the run; j_1 vectorized (8 lanes).
    # bias_add, relu: i (4) then j takes the product to 64 > 16, which TVM still fuses; j
    # alone (16) is past the vector limit.
    @T.prim_func
    def expected(
        A: T.Buffer((4, 8), "float32"),
        B: T.Buffer((8, 16), "float32"),
        bias: T.Buffer((16,), "float32"),
        compute: T.Buffer((4, 16), "float32"),
    ):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        T_matmul = T.alloc_buffer((4, 16))
        T_bias_add = T.alloc_buffer((4, 16))
        for i_j_0_fused in T.parallel(
            8, annotations={"pragma_auto_unroll_max_step": 64, "pragma_unroll_explicit": 1}
        ):
            for k in range(8):
                for j_1 in T.vectorized(8):
                    with T.block("matmul"):
                        vi = T.axis.spatial(4, i_j_0_fused // 2)
                        vj = T.axis.spatial(16, i_j_0_fused % 2 * 8 + j_1)
                        vk = T.axis.reduce(8, k)
                        with T.init():
                            T_matmul[vi, vj] = T.float32(0.0)
                        T_matmul[vi, vj] = T_matmul[vi, vj] + A[vi, vk] * B[vk, vj]
        for i_j_fused in T.parallel(
            64, annotations={"pragma_auto_unroll_max_step": 64, "pragma_unroll_explicit": 1}
        ):
            with T.block("bias_add"):
                vi = T.axis.spatial(4, i_j_fused // 16)
                vj = T.axis.spatial(16, i_j_fused % 16)
                T_bias_add[vi, vj] = T_matmul[vi, vj] + bias[vj]
        for i_j_fused in T.parallel(
            64, annotations={"pragma_auto_unroll_max_step": 64, "pragma_unroll_explicit": 1}
        ):
            with T.block("relu"):
                vi = T.axis.spatial(4, i_j_fused // 16)
                vj = T.axis.spatial(16, i_j_fused % 16)
                compute[vi, vj] = T.max(T_bias_add[vi, vj], T.float32(0.0))

    check_schedule(sch, func, expected)
    assert P.RewriteReductionBlock().apply(sch)
    args = w.inputs(np.random.default_rng(0), **sizes)
    arrays = [tw.nd.array(a) for a in args]
    tw.build(sch.mod, target="c")["main"](*arrays)
    np.testing.assert_allclose(arrays[-1].numpy(), w.reference(*args)[-1], rtol=1e-5, atol=1e-5)


def test_vectorize_stops_where_an_access_stops_being_contiguous() -> None:
    # T_transpose[v0, v1] = A[v1, v0]: i1 walks A with stride 8, so i0 cannot join it in one
    # vector though 8 x 4 = 32 lanes are allowed; i0 is left to parallelize.
    func = WORKLOADS["transpose"].func(**TRANSPOSE)
    sch = Schedule(func)
    _annotate_root(sch, parallel=64, vectorize=32, implicit=16)
    sch.enter_postproc()
    assert P.RewriteParallelVectorizeUnroll().apply(sch)

    @T.prim_func
    def expected(A: T.Buffer((4, 8), "float32"), T_transpose: T.Buffer((8, 4), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i0 in T.parallel(
            8, annotations={"pragma_auto_unroll_max_step": 16, "pragma_unroll_explicit": 0}
        ):
            for i1 in T.vectorized(4):
                with T.block("T_transpose"):
                    v0, v1 = T.axis.remap("SS", [i0, i1])
                    T_transpose[v0, v1] = A[v1, v0]

    check_schedule(sch, func, expected)


def test_unit_loops_are_not_parallelized_or_vectorized() -> None:
    @T.prim_func
    def unit(A: T.Buffer((1, 1), "float32"), B: T.Buffer((1, 1), "float32")):
        for i, j in T.grid(1, 1):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)

    sch = Schedule(unit)
    _annotate_root(sch, parallel=16, vectorize=16)
    sch.enter_postproc()
    assert P.RewriteParallelVectorizeUnroll().apply(sch)
    # Only the annotations are gone.
    check_schedule(sch, unit, unit)


def test_gpu_kernel_gets_only_the_unroll_pragma() -> None:
    sch, _ = tiled_matmul()
    _annotate_root(sch, explicit=512)
    assert P.RewriteCooperativeFetch().apply(sch)
    assert P.RewriteParallelVectorizeUnroll().apply(sch)
    loops = [
        sch.get(loop)
        for block in ("A_shared", "B_shared", "C", "C_local")
        for loop in sch.get_loops(block)
    ]
    pragmas = {loop.loop_var.name: dict(loop.annotations) for loop in loops if loop.annotations}
    assert pragmas == {
        "i_0_j_0_fused": {"pragma_auto_unroll_max_step": 512, "pragma_unroll_explicit": 1}
    }
    assert "T.parallel" not in sch.mod.script()
    _check_gpu_numbers(sch, "matmul", MATMUL)


# ---- DisallowDynamicLoop ------------------------------------------------------------------------
def test_dynamic_loops_are_rejected() -> None:
    assert not P.DisallowDynamicLoop().apply(Schedule(scale_n))
    assert P.DisallowDynamicLoop().apply(Schedule(total))


# ---- VerifyGPUCode ------------------------------------------------------------------------------
def _gpu_pipeline(sch: Schedule, func: PrimFunc, target: str = "opencl") -> bool:
    """The GPU postprocessors in their default order, as a tuner runs them."""
    posts = [
        P.DisallowDynamicLoop(),
        P.RewriteCooperativeFetch(),
        P.RewriteUnboundBlock(),
        P.RewriteParallelVectorizeUnroll(),
        P.RewriteReductionBlock(),
        P.VerifyGPUCode(),
    ]
    return all(initialized(post, func, target).apply(sch) for post in posts)


def test_a_tiled_matmul_passes_every_gpu_postprocessor() -> None:
    sch, func = tiled_matmul()
    sch.annotate("C", THREAD_EXTENT_LOW, 16)
    sch.annotate("C", THREAD_EXTENT_HIGH, 256)
    assert _gpu_pipeline(sch, func)
    script = sch.mod.script()
    assert 'T.block("C_init")' in script and "cooperative_fetch" not in script
    check_schedule(sch, func)
    _check_gpu_numbers(sch, "matmul", MATMUL)


@needs_opencl
def test_a_postprocessed_matmul_runs_on_opencl() -> None:
    sch, func = tiled_matmul(vec=1)  # PoCL mis-reads vector fetches in loops with barriers
    assert _gpu_pipeline(sch, func)
    w = WORKLOADS["matmul"]
    args = w.inputs(np.random.default_rng(1), **MATMUL)
    arrays = [tw.nd.array(a, tw.opencl(0)) for a in args]
    tw.build(sch.mod, target="opencl")["main"](*arrays)
    np.testing.assert_allclose(arrays[-1].numpy(), w.reference(*args)[-1], rtol=1e-5, atol=1e-5)


def test_postprocessor_replay_reproduces_the_module() -> None:
    # The trace after enter_postproc replays the postprocessors' primitives exactly.
    sch, func = tiled_matmul()
    assert _gpu_pipeline(sch, func)
    replayed = Schedule(func)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.mod, sch.mod)
    kinds = [inst.kind for inst in sch.trace.insts]
    assert kinds.index("enter_postproc") < kinds.index("decompose_reduction")
