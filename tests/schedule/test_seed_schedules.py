"""The seed notebook's schedules: vector add, window sum and the matmul ``blocking`` loop
steps, compared with the IR the notebook printed (its Expected_0/1/2) or, where the notebook's
steps need issue-4 primitives (cache_write, reverse_compute_at, decompose_reduction), with the
same loop structure written out here."""

# ruff: noqa: F821, UP037 - dtype strings inside annotations are script syntax, as the notebook
# writes them, not forward references
from __future__ import annotations

from schedule_checks import check_schedule

import tilewright as tw
from tilewright.script import tir as T
from tilewright.tir import Schedule


@tw.script.ir_module
class MyModuleVecAdd:
    @T.prim_func
    def main(
        A: T.Buffer[(1024,), "float32"],
        B: T.Buffer[(1024,), "float32"],
        C: T.Buffer[(1024,), "float32"],
    ) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in T.grid(1024):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = A[vi] + B[vi]


@tw.script.ir_module
class Expected_0:
    @T.prim_func
    def main(
        A: T.Buffer[1024, "float32"], B: T.Buffer[1024, "float32"], C: T.Buffer[1024, "float32"]
    ) -> None:
        # function attr dict
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        # body
        # with T.block("root")
        for i_0, i_1 in T.grid(8, 128):
            with T.block("C"):
                vi = T.axis.spatial(1024, i_0 * 128 + i_1)
                T.reads(A[vi], B[vi])
                T.writes(C[vi])
                C[vi] = A[vi] + B[vi]


@tw.script.ir_module
class Expected_1:
    @T.prim_func
    def main(
        A: T.Buffer[1024, "float32"], B: T.Buffer[1024, "float32"], C: T.Buffer[1024, "float32"]
    ) -> None:
        # function attr dict
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        # body
        # with T.block("root")
        for i_0 in T.thread_binding(8, thread="blockIdx.x"):
            for i_1 in T.thread_binding(128, thread="threadIdx.x"):
                with T.block("C"):
                    vi = T.axis.spatial(1024, i_0 * 128 + i_1)
                    T.reads(A[vi], B[vi])
                    T.writes(C[vi])
                    C[vi] = A[vi] + B[vi]


def test_vector_add_split_then_bind_prints_the_notebook_ir() -> None:
    sch = Schedule(MyModuleVecAdd)
    block_C = sch.get_block("C")
    (i,) = sch.get_loops(block=block_C)
    i0, i1 = sch.split(i, [None, 128])
    check_schedule(sch, MyModuleVecAdd, Expected_0)
    assert "vi = T.axis.spatial(1024, i_0 * 128 + i_1)" in sch.mod.script()
    assert "for i_0, i_1 in T.grid(8, 128):" in sch.mod.script()

    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    check_schedule(sch, MyModuleVecAdd, Expected_1)


@tw.script.ir_module
class MyModuleWindowSum:
    @T.prim_func
    def main(A: T.Buffer[(1027,), "float32"], B: T.Buffer[(1024,), "float32"]) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in T.grid(1024):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] + A[vi + 1] + A[vi + 2]


@tw.script.ir_module
class Expected_2:
    @T.prim_func
    def main(A: T.Buffer[1027, "float32"], B: T.Buffer[1024, "float32"]) -> None:
        # function attr dict
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        # body
        # with T.block("root")
        for i_0 in T.thread_binding(8, thread="blockIdx.x"):
            for i_1 in T.thread_binding(128, thread="threadIdx.x"):
                with T.block("C"):
                    vi = T.axis.spatial(1024, i_0 * 128 + i_1)
                    T.reads(A[vi : vi + 3])
                    T.writes(B[vi])
                    B[vi] = A[vi] + A[vi + 1] + A[vi + 2]


def test_window_sum_split_bind_prints_the_notebook_ir() -> None:
    sch = Schedule(MyModuleWindowSum)
    nthread = 128
    block_C = sch.get_block("C")
    (i,) = sch.get_loops(block=block_C)
    i0, i1 = sch.split(i, [None, nthread])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    check_schedule(sch, MyModuleWindowSum, Expected_2)


def matmul_module(n: int) -> tw.IRModule:
    @T.prim_func
    def main(
        A: T.Buffer((n, n), "float32"),
        B: T.Buffer((n, n), "float32"),
        C: T.Buffer((n, n), "float32"),
    ) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(n, n, n):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0.0
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return tw.IRModule({"main": main})


def blocking(sch, tile_local_y, tile_local_x, tile_block_y, tile_block_x, tile_k):
    """The notebook's ``blocking`` without its cache_write, reverse_compute_at and
    decompose_reduction steps (issue 4's primitives)."""
    block_C = sch.get_block("C")
    i, j, k = sch.get_loops(block=block_C)
    i0, i1, i2 = sch.split(loop=i, factors=[None, tile_block_y, tile_local_y])
    j0, j1, j2 = sch.split(loop=j, factors=[None, tile_block_x, tile_local_x])
    k0, k1 = sch.split(loop=k, factors=[None, tile_k])
    sch.unroll(k1)
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    return sch


@T.prim_func
def blocked_matmul(
    A: T.Buffer((1024, 1024), "float32"),
    B: T.Buffer((1024, 1024), "float32"),
    C: T.Buffer((1024, 1024), "float32"),
):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i_0 in T.thread_binding(16, thread="blockIdx.y"):
        for j_0 in T.thread_binding(16, thread="blockIdx.x"):
            for i_1 in T.thread_binding(8, thread="threadIdx.y"):
                for j_1 in T.thread_binding(8, thread="threadIdx.x"):
                    for k_0 in T.serial(256):
                        for k_1 in T.unroll(4):
                            for i_2, j_2 in T.grid(8, 8):
                                with T.block("C"):
                                    vi = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + i_2)
                                    vj = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + j_2)
                                    vk = T.axis.reduce(1024, k_0 * 4 + k_1)
                                    T.reads(A[vi, vk], B[vk, vj])
                                    T.writes(C[vi, vj])
                                    with T.init():
                                        C[vi, vj] = T.float32(0)
                                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_matmul_blocking_loop_steps_give_the_notebook_loop_structure() -> None:
    mod = matmul_module(1024)
    sch = blocking(Schedule(mod), 8, 8, 8, 8, 4)
    check_schedule(sch, mod, blocked_matmul, numeric=False)
    text = sch.mod.script()
    assert "vi = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + i_2)" in text
    assert "vk = T.axis.reduce(1024, k_0 * 4 + k_1)" in text
    assert "for k_1 in T.unroll(4):" in text


def test_matmul_blocking_computes_the_same_product() -> None:
    mod = matmul_module(32)
    sch = blocking(Schedule(mod), 2, 2, 4, 4, 4)
    check_schedule(sch, mod)


@T.prim_func
def fused_threads_matmul(
    A: T.Buffer((1024, 1024), "float32"),
    B: T.Buffer((1024, 1024), "float32"),
    C: T.Buffer((1024, 1024), "float32"),
):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i_0 in T.thread_binding(16, thread="blockIdx.y"):
        for j_0 in T.thread_binding(16, thread="blockIdx.x"):
            for i_1_j_1_fused in T.thread_binding(64, thread="threadIdx.x"):
                for k_0, k_1, i_2, j_2 in T.grid(128, 8, 8, 8):
                    with T.block("C"):
                        vi = T.axis.spatial(1024, i_0 * 64 + i_1_j_1_fused // 8 * 8 + i_2)
                        vj = T.axis.spatial(1024, j_0 * 64 + i_1_j_1_fused % 8 * 8 + j_2)
                        vk = T.axis.reduce(1024, k_0 * 8 + k_1)
                        T.reads(A[vi, vk], B[vk, vj])
                        T.writes(C[vi, vj])
                        with T.init():
                            C[vi, vj] = T.float32(0)
                        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def blocking_with_shared_loops(sch, tile_local_y, tile_local_x, tile_block_y, tile_block_x, tile_k):
    """The loop steps of the notebook's ``blocking_with_shared`` (no caching)."""
    block_C = sch.get_block("C")
    i, j, k = sch.get_loops(block=block_C)
    i0, i1, i2 = sch.split(loop=i, factors=[None, tile_block_y, tile_local_y])
    j0, j1, j2 = sch.split(loop=j, factors=[None, tile_block_x, tile_local_x])
    k0, k1 = sch.split(loop=k, factors=[None, tile_k])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    tx = sch.fuse(i1, j1)
    sch.bind(tx, "threadIdx.x")
    return sch


def test_blocking_with_shared_fuses_the_thread_loops_as_the_notebook_prints() -> None:
    mod = matmul_module(1024)
    sch = blocking_with_shared_loops(Schedule(mod), 8, 8, 8, 8, 8)
    check_schedule(sch, mod, fused_threads_matmul, numeric=False)
    text = sch.mod.script()
    assert "vi = T.axis.spatial(1024, i_0 * 64 + i_1_j_1_fused // 8 * 8 + i_2)" in text
    assert "vj = T.axis.spatial(1024, j_0 * 64 + i_1_j_1_fused % 8 * 8 + j_2)" in text


def test_blocking_with_shared_loops_compute_the_same_product() -> None:
    mod = matmul_module(32)
    sch = blocking_with_shared_loops(Schedule(mod), 2, 2, 4, 4, 4)
    check_schedule(sch, mod)
