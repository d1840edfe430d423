"""decompose_reduction and rfactor: expected scripts, replay, numerics (sum and max), and every
rule they enforce."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule
from schedule_corpus import matmul, row_sum, softmax, total_max, two_stage

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def row_sum_decomposed(A: T.Buffer((6, 10), "float32"), B: T.Buffer((6,), "float32")):
    for i in range(6):
        with T.block("B_init"):
            vi = T.axis.spatial(6, i)
            T.reads()
            T.writes(B[vi])
            B[vi] = T.float32(0)
        for k in range(10):
            with T.block("B_update"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(B[vi], A[vi, vk])
                T.writes(B[vi])
                B[vi] = B[vi] + A[vi, vk]


def test_decompose_reduction_at_the_reduction_loop() -> None:
    sch = Schedule(row_sum)
    block = sch.get_block("B")
    _, k = sch.get_loops(block)
    init = sch.decompose_reduction(block, k)
    check_schedule(sch, row_sum, row_sum_decomposed)
    assert sch.get(init).name == "B_init"
    assert sch.get(block).name == "B_update"  # the reference follows the update block


@T.prim_func
def row_sum_decomposed_outside(A: T.Buffer((6, 10), "float32"), B: T.Buffer((6,), "float32")):
    for i_init in range(6):
        with T.block("B_init"):
            vi = T.axis.spatial(6, i_init)
            T.reads()
            T.writes(B[vi])
            B[vi] = T.float32(0)
    for i, k in T.grid(6, 10):
        with T.block("B_update"):
            vi, vk = T.axis.remap("SR", [i, k])
            T.reads(B[vi], A[vi, vk])
            T.writes(B[vi])
            B[vi] = B[vi] + A[vi, vk]


def test_decompose_reduction_at_an_outer_spatial_loop_copies_it() -> None:
    sch = Schedule(row_sum)
    i, _ = sch.get_loops("B")
    sch.decompose_reduction("B", i)
    check_schedule(sch, row_sum, row_sum_decomposed_outside)


def test_decompose_reduction_of_a_tiled_matmul() -> None:
    sch = Schedule(matmul)
    i, j, k = sch.get_loops("C")
    i0, i1 = sch.split(i, [None, 4])
    k0, k1 = sch.split(k, [None, 5])
    sch.reorder(i0, j, k0, i1, k1)
    sch.decompose_reduction("C", k0)
    check_schedule(sch, matmul)
    assert "for i_1_init in range(4):" in sch.mod.script()


@T.prim_func
def row_sum_rfactor(A: T.Buffer((6, 10), "float32"), B: T.Buffer((6,), "float32")):
    B_rf = T.alloc_buffer((5, 6))
    for i, k_0, k_1 in T.grid(6, 2, 5):
        with T.block("B_rf"):
            vk_1, vi, vk_0 = T.axis.remap("SSR", [k_1, i, k_0])
            with T.init():
                B_rf[vk_1, vi] = T.float32(0)
            B_rf[vk_1, vi] = B_rf[vk_1, vi] + A[vi, vk_0 * 5 + vk_1]
    for i, k_1 in T.grid(6, 5):
        with T.block("B"):
            vk_1, vi = T.axis.remap("RS", [k_1, i])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + B_rf[vk_1, vi]


def test_rfactor_of_a_sum() -> None:
    sch = Schedule(row_sum)
    _, k = sch.get_loops("B")
    _, k1 = sch.split(k, [None, 5])
    rf = sch.rfactor(k1, 0)
    assert sch.get(rf).name == "B_rf"
    check_schedule(sch, row_sum, row_sum_rfactor)


@T.prim_func
def total_max_rfactor(A: T.Buffer((7, 9), "float32"), B: T.Buffer((1,), "float32")):
    B_rf = T.alloc_buffer((7, 1))
    for i, k0, k1 in T.grid(1, 7, 9):
        with T.block("B_rf"):
            vk0, vi, vk1 = T.axis.remap("SSR", [k0, i, k1])
            with T.init():
                B_rf[vk0, vi] = T.float32(-1e30)
            B_rf[vk0, vi] = T.max(B_rf[vk0, vi], A[vk0, vk1])
    for i, k0 in T.grid(1, 7):
        with T.block("B"):
            vk0, vi = T.axis.remap("RS", [k0, i])
            with T.init():
                B[vi] = T.float32(-1e30)
            B[vi] = T.max(B[vi], B_rf[vk0, vi])


def test_rfactor_of_a_max() -> None:
    sch = Schedule(total_max)
    _, k0, _ = sch.get_loops("B")
    sch.rfactor(k0, 0)
    check_schedule(sch, total_max, total_max_rfactor)


def test_rfactor_then_decompose_and_parallelize_the_partial_sums() -> None:
    sch = Schedule(matmul)
    _, _, k = sch.get_loops("C")
    rf = sch.rfactor(k, -1)
    loops = sch.get_loops(rf)
    sch.reorder(loops[2], loops[0])
    sch.parallel(loops[2])
    sch.decompose_reduction("C", sch.get_loops("C")[2])
    check_schedule(sch, matmul)


# ---- rules ---------------------------------------------------------------------------------


def test_decompose_reduction_rules() -> None:
    sch = Schedule(two_stage)
    i, _ = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.decompose_reduction("B", i), "no init")
    assert error.rule == "reduction-block"
    sch = Schedule(row_sum)
    i, k = sch.get_loops("B")
    sch.reorder(k, i)
    error = check_refused(sch, lambda: sch.decompose_reduction("B", i), "drives a reduction")
    assert error.rule == "location"
    sch = Schedule(softmax)
    i, _ = sch.get_loops("norm")
    error = check_refused(sch, lambda: sch.decompose_reduction("row_max", i), "is not above")
    assert error.rule == "location"


@T.prim_func
def product_minus(A: T.Buffer((6, 10), "float32"), B: T.Buffer((6,), "float32")):
    for i, k in T.grid(6, 10):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] - A[vi, vk]


def test_rfactor_rules() -> None:
    sch = Schedule(product_minus)
    _, k = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(k, 0), "B\\[...\\] = B\\[...\\] op rhs")
    assert error.rule == "reduction-pattern"
    sch = Schedule(row_sum)
    i, k = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(i, 0), "no spatial one")
    assert error.rule == "rfactor-loop"
    error = check_refused(sch, lambda: sch.rfactor(k, 3), "factor_axis 3 is out of range")
    assert error.rule == "argument"
    sch = Schedule(two_stage)
    i, _ = sch.get_loops("C")
    sch.compute_at("B", i)
    error = check_refused(sch, lambda: sch.rfactor(i, 0), "exactly one block, not 2")
    assert error.rule == "rfactor-block"
    sch = Schedule(two_stage)
    _, j = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(j, 0), "no init")
    assert error.rule == "reduction-block"


def test_a_reduction_continued_across_an_outer_block_stays_whole() -> None:
    sch = Schedule(total_max)
    _, _, k1 = sch.get_loops("B")
    sch.blockize(k1)  # B_o reduces over k0; B, inside, over k1 with vk0 bound to vk0_o
    (inner,) = sch.get_loops("B")
    # As in TVM, the init moved out to B_o: B only updates, so it has none to decompose.
    assert sch.get(sch.get_block("B")).init is None
    error = check_refused(sch, lambda: sch.decompose_reduction("B", inner), "has no init")
    assert error.rule == "reduction-block"
    error = check_refused(sch, lambda: sch.rfactor(inner, 0), "has no init")
    assert error.rule == "reduction-block"
    error = check_refused(sch, lambda: sch.cache_write("B", 0, "local"), "also writes buffer")
    assert error.rule == "single-writer"


@T.prim_func
def max_continued_inside(A: T.Buffer((7, 9), "float32"), B: T.Buffer((1,), "float32")):
    # As a user may write it: B_o reduces over k0 and B, with its own init, continues the
    # same reduction (vk0 bound to vk0_o) inside each instance of B_o.
    for i, k0 in T.grid(1, 7):
        with T.block("B_o"):
            vi_o, vk0_o = T.axis.remap("SR", [i, k0])
            for k1 in range(9):
                with T.block("B"):
                    vi = T.axis.spatial(1, vi_o)
                    vk0 = T.axis.reduce(7, vk0_o)
                    vk1 = T.axis.reduce(9, k1)
                    with T.init():
                        B[vi] = T.float32(-1e30)
                    B[vi] = T.max(B[vi], A[vk0, vk1])


def test_an_inner_block_continuing_an_outer_reduction_is_refused() -> None:
    sch = Schedule(max_continued_inside)
    (inner,) = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.decompose_reduction("B", inner), "bound to 'vk0_o'")
    assert error.rule == "reduction-scope"
    error = check_refused(sch, lambda: sch.rfactor(inner, 0), "bound to 'vk0_o'")
    assert error.rule == "reduction-scope"
