"""rfactor and decompose_reduction as TVM has them: the refusals TVM makes, the nests it
accepts (unit and driver-less loops, sibling blocks), and its output form (the rf iterator
first, no init in an all-spatial rf block, annotations, int64)."""

# ruff: noqa: B007 - fixtures keep loops that drive no iterator: they are what is tested

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.script import tir as T
from tilewright.tir import Schedule

# ---- refusals TVM makes ----------------------------------------------------------------------


@T.prim_func
def sum_not_stage_pipeline(
    A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"), D: T.Buffer((16, 16), "float32")
):
    C = T.alloc_buffer((16, 16))
    for i, j, k in T.grid(8, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(16, 16):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = C[vi, vj]


def test_rfactor_refuses_a_scope_that_is_not_a_stage_pipeline() -> None:
    sch = Schedule(sum_not_stage_pipeline)
    _, _, k = sch.get_loops("C")
    error = check_refused(sch, lambda: sch.rfactor(k, 0), "block 'D' reads 'C' beyond")
    assert error.rule == "stage-pipeline"


@T.prim_func
def sum_not_quasi_affine(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 4):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            vk = T.axis.reduce(8, k * k // 2)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def test_rfactor_refuses_a_binding_that_is_not_quasi_affine() -> None:
    sch = Schedule(sum_not_quasi_affine)
    _, k = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(k, 0), "not quasi-affine")
    assert error.rule == "affine-binding"


@T.prim_func
def sum_at_reduction_index(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi, vk] = T.float32(0)
            B[vi, vk] = B[vi, vk] + A[vi, vk]


def test_rfactor_refuses_a_store_at_a_reduction_iterator() -> None:
    sch = Schedule(sum_at_reduction_index)
    _, k = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(k, 0), "uses its reduction iterator 'vk'")
    assert error.rule == "reduction-index"


@T.prim_func
def sum_after_a_writer(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B0"):
            vi = T.axis.spatial(8, i)
            B[vi] = T.float32(0)
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def test_rfactor_refuses_a_block_that_is_not_the_only_writer() -> None:
    sch = Schedule(sum_after_a_writer)
    _, k = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(k, 0), "'B0' also writes buffer 'B'")
    assert error.rule == "single-writer"


@T.prim_func
def sum_parallel_reduction(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        for k in T.parallel(8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]


def test_rfactor_refuses_a_loop_that_is_not_serial() -> None:
    sch = Schedule(sum_parallel_reduction)
    _, k = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(k, 0), "loop 'k' is parallel, not serial")
    assert error.rule == "serial-loop"
    assert "TVM: The input loop of rfactor is required to be `kSerial`" in str(error)


@T.prim_func
def matmul_transposed_update(
    A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")
):
    for i, j, k in T.grid(8, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vj, vi] = C[vj, vi] + A[vi, vk] * B[vk, vj]


def test_rfactor_refuses_an_init_at_other_indices_than_the_update() -> None:
    sch = Schedule(matmul_transposed_update)
    _, _, k = sch.get_loops("C")
    error = check_refused(sch, lambda: sch.rfactor(k, 0), "stores C\\[vi, vj\\], the update C")
    assert error.rule == "init-update"


@T.prim_func
def sum_from_one(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(1)
            B[vi] = B[vi] + A[vi, vk]


def test_rfactor_refuses_a_sum_whose_init_is_not_zero() -> None:
    sch = Schedule(sum_from_one)
    _, k = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(k, 0), "not the identity of its sum")
    assert error.rule == "reducer-identity"


@T.prim_func
def sum_split_unevenly(A: T.Buffer((8, 10), "float32"), B: T.Buffer((8,), "float32")):
    for i, k_0, k_1 in T.grid(8, 3, 4):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            vk = T.axis.reduce(10, k_0 * 4 + k_1)
            T.where(k_0 * 4 + k_1 < 10)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def test_rfactor_refuses_a_block_with_a_predicate() -> None:
    sch = Schedule(sum_split_unevenly)
    _, k_0, _ = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(k_0, 0), "has the predicate")
    assert error.rule == "predicate"


@T.prim_func
def sum_with_free_loop_inside(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i, k, x in T.grid(8, 8, 2):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def test_rfactor_refuses_a_free_loop_under_a_reduction_loop() -> None:
    sch = Schedule(sum_with_free_loop_inside)
    _, k, _ = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(k, 0), "loop 'x' drives no iterator")
    assert error.rule == "unbound-loop"


# ---- nests TVM accepts -----------------------------------------------------------------------


@T.prim_func
def square_sum_fused(A: T.Buffer((4, 6, 6), "float32"), C: T.Buffer((4,), "float32")):
    for b0, f_o, f_i in T.grid(4, 36, 1):
        with T.block("C"):
            b = T.axis.spatial(4, b0)
            i = T.axis.reduce(6, f_o // 6)
            j = T.axis.reduce(6, f_o % 6)
            with T.init():
                C[b] = T.float32(0)
            C[b] = C[b] + A[b, i, j] * A[b, i, j]


@T.prim_func
def square_sum_fused_rfactor(A: T.Buffer((4, 6, 6), "float32"), C: T.Buffer((4,), "float32")):
    C_rf = T.alloc_buffer((1, 4))
    for b0, f_o, f_i in T.grid(4, 36, 1):
        with T.block("C_rf"):
            vf_i = T.axis.spatial(1, f_i)
            b = T.axis.spatial(4, b0)
            i = T.axis.reduce(6, f_o // 6)
            j = T.axis.reduce(6, f_o % 6)
            with T.init():
                C_rf[vf_i, b] = T.float32(0)
            C_rf[vf_i, b] = C_rf[vf_i, b] + A[b, i, j] * A[b, i, j]
    for b0, f_i in T.grid(4, 1):
        with T.block("C"):
            vf_i, b = T.axis.remap("RS", [f_i, b0])
            with T.init():
                C[b] = T.float32(0)
            C[b] = C[b] + C_rf[vf_i, b]


def test_rfactor_of_a_unit_loop_that_drives_nothing() -> None:
    sch = Schedule(square_sum_fused)
    _, _, f_i = sch.get_loops("C")
    sch.rfactor(f_i, 0)
    check_schedule(sch, square_sum_fused, square_sum_fused_rfactor)


@T.prim_func
def max_repeated(A: T.Buffer((4, 6), "float32"), B: T.Buffer((4,), "float32")):
    for x, i, k in T.grid(3, 4, 6):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(-1e30)
            B[vi] = T.max(B[vi], A[vi, vk])


@T.prim_func
def max_repeated_rfactor(A: T.Buffer((4, 6), "float32"), B: T.Buffer((4,), "float32")):
    B_rf = T.alloc_buffer((4, 3))
    for x, i, k in T.grid(3, 4, 6):
        with T.block("B_rf"):
            vx, vi, vk = T.axis.remap("SSR", [x, i, k])
            with T.init():
                B_rf[vi, vx] = T.float32(-1e30)
            B_rf[vi, vx] = T.max(B_rf[vi, vx], A[vi, vk])
    for x, i in T.grid(3, 4):
        with T.block("B"):
            vx, vi = T.axis.remap("RS", [x, i])
            with T.init():
                B[vi] = T.float32(-1e30)
            B[vi] = T.max(B[vi], B_rf[vi, vx])


def test_rfactor_of_a_loop_that_drives_nothing_in_a_max() -> None:
    sch = Schedule(max_repeated)
    x, _, _ = sch.get_loops("B")
    sch.rfactor(x, 1)
    check_schedule(sch, max_repeated, max_repeated_rfactor)


@T.prim_func
def sum_repeated(A: T.Buffer((4, 6), "float32"), B: T.Buffer((4,), "float32")):
    for x, i, k in T.grid(3, 4, 6):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def test_rfactor_of_a_loop_that_drives_nothing_in_a_sum_is_refused() -> None:
    # TVM accepts it and sums the three repetitions (differs: the result would triple).
    sch = Schedule(sum_repeated)
    x, _, _ = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(x, 0), "combine 3 times")
    assert error.rule == "rfactor-loop"


@T.prim_func
def sum_then_sibling(
    A: T.Buffer((4, 4, 8), "float32"), D: T.Buffer((4, 4), "float32"), E: T.Buffer((4,), "float32")
):
    C = T.alloc_buffer((4, 4))
    for i in range(4):
        for j in range(4):
            for k_0, k_1 in T.grid(2, 4):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    vk = T.axis.reduce(8, k_0 * 4 + k_1)
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vj, vk]
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = C[vi, vj] * T.float32(2)
        for j in range(4):
            with T.block("E"):
                vi, vj = T.axis.remap("SR", [i, j])
                with T.init():
                    E[vi] = T.float32(0)
                E[vi] = E[vi] + D[vi, vj]


@T.prim_func
def sum_then_sibling_rfactor(
    A: T.Buffer((4, 4, 8), "float32"), D: T.Buffer((4, 4), "float32"), E: T.Buffer((4,), "float32")
):
    C = T.alloc_buffer((4, 4))
    C_rf = T.alloc_buffer((4, 4, 2))
    for i, j, k_0, k_1 in T.grid(4, 4, 2, 4):
        with T.block("C_rf"):
            vk_0, vi, vj, vk_1 = T.axis.remap("SSSR", [k_0, i, j, k_1])
            with T.init():
                C_rf[vi, vj, vk_0] = T.float32(0)
            C_rf[vi, vj, vk_0] = C_rf[vi, vj, vk_0] + A[vi, vj, vk_0 * 4 + vk_1]
    for i in range(4):
        for j in range(4):
            for k_0 in range(2):
                with T.block("C"):
                    vk_0, vi, vj = T.axis.remap("RSS", [k_0, i, j])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + C_rf[vi, vj, vk_0]
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = C[vi, vj] * T.float32(2)
        for j in range(4):
            with T.block("E"):
                vi, vj = T.axis.remap("SR", [i, j])
                with T.init():
                    E[vi] = T.float32(0)
                E[vi] = E[vi] + D[vi, vj]


def test_rfactor_in_a_nest_with_sibling_blocks() -> None:
    sch = Schedule(sum_then_sibling)
    _, _, k_0, _ = sch.get_loops("C")
    sch.rfactor(k_0, 2)
    check_schedule(sch, sum_then_sibling, sum_then_sibling_rfactor)


def test_rfactor_of_a_block_after_a_sibling_is_refused() -> None:
    sch = Schedule(sum_then_sibling)
    _, j = sch.get_loops("E")
    error = check_refused(sch, lambda: sch.rfactor(j, 0), "'E' is not the first block")
    assert error.rule == "rfactor-block"


@T.prim_func
def sum_beside_a_copy(
    A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32"), D: T.Buffer((4, 2), "float32")
):
    for i, k_0 in T.grid(4, 2):
        for k_1 in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                vk = T.axis.reduce(8, k_0 * 4 + k_1)
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, k_0])
            D[vi, vj] = A[vi, vj]


def test_rfactor_refuses_a_sibling_under_a_reduction_loop() -> None:
    sch = Schedule(sum_beside_a_copy)
    _, _, k_1 = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.rfactor(k_1, 0), "'k_0', the outermost .* 2 blocks")
    assert error.rule == "rfactor-block"


# ---- output form -----------------------------------------------------------------------------


@T.prim_func
def pool(A: T.Buffer((1, 8, 3, 3), "float32"), B: T.Buffer((1, 8, 1, 1), "float32")):
    for i0, i1, i2, i3, i4, i5 in T.grid(1, 8, 1, 1, 9, 1):
        with T.block("acc"):
            ax0 = T.axis.spatial(1, 0)
            ax1 = T.axis.spatial(8, i1)
            ax2 = T.axis.spatial(1, 0)
            ax3 = T.axis.spatial(1, 0)
            rv0 = T.axis.reduce(3, i4 // 3)
            rv1 = T.axis.reduce(3, i4 % 3)
            T.block_attr({"schedule_rule": "pool"})
            with T.init():
                B[ax0, ax1, ax2, ax3] = T.float32(0)
            B[ax0, ax1, ax2, ax3] = (
                B[ax0, ax1, ax2, ax3] + A[ax0, ax1, ax2 * 3 + rv0, ax3 * 3 + rv1]
            )


@T.prim_func
def pool_rfactor(A: T.Buffer((1, 8, 3, 3), "float32"), B: T.Buffer((1, 8, 1, 1), "float32")):
    B_rf = T.alloc_buffer((1, 8, 1, 1, 9))
    for i0, i1, i2, i3, i4, i5 in T.grid(1, 8, 1, 1, 9, 1):
        with T.block("acc_rf"):
            vi4 = T.axis.spatial(9, i4)
            ax0 = T.axis.spatial(1, 0)
            ax1 = T.axis.spatial(8, i1)
            ax2 = T.axis.spatial(1, 0)
            ax3 = T.axis.spatial(1, 0)
            T.block_attr({"schedule_rule": "pool"})
            B_rf[ax0, ax1, ax2, ax3, vi4] = A[ax0, ax1, ax2 * 3 + vi4 // 3, ax3 * 3 + vi4 % 3]
    for i0, i1, i2, i3, i4, i5 in T.grid(1, 8, 1, 1, 9, 1):
        with T.block("acc"):
            vi4 = T.axis.reduce(9, i4)
            ax0 = T.axis.spatial(1, 0)
            ax1 = T.axis.spatial(8, i1)
            ax2 = T.axis.spatial(1, 0)
            ax3 = T.axis.spatial(1, 0)
            T.block_attr({"schedule_rule": "pool"})
            with T.init():
                B[ax0, ax1, ax2, ax3] = T.float32(0)
            B[ax0, ax1, ax2, ax3] = B[ax0, ax1, ax2, ax3] + B_rf[ax0, ax1, ax2, ax3, vi4]


def test_rfactor_spatial_only_has_no_init_and_keeps_annotations() -> None:
    sch = Schedule(pool)
    loops = sch.get_loops("acc")
    sch.rfactor(loops[4], 4)
    check_schedule(sch, pool, pool_rfactor)


@T.prim_func
def row_sum_int64(
    A: T.Buffer((T.int64(4), T.int64(8)), "float32"), B: T.Buffer((T.int64(4),), "float32")
):
    for i, k_0, k_1 in T.grid(T.int64(4), T.int64(2), T.int64(4)):
        with T.block("B"):
            vi = T.axis.spatial(T.int64(4), i)
            vk = T.axis.reduce(T.int64(8), k_0 * T.int64(4) + k_1)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def row_sum_int64_rfactor(
    A: T.Buffer((T.int64(4), T.int64(8)), "float32"), B: T.Buffer((T.int64(4),), "float32")
):
    B_rf = T.alloc_buffer((T.int64(4), T.int64(4)))
    for i, k_0, k_1 in T.grid(T.int64(4), T.int64(2), T.int64(4)):
        with T.block("B_rf"):
            vk_1 = T.axis.spatial(T.int64(4), k_1)
            vi = T.axis.spatial(T.int64(4), i)
            vk_0 = T.axis.reduce(T.int64(2), k_0)
            with T.init():
                B_rf[vk_1, vi] = T.float32(0)
            B_rf[vk_1, vi] = B_rf[vk_1, vi] + A[vi, vk_0 * T.int64(4) + vk_1]
    for i, k_1 in T.grid(T.int64(4), T.int64(4)):
        with T.block("B"):
            vk_1 = T.axis.reduce(T.int64(4), k_1)
            vi = T.axis.spatial(T.int64(4), i)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + B_rf[vk_1, vi]


def test_rfactor_keeps_int64_loops_and_iterators() -> None:
    sch = Schedule(row_sum_int64)
    _, _, k_1 = sch.get_loops("B")
    sch.rfactor(k_1, 0)
    check_schedule(sch, row_sum_int64, row_sum_int64_rfactor)
    rf = sch.get(sch.get_block("B_rf"))
    assert {str(iv.var.dtype) for iv in rf.iter_vars} == {"int64"}  # type: ignore[union-attr]


@T.prim_func
def annotated_sum(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        for x in range(1):
            for k in T.serial(8, annotations={"pragma_unroll": 1}):
                with T.block("B"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    T.block_attr({"note": 1})
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def annotated_sum_decomposed(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i_init in range(4):
        with T.block("B_init"):
            vi = T.axis.spatial(4, i_init)
            T.block_attr({"note": 1})
            B[vi] = T.float32(0)
    for i in range(4):
        for x in range(1):
            for k in T.serial(8, annotations={"pragma_unroll": 1}):
                with T.block("B_update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    T.block_attr({"note": 1})
                    B[vi] = B[vi] + A[vi, vk]


def test_decompose_reduction_as_tvm_prints_it() -> None:
    # The init block keeps the annotations; only loops its bindings use are copied (not x).
    sch = Schedule(annotated_sum)
    i, _, _ = sch.get_loops("B")
    init = sch.decompose_reduction("B", i)
    assert sch.get(init).name == "B_init"  # type: ignore[union-attr]
    check_schedule(sch, annotated_sum, annotated_sum_decomposed)


@T.prim_func
def row_sum_fused(A: T.Buffer((6, 10), "float32"), B: T.Buffer((6,), "float32")):
    for f in range(60):
        with T.block("B"):
            vi = T.axis.spatial(6, f // 10)
            vk = T.axis.reduce(10, f % 10)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def row_sum_fused_decomposed(A: T.Buffer((6, 10), "float32"), B: T.Buffer((6,), "float32")):
    for f_init in range(60):
        with T.block("B_init"):
            vi = T.axis.spatial(6, f_init // 10)
            B[vi] = T.float32(0)
    for f in range(60):
        with T.block("B_update"):
            vi = T.axis.spatial(6, f // 10)
            vk = T.axis.reduce(10, f % 10)
            B[vi] = B[vi] + A[vi, vk]


def test_decompose_reduction_at_a_loop_driving_both_kinds() -> None:
    # As TVM: the init nest copies the fused loop and ends before the first update.
    sch = Schedule(row_sum_fused)
    (f,) = sch.get_loops("B")
    sch.decompose_reduction("B", f)
    check_schedule(sch, row_sum_fused, row_sum_fused_decomposed)
