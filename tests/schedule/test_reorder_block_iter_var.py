"""reorder_block_iter_var: expected scripts, argument forms TVM accepts, and its rule."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.ir import IntImm
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def matmul(
    A: T.Buffer((8, 6), "float32"), B: T.Buffer((4, 6), "float32"), C: T.Buffer((8, 4), "float32")
):
    for i, j, k in T.grid(8, 4, 6):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]


@T.prim_func
def matmul_kji(
    A: T.Buffer((8, 6), "float32"), B: T.Buffer((4, 6), "float32"), C: T.Buffer((8, 4), "float32")
):
    for i, j, k in T.grid(8, 4, 6):
        with T.block("C"):
            vk, vj, vi = T.axis.remap("RSS", [k, j, i])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]


def test_reverse_the_iterators() -> None:
    sch = Schedule(matmul)
    sch.reorder_block_iter_var(sch.get_block("C"), [2, 1, 0])
    check_schedule(sch, matmul, matmul_kji)
    assert sch.trace.as_python()[-1] == (
        "sch.reorder_block_iter_var(block=b0, new_order=[2, 1, 0])"
    )


def test_block_name_and_int_imms_as_tvm_accepts() -> None:
    sch = Schedule(matmul)
    sch.reorder_block_iter_var("C", (IntImm(2, "int32"), 1, 0))
    check_schedule(sch, matmul, matmul_kji)


def test_split_bindings_move_with_their_iterators() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((8, 6), "float32"),
        B: T.Buffer((4, 6), "float32"),
        C: T.Buffer((8, 4), "float32"),
    ):
        for i_0, i_1, j, k in T.grid(2, 4, 4, 6):
            with T.block("C"):
                vj = T.axis.spatial(4, j)
                vk = T.axis.reduce(6, k)
                vi = T.axis.spatial(8, i_0 * 4 + i_1)
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, _, _ = sch.get_loops(block)
    sch.split(i, [2, 4])
    sch.reorder_block_iter_var(block, [1, 2, 0])
    check_schedule(sch, matmul, expected)
    # the reference still names the block, and later primitives see the new order
    assert [iv.var.name for iv in sch.get(block).iter_vars] == ["vj", "vk", "vi"]


def test_identity_order_keeps_the_function() -> None:
    sch = Schedule(matmul)
    sch.reorder_block_iter_var("C", [0, 1, 2])
    check_schedule(sch, matmul, matmul)


# ---- rules ---------------------------------------------------------------------------------


def test_refuses_an_order_that_is_not_a_permutation() -> None:
    sch = Schedule(matmul)
    block = sch.get_block("C")
    for order in ([0, 0, 1], [0, 1], [0, 1, 3], [-1, 0, 1]):
        error = check_refused(
            sch,
            lambda order=order: sch.reorder_block_iter_var(block, order),
            r"is not a permutation of \[0, \.\.\., 2\] for the 3 iterators of block 'C'",
        )
        assert error.rule == "iter-permutation"
        assert 'with T.block("C"):  # <-- here' in str(error)


def test_refuses_arguments_of_the_wrong_type() -> None:
    sch = Schedule(matmul)
    block = sch.get_block("C")
    error = check_refused(sch, lambda: sch.reorder_block_iter_var(block, 2), "is not a list")
    assert error.rule == "argument"
    error = check_refused(
        sch, lambda: sch.reorder_block_iter_var(block, [0, 1.5, 2]), "index 1.5 is not an integer"
    )
    assert error.rule == "argument"


def test_refuses_the_root_block() -> None:
    sch = Schedule(matmul)
    error = check_refused(
        sch, lambda: sch.reorder_block_iter_var("root", []), "is the function's root block"
    )
    assert error.rule == "root-block"
