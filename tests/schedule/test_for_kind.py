"""parallel, vectorize, unroll and bind: expected scripts and the data-parallel and thread-axis
rules."""

from __future__ import annotations

import pytest
from schedule_checks import check_refused, check_schedule

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def row_sum(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def copy2d(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8, 16), "float32")):
    for i, j in T.grid(8, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]


def _loops(func=copy2d):
    sch = Schedule(func)
    return sch, sch.get_loops(sch.get_block("B"))


def test_parallel_vectorize_unroll() -> None:
    @T.prim_func
    def expected(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8, 16), "float32")):
        for i in T.parallel(8):
            for j_0 in T.unroll(4):
                for j_1 in T.vectorized(4):
                    with T.block("B"):
                        vi = T.axis.spatial(8, i)
                        vj = T.axis.spatial(16, j_0 * 4 + j_1)
                        B[vi, vj] = A[vi, vj]

    sch, (i, j) = _loops()
    j0, j1 = sch.split(j, [None, 4])
    sch.parallel(i)
    sch.unroll(j0)
    sch.vectorize(j1)
    check_schedule(sch, copy2d, expected)


def test_bind_blocks_and_threads() -> None:
    @T.prim_func
    def expected(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8, 16), "float32")):
        for i in T.thread_binding(8, thread="blockIdx.x"):
            for j in T.thread_binding(16, thread="threadIdx.x"):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj]

    sch, (i, j) = _loops()
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    check_schedule(sch, copy2d, expected)


def test_spatial_loop_of_a_reduction_may_be_parallel_and_bound() -> None:
    @T.prim_func
    def expected(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
        for i in T.thread_binding(8, thread="blockIdx.x"):
            for k in T.unroll(16):
                with T.block("B"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vk]

    sch, (i, k) = _loops(row_sum)
    sch.bind(i, "blockIdx.x")
    sch.unroll(k)
    check_schedule(sch, row_sum, expected)


def test_reduction_loop_may_be_bound_to_threadidx_for_a_cross_thread_reduction() -> None:
    sch, (_, k) = _loops(row_sum)
    sch.bind(k, "threadIdx.x")
    assert sch.get(k).thread_tag == "threadIdx.x"
    check_schedule(sch, row_sum)


def test_the_same_thread_axis_may_be_bound_twice_with_one_extent() -> None:
    # The notebook binds a cooperative-fetch loop to threadIdx.x inside a threadIdx.x loop.
    @T.prim_func
    def nested(A: T.Buffer((4, 4), "float32")):
        for i, j in T.grid(4, 4):
            with T.block("A"):
                vi, vj = T.axis.remap("SS", [i, j])
                A[vi, vj] = T.float32(1)

    sch = Schedule(nested)
    i, j = sch.get_loops(sch.get_block("A"))
    sch.bind(i, "threadIdx.x")
    sch.bind(j, "threadIdx.x")
    check_schedule(sch, nested)


def test_vthread_binding() -> None:
    sch, (i, _) = _loops()
    sch.bind(i, "vthread.x")
    assert sch.get(i).thread_tag == "vthread.x"
    check_schedule(sch, copy2d)


# ---- rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize("primitive", ["parallel", "vectorize"])
def test_a_reduction_loop_cannot_be_parallel_or_vectorized(primitive: str) -> None:
    sch, (_, k) = _loops(row_sum)
    before = sch.mod
    error = check_refused(
        sch,
        lambda: getattr(sch, primitive)(k),
        "loop 'k' drives the reduce iterator 'vk' of block 'B'",
    )
    assert error.rule == "data-parallel"
    assert error.primitive == primitive
    assert "for i, k in T.grid(8, 16):  # <-- here" in str(error)
    assert sch.mod is before
    assert [inst.kind for inst in sch.trace] == ["get_block", "get_loops"]


def test_a_reduction_loop_cannot_be_bound_to_blockidx() -> None:
    sch, (_, k) = _loops(row_sum)
    error = check_refused(
        sch, lambda: sch.bind(k, "blockIdx.x"), "loop 'k' drives the reduce iterator"
    )
    assert error.rule == "data-parallel"


@pytest.mark.parametrize("tag", ["threadIdx.w", "blockIdx", "warp.x", "threadIdx.x "])
def test_bind_refuses_an_unknown_thread_axis(tag: str) -> None:
    sch, (i, _) = _loops()
    error = check_refused(sch, lambda: sch.bind(i, tag), "is not a thread axis")
    assert error.rule == "thread-axis"


def test_bind_refuses_one_axis_with_two_extents_in_a_kernel() -> None:
    sch, (i, j) = _loops()
    j0, j1 = sch.split(j, [None, 8])
    sch.bind(i, "blockIdx.x")
    sch.bind(j1, "threadIdx.x")
    error = check_refused(
        sch,
        lambda: sch.bind(j0, "threadIdx.x"),
        r"threadIdx\.x is already bound to loop 'j_1' with extent 8",
    )
    assert error.rule == "thread-axis"


def test_separate_kernels_may_use_different_extents() -> None:
    @T.prim_func
    def two(A: T.Buffer((8,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(8):
            with T.block("A"):
                vi = T.axis.spatial(8, i)
                A[vi] = T.float32(1)
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = T.float32(2)

    sch = Schedule(two)
    (a,) = sch.get_loops(sch.get_block("A"))
    (b,) = sch.get_loops(sch.get_block("B"))
    sch.bind(a, "threadIdx.x")
    sch.bind(b, "threadIdx.x")
    check_schedule(sch, two)


def test_parallel_refuses_a_block_with_an_opaque_iterator() -> None:
    @T.prim_func
    def opaque(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("A"):
                vi = T.axis.opaque(4, i)
                A[vi] = T.float32(1)

    sch = Schedule(opaque)
    (i,) = sch.get_loops(sch.get_block("A"))
    error = check_refused(sch, lambda: sch.parallel(i), "block 'A' has the opaque iterator 'vi'")
    assert error.rule == "block-iter-kind"


def test_parallel_refuses_a_block_whose_binding_is_not_affine() -> None:
    @T.prim_func
    def gather(A: T.Buffer((4,), "float32"), Idx: T.Buffer((4,), "int32")):
        for i in range(4):
            with T.block("A"):
                vi = T.axis.spatial(4, Idx[i])
                A[vi] = T.float32(1)

    sch = Schedule(gather)
    (i,) = sch.get_loops(sch.get_block("A"))
    error = check_refused(sch, lambda: sch.parallel(i), "has a binding that is not affine")
    assert error.rule == "affine-binding"


def test_unroll_accepts_any_loop() -> None:
    sch, (_, k) = _loops(row_sum)
    sch.unroll(k)
    check_schedule(sch, row_sum)


@T.prim_func
def sum_into_reduction_index(A: T.Buffer((8, 16), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(8, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vk] = T.float32(0)
            B[vk] = B[vk] + A[vi, vk]


def test_parallel_refuses_a_reduction_that_indexes_its_output_by_a_reduction_iterator() -> None:
    # i drives only the spatial vi, yet every i updates all of B: the iterations race.
    sch = Schedule(sum_into_reduction_index)
    i, _ = sch.get_loops("B")
    error = check_refused(
        sch,
        lambda: sch.parallel(i),
        "block 'B' under loop 'i' is neither complete nor a reduction: a reduction iterator "
        "indexes the buffer 'B'",
    )
    assert error.rule == "compact-dataflow"
    assert "does not have compact dataflow" in str(error)  # TVM's words, for code matching them


@T.prim_func
def prefix_sum(A: T.Buffer((16,), "float32")):
    for i in range(15):
        with T.block("scan"):
            A[i + 1] = A[i + 1] + A[i]


def test_vectorize_refuses_a_block_without_iterators_that_updates_in_place() -> None:
    sch = Schedule(prefix_sum)
    (i,) = sch.get_loops("scan")
    error = check_refused(
        sch, lambda: sch.vectorize(i), "it reads buffer 'A', which it writes, without an init"
    )
    assert error.rule == "compact-dataflow"
    sch.unroll(i)  # unroll keeps the order of iterations: accepted
    check_schedule(sch, prefix_sum)


@T.prim_func
def matmul_16(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_parallel_refuses_a_loop_over_a_decomposed_update_but_not_before_decomposing() -> None:
    sch = Schedule(matmul_16)
    i, _, k = sch.get_loops("C")
    sch.decompose_reduction("C", k)
    error = check_refused(sch, lambda: sch.parallel(i), "neither complete nor a reduction")
    assert error.rule == "compact-dataflow"
    # TVM's order: parallelize first, then decompose (the init nest copies the loop kinds).
    sch = Schedule(matmul_16)
    i, _, k = sch.get_loops("C")
    sch.parallel(i)
    sch.decompose_reduction("C", k)
    check_schedule(sch, matmul_16)
    assert "for i in T.parallel(16):" in sch.mod["main"].script()


def test_parallel_refuses_two_writers_of_one_buffer_under_the_loop() -> None:
    @T.prim_func
    def two_writers(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("first"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi]
            with T.block("second"):
                vi = T.axis.spatial(8, 7 - i)
                B[vi] = A[vi] * T.float32(2)

    sch = Schedule(two_writers)
    (i,) = sch.get_loops("first")
    error = check_refused(sch, lambda: sch.parallel(i), "block 'second' under it also writes 'B'")
    assert error.rule == "compact-dataflow"
