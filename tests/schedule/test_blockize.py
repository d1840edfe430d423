"""blockize and the producer/consumer queries: expected scripts, replay, numerics, rules."""

from __future__ import annotations

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
            T.reads(A[vi_o * 4 : vi_o * 4 + 4, 0:10], B[0:10, vj_o * 4 : vj_o * 4 + 4])
            T.writes(C[vi_o * 4 : vi_o * 4 + 4, vj_o * 4 : vj_o * 4 + 4])
            for i_1, j_1, k in T.grid(4, 4, 10):
                with T.block("C"):
                    vi = T.axis.spatial(8, vi_o * 4 + i_1)
                    vj = T.axis.spatial(12, vj_o * 4 + j_1)
                    vk = T.axis.reduce(10, k)
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_blockize_a_tile() -> None:
    sch = Schedule(matmul)
    i, j, _ = sch.get_loops("C")
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 4])
    sch.reorder(i0, j0, i1, j1)
    outer = sch.blockize(i1)
    assert sch.get(outer).name == "C_o"
    check_schedule(sch, matmul, matmul_blockized)


def test_blockize_a_row_keeps_the_outer_iterator() -> None:
    sch = Schedule(two_stage)
    _, j = sch.get_loops("C")
    sch.blockize(j)
    check_schedule(sch, two_stage)
    text = sch.mod.script()
    assert "vi = T.axis.spatial(6, vi_o)" in text
    assert "T.reads(B[vi_o, 0:10])" in text


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
