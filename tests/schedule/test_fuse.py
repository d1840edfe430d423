"""fuse: expected scripts for two and three loops, unit loops, fusing split loops, and every
rule it enforces."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def scale(A: T.Buffer((16, 8, 4), "float32"), B: T.Buffer((16, 8, 4), "float32")):
    for i, j, k in T.grid(16, 8, 4):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


@T.prim_func
def two_blocks(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for i in range(16):
        for j in range(8):
            with T.block("B0"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj]
        for j in range(8):
            with T.block("B1"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = B[vi, vj] + T.float32(1)


def _loops(func=scale, block="B"):
    sch = Schedule(func)
    return sch, sch.get_loops(sch.get_block(block))


def test_fuse_two_loops() -> None:
    @T.prim_func
    def expected(A: T.Buffer((16, 8, 4), "float32"), B: T.Buffer((16, 8, 4), "float32")):
        for i_j_fused, k in T.grid(128, 4):
            with T.block("B"):
                vi = T.axis.spatial(16, i_j_fused // 8)
                vj = T.axis.spatial(8, i_j_fused % 8)
                vk = T.axis.spatial(4, k)
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)

    sch, (i, j, _) = _loops()
    fused = sch.fuse(i, j)
    check_schedule(sch, scale, expected)
    assert sch.get(fused).loop_var.name == "i_j_fused"


def test_fuse_three_loops() -> None:
    @T.prim_func
    def expected(A: T.Buffer((16, 8, 4), "float32"), B: T.Buffer((16, 8, 4), "float32")):
        for i_j_k_fused in range(512):
            with T.block("B"):
                vi = T.axis.spatial(16, i_j_k_fused // 32)
                vj = T.axis.spatial(8, i_j_k_fused % 32 // 4)
                vk = T.axis.spatial(4, i_j_k_fused % 4)
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)

    sch, loops = _loops()
    sch.fuse(*loops)
    check_schedule(sch, scale, expected)


def test_fuse_then_split_is_the_notebooks_cooperative_fetch_shape() -> None:
    @T.prim_func
    def expected(A: T.Buffer((16, 8, 4), "float32"), B: T.Buffer((16, 8, 4), "float32")):
        for i_j_fused_0, i_j_fused_1, i_j_fused_2, k in T.grid(2, 16, 4, 4):
            with T.block("B"):
                vi = T.axis.spatial(16, (i_j_fused_0 * 64 + i_j_fused_1 * 4 + i_j_fused_2) // 8)
                vj = T.axis.spatial(8, (i_j_fused_0 * 64 + i_j_fused_1 * 4 + i_j_fused_2) % 8)
                vk = T.axis.spatial(4, k)
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)

    sch, (i, j, _) = _loops()
    fused = sch.fuse(i, j)
    sch.split(fused, [None, 16, 4])
    check_schedule(sch, scale, expected)


def test_fusing_split_loops_back_gives_the_original_binding() -> None:
    @T.prim_func
    def expected(A: T.Buffer((16, 8, 4), "float32"), B: T.Buffer((16, 8, 4), "float32")):
        for i_0_i_1_fused, j, k in T.grid(16, 8, 4):
            with T.block("B"):
                vi = T.axis.spatial(16, i_0_i_1_fused)
                vj, vk = T.axis.remap("SS", [j, k])
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)

    sch, (i, _, _) = _loops()
    i0, i1 = sch.split(i, [None, 4])
    sch.fuse(i0, i1)
    check_schedule(sch, scale, expected)


def test_unit_loops_are_kept_or_dropped() -> None:
    @T.prim_func
    def unit(A: T.Buffer((8,), "float32")):
        for i, j in T.grid(1, 8):
            with T.block("A"):
                vi = T.axis.spatial(1, i)
                vj = T.axis.spatial(8, j)
                A[vi * 8 + vj] = T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((8,), "float32")):
        for i_j_fused in range(8):
            with T.block("A"):
                vi = T.axis.spatial(1, 0)
                vj = T.axis.spatial(8, i_j_fused)
                A[vi * 8 + vj] = T.float32(1)

    for preserve in (True, False):
        sch, (i, j) = _loops(unit, "A")
        sch.fuse(i, j, preserve_unit_iters=preserve)
        check_schedule(sch, unit, expected)


def test_fuse_accepts_a_list() -> None:
    sch, (i, j, _) = _loops()
    fused = sch.fuse([i, j])
    assert sch.get(fused).extent.value == 128


# ---- rules ---------------------------------------------------------------------------------


def test_fuse_refuses_loops_that_are_not_adjacent() -> None:
    sch, (i, _, k) = _loops()
    error = check_refused(sch, lambda: sch.fuse(i, k), "loop 'j' lies between them")
    assert error.rule == "consecutive-loops"
    assert "rule consecutive-loops" in str(error)


def test_fuse_refuses_loops_in_the_wrong_order() -> None:
    sch, (i, j, _) = _loops()
    error = check_refused(sch, lambda: sch.fuse(j, i), "loop 'i' is not directly inside loop 'j'")
    assert error.rule == "consecutive-loops"


def test_fuse_refuses_a_loop_with_two_children() -> None:
    sch = Schedule(two_blocks)
    (i, j) = sch.get_loops(sch.get_block("B0"))
    before = sch.mod
    error = check_refused(sch, lambda: sch.fuse(i, j), "a SeqStmt lies between them")
    assert error.rule == "loop-chain"
    assert "for i in range(16):  # <-- here" in str(error)
    assert sch.mod is before


def test_fuse_refuses_sibling_loops() -> None:
    sch = Schedule(two_blocks)
    (_, j0) = sch.get_loops(sch.get_block("B0"))
    (_, j1) = sch.get_loops(sch.get_block("B1"))
    error = check_refused(sch, lambda: sch.fuse(j0, j1), "is not directly inside loop 'j'")
    assert error.rule == "consecutive-loops"


def test_fuse_refuses_a_loop_given_twice() -> None:
    sch, (i, _, _) = _loops()
    error = check_refused(sch, lambda: sch.fuse(i, i), "loop 'i' is given twice")
    assert error.rule == "distinct-loops"


def test_fuse_refuses_an_inner_extent_that_depends_on_the_outer_loop() -> None:
    @T.prim_func
    def triangle(A: T.Buffer((8, 8), "float32")):
        for i in range(8):
            for j in range(i + 1):
                with T.block("A"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    A[vi, vj] = T.float32(1)

    sch, (i, j) = _loops(triangle, "A")
    error = check_refused(sch, lambda: sch.fuse(i, j), "range of loop 'j' depends on an outer loop")
    assert error.rule == "independent-extents"


def test_fuse_refuses_thread_bound_loops() -> None:
    sch, (i, j, _) = _loops()
    sch.bind(j, "threadIdx.x")
    error = check_refused(sch, lambda: sch.fuse(i, j), r"loop 'j' is bound to threadIdx\.x")
    assert error.rule == "plain-loop"
    assert len(sch.trace) == 3  # get_block, get_loops, bind: the refused fuse is not recorded


def test_fuse_needs_a_loop() -> None:
    sch = Schedule(scale)
    check_refused(sch, lambda: sch.fuse(), "fuse needs at least one loop")
