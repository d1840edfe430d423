"""reorder: expected scripts, loops not given keep their places, and every rule it enforces."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def matmul(
    A: T.Buffer((8, 6), "float32"), B: T.Buffer((6, 4), "float32"), C: T.Buffer((8, 4), "float32")
):
    for i, j, k in T.grid(8, 4, 6):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def _loops(func=matmul, block="C"):
    sch = Schedule(func)
    return sch, sch.get_loops(sch.get_block(block))


def test_reorder_all_loops() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((8, 6), "float32"),
        B: T.Buffer((6, 4), "float32"),
        C: T.Buffer((8, 4), "float32"),
    ):
        for k, i, j in T.grid(6, 8, 4):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    sch, (i, j, k) = _loops()
    sch.reorder(k, i, j)
    check_schedule(sch, matmul, expected)


def test_loops_not_given_keep_their_places() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((8, 6), "float32"),
        B: T.Buffer((6, 4), "float32"),
        C: T.Buffer((8, 4), "float32"),
    ):
        for k, j, i in T.grid(6, 4, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    sch, (i, _, k) = _loops()
    sch.reorder(k, i)
    check_schedule(sch, matmul, expected)


def test_reorder_of_split_loops_as_in_tiling() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((8, 6), "float32"),
        B: T.Buffer((6, 4), "float32"),
        C: T.Buffer((8, 4), "float32"),
    ):
        for i_0, j_0, k, i_1, j_1 in T.grid(4, 2, 6, 2, 2):
            with T.block("C"):
                vi = T.axis.spatial(8, i_0 * 2 + i_1)
                vj = T.axis.spatial(4, j_0 * 2 + j_1)
                vk = T.axis.reduce(6, k)
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    sch, (i, j, k) = _loops()
    i0, i1 = sch.split(i, [None, 2])
    j0, j1 = sch.split(j, [None, 2])
    sch.reorder(i0, j0, k, i1, j1)
    check_schedule(sch, matmul, expected)


def test_reorder_keeps_loop_kinds_and_references() -> None:
    sch, (i, _, k) = _loops()
    sch.unroll(k)
    sch.reorder(k, i)
    assert [sch.get(r).loop_var.name for r in sch.get_loops(sch.get_block("C"))] == ["k", "j", "i"]
    assert sch.get(k).kind.script_name == "unroll"
    check_schedule(sch, matmul)


# ---- rules ---------------------------------------------------------------------------------


@T.prim_func
def two_nests(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
    for i in range(4):
        for j in range(4):
            with T.block("A"):
                vi, vj = T.axis.remap("SS", [i, j])
                A[vi, vj] = T.float32(1)
        for j in range(4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj]


def test_reorder_refuses_loops_across_a_branch() -> None:
    sch, (i, j) = _loops(two_nests, "A")
    before = sch.mod
    error = check_refused(sch, lambda: sch.reorder(j, i), "loop 'i' holds a SeqStmt")
    assert error.rule == "loop-chain"
    assert "for i in range(4):  # <-- here" in str(error)
    assert sch.mod is before


def test_reorder_refuses_loops_of_different_nests() -> None:
    sch = Schedule(two_nests)
    (_, ja) = sch.get_loops(sch.get_block("A"))
    (_, jb) = sch.get_loops(sch.get_block("B"))
    error = check_refused(sch, lambda: sch.reorder(jb, ja), "are not nested one inside the other")
    assert error.rule == "loop-chain"


def test_reorder_refuses_a_loop_given_twice() -> None:
    sch, (i, j, _) = _loops()
    error = check_refused(sch, lambda: sch.reorder(i, j, i), "loop 'i' is given twice")
    assert error.rule == "distinct-loops"


def test_reorder_refuses_an_extent_that_would_depend_on_an_inner_loop() -> None:
    @T.prim_func
    def triangle(A: T.Buffer((8, 8), "float32")):
        for i in range(8):
            for j in range(i + 1):
                with T.block("A"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    A[vi, vj] = T.float32(1)

    sch, (i, j) = _loops(triangle, "A")
    error = check_refused(
        sch, lambda: sch.reorder(j, i), "range of loop 'j' would depend on a loop"
    )
    assert error.rule == "independent-extents"


def test_reorder_refuses_a_block_with_an_opaque_iterator() -> None:
    @T.prim_func
    def opaque(A: T.Buffer((4, 4), "float32")):
        for i, j in T.grid(4, 4):
            with T.block("A"):
                vi = T.axis.opaque(4, i)
                vj = T.axis.spatial(4, j)
                A[vi, vj] = T.float32(1)

    sch, (i, j) = _loops(opaque, "A")
    error = check_refused(sch, lambda: sch.reorder(j, i), "block 'A' has the opaque iterator 'vi'")
    assert error.rule == "block-iter-kind"
    assert 'with T.block("A"):  # <-- here' in str(error)


def test_reorder_refuses_a_block_whose_binding_is_not_affine() -> None:
    @T.prim_func
    def square(A: T.Buffer((16, 4), "float32")):
        for i, j in T.grid(4, 4):
            with T.block("A"):
                vi = T.axis.spatial(16, i * i)
                vj = T.axis.spatial(4, j)
                A[vi, vj] = T.float32(1)

    sch, (i, j) = _loops(square, "A")
    error = check_refused(sch, lambda: sch.reorder(j, i), "a product of two loop iterators")
    assert error.rule == "affine-binding"


def test_reorder_refuses_a_binding_that_sums_loops_without_fusing_them() -> None:
    # vi = i + j takes i and j at the same scale: no single fused iterator of (i, j), so TVM
    # calls the binding not affine; i * 4 + j (a fused index) is accepted.
    @T.prim_func
    def diagonal(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
        for i, j in T.grid(4, 4):
            with T.block("B"):
                vi = T.axis.spatial(8, i + j)
                vj = T.axis.spatial(4, j)
                B[vi, vj] = A[vi, vj] + T.float32(1)

    sch, (i, j) = _loops(diagonal, "B")
    error = check_refused(
        sch, lambda: sch.reorder(j, i), r"i \+ j: the terms i \+ j do not tile one iteration"
    )
    assert error.rule == "affine-binding"

    @T.prim_func
    def fused(A: T.Buffer((16, 4), "float32"), B: T.Buffer((16, 4), "float32")):
        for i, j in T.grid(4, 4):
            with T.block("B"):
                vi = T.axis.spatial(16, i * 4 + j)
                vj = T.axis.spatial(4, j)
                B[vi, vj] = A[vi, vj] + T.float32(1)

    @T.prim_func
    def fused_swapped(A: T.Buffer((16, 4), "float32"), B: T.Buffer((16, 4), "float32")):
        for j, i in T.grid(4, 4):
            with T.block("B"):
                vi = T.axis.spatial(16, i * 4 + j)
                vj = T.axis.spatial(4, j)
                B[vi, vj] = A[vi, vj] + T.float32(1)

    sch, (i, j) = _loops(fused, "B")
    sch.reorder(j, i)
    check_schedule(sch, fused, fused_swapped)


def test_reorder_refuses_to_swap_pieces_of_a_fused_spatial_and_reduction_loop() -> None:
    # vi and vk both depend on the two pieces; swapping them would visit vk > 0 before
    # vk == 0 for some output, where the init has to run first.
    sch, (i, _, k) = _loops()
    sch.reorder(i, k)
    _, j, k = sch.get_loops(sch.get_block("C"))
    fused = sch.fuse(j, k)
    hi, lo = sch.split(fused, [None, 5])
    error = check_refused(
        sch, lambda: sch.reorder(lo, hi), "swapping them would run updates before"
    )
    assert error.rule == "reduction-order"
    check_schedule(sch, matmul)
