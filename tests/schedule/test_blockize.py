"""blockize and the producer/consumer queries: expected scripts, replay, numerics, rules."""

# ruff: noqa: F841, B007 - expected scripts declare every block iterator, used or not

from __future__ import annotations

import pytest
from schedule_checks import check_refused, check_schedule
from schedule_corpus import matmul, softmax, two_stage

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def matmul_blockized(
    A: T.Buffer((8, 10), "float32"),
    B: T.Buffer((10, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    for i_0, j_0 in T.grid(2, 3):
        with T.block("C_o"):
            vi_o, vj_o = T.axis.remap("SS", [i_0, j_0])
            vk_o = T.axis.reduce(1, 0)
            T.reads(A[vi_o * 4 : vi_o * 4 + 4, 0:10], B[0:10, vj_o * 4 : vj_o * 4 + 4])
            T.writes(C[vi_o * 4 : vi_o * 4 + 4, vj_o * 4 : vj_o * 4 + 4])
            with T.init():
                for i_1, j_1 in T.grid(4, 4):
                    with T.block("C_init"):
                        vi_i_init, vj_i_init = T.axis.remap("SS", [i_1, j_1])
                        C[vi_o * 4 + vi_i_init, vj_o * 4 + vj_i_init] = T.float32(0)
            for i_1, j_1, k in T.grid(4, 4, 10):
                with T.block("C"):
                    vi_i, vj_i, vk_i = T.axis.remap("SSR", [i_1, j_1, k])
                    T.reads(
                        C[vi_o * 4 + vi_i, vj_o * 4 + vj_i],
                        A[vi_o * 4 + vi_i, vk_i],
                        B[vk_i, vj_o * 4 + vj_i],
                    )
                    T.writes(C[vi_o * 4 + vi_i, vj_o * 4 + vj_i])
                    C[vi_o * 4 + vi_i, vj_o * 4 + vj_i] = (
                        C[vi_o * 4 + vi_i, vj_o * 4 + vj_i]
                        + A[vi_o * 4 + vi_i, vk_i] * B[vk_i, vj_o * 4 + vj_i]
                    )


def test_blockize_a_tile() -> None:
    sch = Schedule(matmul)
    i, j, _ = sch.get_loops("C")
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 4])
    sch.reorder(i0, j0, i1, j1)
    outer = sch.blockize(i1)
    assert sch.get(outer).name == "C_o"
    check_schedule(sch, matmul, matmul_blockized)


@T.prim_func
def two_stage_c_blockized(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    B = T.alloc_buffer((6, 10))
    for i, j in T.grid(6, 10):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i in range(6):
        with T.block("C_o"):
            vi_o = T.axis.spatial(6, i)
            vj_o = T.axis.spatial(1, 0)
            for j in range(10):
                with T.block("C"):
                    vj_i = T.axis.spatial(10, j)
                    C[vi_o, vj_i] = B[vi_o, vj_i] + T.float32(1)


def test_blockize_a_row_keeps_the_outer_iterator() -> None:
    # TVM's form: vi moves out whole (nothing inside drives it), vj gets a unit outer iterator.
    sch = Schedule(two_stage)
    _, j = sch.get_loops("C")
    sch.blockize(j)
    check_schedule(sch, two_stage, two_stage_c_blockized)


@T.prim_func
def diagonal(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i, j in T.grid(4, 2):
        with T.block("B"):
            vi = T.axis.spatial(8, i + j * 4)
            B[vi] = A[vi]


def test_blockize_needs_separable_bindings() -> None:
    sch = Schedule(diagonal)
    _, j = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.blockize(j), "does not split")
    assert error.rule == "blockize-binding"
    sch = Schedule(softmax)
    (root,) = [sch.get_block("root")]
    error = check_refused(sch, lambda: sch.blockize(root), "expected a LoopRV")  # type: ignore[arg-type]
    assert error.rule == "argument"


def test_get_producers_and_consumers() -> None:
    sch = Schedule(softmax)
    names = lambda refs: [sch.get(r).name for r in refs]
    assert names(sch.get_producers("norm")) == ["exp", "row_sum"]
    assert names(sch.get_consumers("exp")) == ["row_sum", "norm"]
    assert names(sch.get_consumers("norm")) == []
    assert names(sch.get_producers("row_max")) == []
    # The blocks writing what the root block does not allocate: the function's output.
    assert names(sch.get_output_blocks("root")) == ["norm"]
    # Pure queries: the simplified trace drops them.
    assert len(sch.trace.simplified()) == 0


@T.prim_func
def two_in_one_loop(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8))
    for i in range(8):
        for j in range(8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def two_in_one_loop_blockized(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8))
    for i_0 in range(2):
        with T.block("B_C_o"):
            v_i_0 = T.axis.spatial(2, i_0)
            T.reads(A[v_i_0 * 4 : v_i_0 * 4 + 4, 0:8], B[v_i_0 * 4 : v_i_0 * 4 + 4, 0:8])
            T.writes(B[v_i_0 * 4 : v_i_0 * 4 + 4, 0:8], C[v_i_0 * 4 : v_i_0 * 4 + 4, 0:8])
            for i_1 in range(4):
                for j in range(8):
                    with T.block("B"):
                        vi = T.axis.spatial(8, v_i_0 * 4 + i_1)
                        vj = T.axis.spatial(8, j)
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for j in range(8):
                    with T.block("C"):
                        vi = T.axis.spatial(8, v_i_0 * 4 + i_1)
                        vj = T.axis.spatial(8, j)
                        C[vi, vj] = B[vi, vj] + T.float32(1)


def test_blockize_a_loop_holding_several_blocks() -> None:
    sch = Schedule(two_in_one_loop)
    i = sch.get_loops("B")[0]
    _, i1 = sch.split(i, [2, 4])
    outer = sch.blockize(i1)
    assert sch.get(outer).name == "B_C_o"
    check_schedule(sch, two_in_one_loop, two_in_one_loop_blockized)


# -- TVM's blockize forms (tests/python/tir-schedule/test_tir_schedule_blockize.py) ------------


@T.prim_func
def single_elementwise(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def single_elementwise_blockized_outer(
    A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")
):
    with T.block("B_o"):
        vi_o = T.axis.spatial(1, 0)
        vj_o = T.axis.spatial(1, 0)
        for i, j in T.grid(128, 128):
            with T.block("B"):
                vi_i, vj_i = T.axis.remap("SS", [i, j])
                B[vi_i, vj_i] = A[vi_i, vj_i] * T.float32(2)


@T.prim_func
def single_elementwise_blockized_inner(
    A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")
):
    for i in range(128):
        with T.block("B_o"):
            vi_o = T.axis.spatial(128, i)
            vj_o = T.axis.spatial(1, 0)
            for j in range(128):
                with T.block("B"):
                    vj_i = T.axis.remap("S", [j])
                    B[vi_o, vj_i] = A[vi_o, vj_i] * T.float32(2)


def test_blockize_the_outermost_loop_gives_unit_outer_iterators() -> None:
    sch = Schedule(single_elementwise)
    i, _ = sch.get_loops("B")
    sch.blockize(i)
    check_schedule(sch, single_elementwise, single_elementwise_blockized_outer)


def test_blockize_the_inner_loop_moves_the_outer_iterator_out() -> None:
    sch = Schedule(single_elementwise)
    _, j = sch.get_loops("B")
    sch.blockize(j)
    check_schedule(sch, single_elementwise, single_elementwise_blockized_inner)


@T.prim_func
def rowsum(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    for k, i in T.grid(16, 16):
        with T.block("B"):
            vk, vi = T.axis.remap("RS", [k, i])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def rowsum_blockized(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    with T.block("B_o"):
        vk_o = T.axis.reduce(1, 0)
        vi_o = T.axis.spatial(1, 0)
        T.reads(A[0:16, 0:16])
        T.writes(B[0:16])
        with T.init():
            for i in range(16):
                with T.block("B_init"):
                    vi_i_init = T.axis.spatial(16, i)
                    B[vi_i_init] = T.float32(0)
        for k, i in T.grid(16, 16):
            with T.block("B"):
                vk_i, vi_i = T.axis.remap("RS", [k, i])
                T.reads(B[vi_i], A[vi_i, vk_i])
                T.writes(B[vi_i])
                B[vi_i] = B[vi_i] + A[vi_i, vk_i]


def test_blockize_moves_the_init_out_over_the_loops_it_needs() -> None:
    sch = Schedule(rowsum)
    k, _ = sch.get_loops("B")
    sch.blockize(k)
    check_schedule(sch, rowsum, rowsum_blockized)


@T.prim_func
def elementwise_int64(
    A: T.Buffer((T.int64(16), T.int64(128)), "float32"),
    B: T.Buffer((T.int64(16), T.int64(128)), "float32"),
):
    for i0, j0, i1, j1 in T.grid(T.int64(1), T.int64(8), T.int64(16), T.int64(16)):
        with T.block("B"):
            vi = T.axis.spatial(T.int64(16), i0 * T.int64(16) + i1)
            vj = T.axis.spatial(T.int64(128), j0 * T.int64(16) + j1)
            B[vi, vj] = A[vi, vj] + T.float32(1)


@T.prim_func
def elementwise_int64_blockized(
    A: T.Buffer((T.int64(16), T.int64(128)), "float32"),
    B: T.Buffer((T.int64(16), T.int64(128)), "float32"),
):
    for i0, j0 in T.grid(T.int64(1), T.int64(8)):
        with T.block("B_o"):
            vi_o = T.axis.spatial(T.int64(1), T.int64(0))
            vj_o = T.axis.spatial(T.int64(8), j0)
            for i1, j1 in T.grid(T.int64(16), T.int64(16)):
                with T.block("B"):
                    vi_i, vj_i = T.axis.remap("SS", [i1, j1])
                    B[vi_i, vj_o * T.int64(16) + vj_i] = A[
                        vi_i, vj_o * T.int64(16) + vj_i
                    ] + T.float32(1)


@T.prim_func
def elementwise_int64_blockized_preserving(
    A: T.Buffer((T.int64(16), T.int64(128)), "float32"),
    B: T.Buffer((T.int64(16), T.int64(128)), "float32"),
):
    for i0, j0 in T.grid(T.int64(1), T.int64(8)):
        with T.block("B_o"):
            vi_o = T.axis.spatial(T.int64(1), i0)
            vj_o = T.axis.spatial(T.int64(8), j0)
            for i1, j1 in T.grid(T.int64(16), T.int64(16)):
                with T.block("B"):
                    vi_i, vj_i = T.axis.remap("SS", [i1, j1])
                    B[vi_i, vj_o * T.int64(16) + vj_i] = A[
                        vi_i, vj_o * T.int64(16) + vj_i
                    ] + T.float32(1)


@pytest.mark.parametrize("preserve_unit_iters", [True, False])
def test_blockize_int64_with_and_without_unit_iterators(preserve_unit_iters: bool) -> None:
    sch = Schedule(elementwise_int64)
    _, _, i1, _ = sch.get_loops("B")
    sch.blockize(i1, preserve_unit_iters=preserve_unit_iters)
    expected = (
        elementwise_int64_blockized_preserving
        if preserve_unit_iters
        else elementwise_int64_blockized
    )
    check_schedule(sch, elementwise_int64, expected)


@T.prim_func
def two_blocks_in_a_loop(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for m in range(6):
        for i, j in T.grid(3, 1):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(128, 64):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj + 64] = A[vi, vj + 64] * T.float32(3)


@T.prim_func
def two_blocks_in_a_loop_blockized(
    A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")
):
    for m in range(6):
        with T.block("outer_B_C_"):
            vi_o = T.axis.spatial(1, 0)
            vj_o = T.axis.spatial(1, 0)
            T.reads(A[0:128, 0:128])
            T.writes(B[0:128, 0:128])
            for i, j in T.grid(3, 1):
                with T.block("B"):
                    vi_i = T.axis.spatial(3, i)
                    B[vi_i, 0] = A[vi_i, 0] * T.float32(2)
            for i, j in T.grid(128, 64):
                with T.block("C"):
                    vi_i, vj_i = T.axis.remap("SS", [i, j])
                    B[vi_i, vj_i + 64] = A[vi_i, vj_i + 64] * T.float32(3)


def test_blockize_a_list_of_blocks() -> None:
    sch = Schedule(two_blocks_in_a_loop)
    outer = sch.blockize([sch.get_block("B"), sch.get_block("C")], preserve_unit_iters=False)
    assert sch.get(outer).name == "outer_B_C_"
    check_schedule(sch, two_blocks_in_a_loop, two_blocks_in_a_loop_blockized)
    assert "sch.blockize(target=[b0, b1], preserve_unit_iters=False)" in str(sch.trace)


@T.prim_func
def three_in_a_loop(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8))
    C = T.alloc_buffer((8, 8))
    for i in range(8):
        for j in range(8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)
        for j in range(4):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = C[vi, vj] * B[vi, vj]
    for i, j in T.grid(8, 4):
        with T.block("E"):
            vi = T.axis.spatial(8, i)
            vj = T.axis.spatial(8, j + 4)
            D[vi, vj] = A[vi, vj]


@T.prim_func
def three_in_a_loop_b_c_blockized(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8))
    C = T.alloc_buffer((8, 8))
    for i in range(8):
        with T.block("outer_B_C_"):
            vi_o = T.axis.spatial(8, i)
            vj_o = T.axis.spatial(1, 0)
            T.reads(A[vi_o, 0:8], B[vi_o, 0:8])
            T.writes(B[vi_o, 0:8], C[vi_o, 0:8])
            for j in range(8):
                with T.block("B"):
                    vj_i = T.axis.spatial(8, j)
                    B[vi_o, vj_i] = A[vi_o, vj_i] * T.float32(2)
            for j in range(8):
                with T.block("C"):
                    vj_i = T.axis.spatial(8, j)
                    C[vi_o, vj_i] = B[vi_o, vj_i] + T.float32(1)
        for j in range(4):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = C[vi, vj] * B[vi, vj]
    for i, j in T.grid(8, 4):
        with T.block("E"):
            vi = T.axis.spatial(8, i)
            vj = T.axis.spatial(8, j + 4)
            D[vi, vj] = A[vi, vj]


def test_blockize_consecutive_blocks_of_a_loop_shares_its_outer_iterators() -> None:
    # Listed in any order (by name here); the loop's other statement stays after the new block.
    sch = Schedule(three_in_a_loop)
    outer = sch.blockize(["C", "B"])
    assert sch.get(outer).name == "outer_B_C_"
    check_schedule(sch, three_in_a_loop, three_in_a_loop_b_c_blockized)


def test_blockize_of_blocks_refuses_what_does_not_nest() -> None:
    sch = Schedule(three_in_a_loop)
    b, d, e = sch.get_block("B"), sch.get_block("D"), sch.get_block("E")
    error = check_refused(sch, lambda: sch.blockize([b]), "a list of two or more blocks")
    assert error.rule == "blockize-blocks"
    # B and D have C between them.
    error = check_refused(sch, lambda: sch.blockize([b, d]), "must be consecutive statements")
    assert error.rule == "blockize-blocks"
    # D sits in the loop i with B and C: its statement under the root holds other blocks.
    error = check_refused(sch, lambda: sch.blockize([d, e]), "is not under loops only")
    assert error.rule == "blockize-blocks"
    # C divides into one outer iterator, B into two (vi_o and a unit vj_o).
    sch = Schedule(row_and_column)
    b, c = sch.get_block("B"), sch.get_block("C")
    error = check_refused(sch, lambda: sch.blockize([b, c]), "does not divide into the first")
    assert error.rule == "blockize-blocks"


@T.prim_func
def row_and_column(
    A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"), C: T.Buffer((8,), "float32")
):
    for i in range(8):
        for j in range(8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj]
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = A[vi, 0]


@T.prim_func
def sum_and_max(
    A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32"), D: T.Buffer((4,), "float32")
):
    for i in range(4):
        for k in range(8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
        for k in range(8):
            with T.block("D"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    D[vi] = T.float32(-1e30)
                D[vi] = T.max(D[vi], A[vi, vk])


@T.prim_func
def sum_and_max_blockized(
    A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32"), D: T.Buffer((4,), "float32")
):
    for i in range(4):
        with T.block("outer_B_D_"):
            vi_o = T.axis.spatial(4, i)
            vk_o = T.axis.reduce(1, 0)
            for k in range(8):
                with T.block("B"):
                    vk_i = T.axis.reduce(8, k)
                    with T.init():
                        B[vi_o] = T.float32(0)
                    B[vi_o] = B[vi_o] + A[vi_o, vk_i]
            for k in range(8):
                with T.block("D"):
                    vk_i = T.axis.reduce(8, k)
                    with T.init():
                        D[vi_o] = T.float32(-1e30)
                    D[vi_o] = T.max(D[vi_o], A[vi_o, vk_i])


def test_blockize_of_blocks_keeps_an_init_whose_reduction_is_inside() -> None:
    # Differs from TVM, which drops the inner blocks' inits here (wrong results): each
    # reduction runs whole inside the new block, so its init stays with it.
    sch = Schedule(sum_and_max)
    sch.blockize([sch.get_block("B"), sch.get_block("D")])
    check_schedule(sch, sum_and_max, sum_and_max_blockized)


@T.prim_func
def sums_by_columns(
    A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32"), D: T.Buffer((4,), "float32")
):
    for k in range(8):
        for i in range(4):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
        for i in range(4):
            with T.block("D"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    D[vi] = T.float32(0)
                D[vi] = D[vi] + A[vi, vk] * T.float32(2)


def test_blockize_of_blocks_refuses_an_init_with_a_reduction_outside() -> None:
    # vk_o would be the loop k outside the new block: the inits cannot stay inside (they
    # would run on every k) and, as in TVM, are not moved out for a list of blocks.
    sch = Schedule(sums_by_columns)
    b, d = sch.get_block("B"), sch.get_block("D")
    error = check_refused(sch, lambda: sch.blockize([b, d]), "has an init and reduces over")
    assert error.rule == "blockize-blocks"
