"""split: expected scripts, predicates for non-divisible extents, unit iterators, and every
rule it enforces."""

from __future__ import annotations

import pytest
from schedule_checks import check_refused, check_schedule
from schedule_corpus import square_matmul

from tilewright.ir import For, ForKind, IntImm
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def add_one(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for i in range(128):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            B[vi] = A[vi] + T.float32(1)


@T.prim_func
def add_one_odd(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
    for i in range(100):
        with T.block("B"):
            vi = T.axis.spatial(100, i)
            B[vi] = A[vi] + T.float32(1)


def test_split_in_two_with_inferred_outer_factor() -> None:
    @T.prim_func
    def expected(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for i_0, i_1 in T.grid(4, 32):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 32 + i_1)
                B[vi] = A[vi] + T.float32(1)

    sch = Schedule(add_one)
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, [None, 32])
    check_schedule(sch, add_one, expected)
    assert [sch.get(r).extent.value for r in (i0, i1)] == [4, 32]
    assert [sch.get(r).loop_var.name for r in (i0, i1)] == ["i_0", "i_1"]


def test_split_in_three_with_inferred_middle_factor() -> None:
    @T.prim_func
    def expected(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for i_0, i_1, i_2 in T.grid(2, 16, 4):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 64 + i_1 * 4 + i_2)
                B[vi] = A[vi] + T.float32(1)

    sch = Schedule(add_one)
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, [2, None, 4])
    check_schedule(sch, add_one, expected)


def test_non_divisible_split_adds_a_predicate() -> None:
    @T.prim_func
    def expected(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
        for i_0, i_1 in T.grid(4, 32):
            with T.block("B"):
                vi = T.axis.spatial(100, i_0 * 32 + i_1)
                T.where(i_0 * 32 + i_1 < 100)
                B[vi] = A[vi] + T.float32(1)

    sch = Schedule(add_one_odd)
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, [None, 32])
    check_schedule(sch, add_one_odd, expected)


def test_splitting_a_predicated_loop_again_combines_the_predicates() -> None:
    @T.prim_func
    def expected(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
        for i_0, i_1_0, i_1_1 in T.grid(4, 11, 3):
            with T.block("B"):
                vi = T.axis.spatial(100, i_0 * 32 + (i_1_0 * 3 + i_1_1))
                T.where(i_0 * 32 + (i_1_0 * 3 + i_1_1) < 100 and i_1_0 * 3 + i_1_1 < 32)
                B[vi] = A[vi] + T.float32(1)

    sch = Schedule(add_one_odd)
    (i,) = sch.get_loops(sch.get_block("B"))
    _, i1 = sch.split(i, [None, 32])
    sch.split(i1, [None, 3])
    check_schedule(sch, add_one_odd, expected)


def test_disable_predication_leaves_the_predicate_out() -> None:
    sch = Schedule(add_one)
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, [3, 43], disable_predication=True)
    realize = sch.mod["main"].body.block.body.body.body
    assert isinstance(realize.predicate, IntImm) and realize.predicate.value == 1


def test_unit_factor_is_kept_or_dropped_from_the_binding() -> None:
    @T.prim_func
    def kept(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for i_0, i_1 in T.grid(1, 128):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 128 + i_1)
                B[vi] = A[vi] + T.float32(1)

    @T.prim_func
    def dropped(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for _i_0, i_1 in T.grid(1, 128):
            with T.block("B"):
                vi = T.axis.spatial(128, i_1)
                B[vi] = A[vi] + T.float32(1)

    for preserve, expected in ((True, kept), (False, dropped)):
        sch = Schedule(add_one)
        (i,) = sch.get_loops(sch.get_block("B"))
        sch.split(i, [1, None], preserve_unit_iters=preserve)
        check_schedule(sch, add_one, expected)


def test_split_of_a_reduction_loop_keeps_its_kind_in_the_binding() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((16, 16), "float32"),
        B: T.Buffer((16, 16), "float32"),
        C: T.Buffer((16, 16), "float32"),
    ):
        for i, j, k_0, k_1 in T.grid(16, 16, 4, 4):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                vk = T.axis.reduce(16, k_0 * 4 + k_1)
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    sch = Schedule(square_matmul)
    _, _, k = sch.get_loops(sch.get_block("C"))
    sch.split(k, [None, 4])
    check_schedule(sch, square_matmul, expected)


def test_split_of_a_loop_used_inside_an_expression_binding() -> None:
    @T.prim_func
    def strided(A: T.Buffer((64,), "float32"), B: T.Buffer((32,), "float32")):
        for i in range(32):
            with T.block("B"):
                vi = T.axis.spatial(32, i)
                B[vi] = A[vi * 2]

    sch = Schedule(strided)
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, [None, 8])
    check_schedule(sch, strided)
    assert "vi = T.axis.spatial(32, i_0 * 8 + i_1)" in sch.mod.script()


def test_split_keeps_other_references_valid() -> None:
    sch = Schedule(square_matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    sch.split(j, [None, 4])
    assert sch.get(i).loop_var.name == "i"
    assert sch.get(k).loop_var.name == "k"
    assert sch.get(block).name == "C"
    assert [sch.get(r).loop_var.name for r in sch.get_loops(block)] == ["i", "j_0", "j_1", "k"]


# ---- rules ---------------------------------------------------------------------------------


def _loop(func=add_one):
    sch = Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    return sch, i


@pytest.mark.parametrize(
    ("factors", "message"),
    [
        ([None, None], "at most one factor may be None"),
        ([0, None], "factor 0 is not positive"),
        ([-4, 32], "factor -4 is not positive"),
        ([4, 16], r"multiply to 64, less than the extent 128"),
        ([2.5, None], "factor 2.5 is not an integer"),
        (["4", None], "factor '4' is not an integer"),
        ([], "no factors given"),
    ],
)
def test_bad_factors_are_refused(factors: list, message: str) -> None:
    sch, i = _loop()
    before = sch.mod
    error = check_refused(sch, lambda: sch.split(i, factors), message)
    assert error.rule == "split-factors"
    assert "rule split-factors" in str(error)
    assert sch.mod is before
    assert [inst.kind for inst in sch.trace] == ["get_block", "get_loops"]


def test_split_refuses_a_thread_bound_loop_and_marks_it() -> None:
    sch, i = _loop()
    sch.bind(i, "threadIdx.x")
    error = check_refused(
        sch, lambda: sch.split(i, [None, 4]), r"loop 'i' is bound to threadIdx\.x"
    )
    assert error.rule == "plain-loop"
    assert 'for i in T.thread_binding(128, thread="threadIdx.x"):  # <-- here' in str(error)


def test_split_refuses_an_annotated_loop() -> None:
    sch, i = _loop()
    sch.annotate(i, "pragma", 1)
    error = check_refused(sch, lambda: sch.split(i, [None, 4]), "loop 'i' has annotations")
    assert error.rule == "plain-loop"


def test_split_refuses_a_loop_not_starting_at_zero() -> None:
    @T.prim_func
    def offset(A: T.Buffer((128,), "float32")):
        for i in T.serial(4, 128):
            with T.block("B"):
                vi = T.axis.spatial(128, i)
                A[vi] = T.float32(0)

    sch, i = _loop(offset)
    error = check_refused(sch, lambda: sch.split(i, [None, 4]), "loop 'i' starts at 4, not 0")
    assert error.rule == "loop-from-zero"


def test_a_split_loop_reference_is_stale() -> None:
    sch, i = _loop()
    sch.split(i, [None, 4])
    error = check_refused(sch, lambda: sch.split(i, [None, 2]), "loop 'i' no longer exists")
    assert error.rule == "stale-reference"


def test_split_needs_a_loop_reference() -> None:
    sch = Schedule(add_one)
    block = sch.get_block("B")
    check_refused(sch, lambda: sch.split(block, [None, 4]), "expected a LoopRV")  # type: ignore[arg-type]


def test_new_loops_are_serial() -> None:
    sch, i = _loop()
    sch.unroll(i)
    i0, i1 = sch.split(i, [None, 4])
    assert all(isinstance(sch.get(r), For) and sch.get(r).kind is ForKind.SERIAL for r in (i0, i1))


def test_symbolic_extent_split_and_parallel() -> None:
    @T.prim_func
    def sym(a: T.handle, b: T.handle, n: T.int32):
        A = T.match_buffer(a, (8, n))
        B = T.match_buffer(b, (8, n))
        for i, j in T.grid(8, n):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)

    @T.prim_func
    def expected(a: T.handle, b: T.handle, n: T.int32):
        A = T.match_buffer(a, (8, n))
        B = T.match_buffer(b, (8, n))
        for i in range(8):
            for j_0 in T.parallel((n + 9) // 10):
                for j_1 in range(10):
                    with T.block("B"):
                        vi = T.axis.spatial(8, i)
                        vj = T.axis.spatial(n, j_0 * 10 + j_1)
                        T.where(j_0 * 10 + j_1 < n)
                        B[vi, vj] = A[vi, vj] * T.float32(2)

    sch = Schedule(sym)
    _, j = sch.get_loops(sch.get_block("B"))
    j0, _ = sch.split(j, [None, 10])
    sch.parallel(j0)
    check_schedule(sch, sym, expected, numeric=False)


def test_three_splits_with_predicates_keep_the_predicate_in_horner_form() -> None:
    @T.prim_func
    def cube(A: T.Buffer((16, 16, 16), "float32"), B: T.Buffer((16, 16, 16), "float32")):
        for i, j, k in T.grid(16, 16, 16):
            with T.block("B"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)

    @T.prim_func
    def expected(A: T.Buffer((16, 16, 16), "float32"), B: T.Buffer((16, 16, 16), "float32")):
        for i_0, i_1, i_2, j_0, j_1, k_0, k_1 in T.grid(3, 2, 3, 1, 17, 3, 6):
            with T.block("B"):
                vi = T.axis.spatial(16, i_0 * 6 + i_1 * 3 + i_2)
                vj = T.axis.spatial(16, j_0 * 17 + j_1)
                vk = T.axis.spatial(16, k_0 * 6 + k_1)
                T.where(
                    (i_0 * 2 + i_1) * 3 + i_2 < 16 and j_0 * 17 + j_1 < 16 and k_0 * 6 + k_1 < 16
                )
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)

    sch = Schedule(cube)
    i, j, k = sch.get_loops(sch.get_block("B"))
    sch.split(i, [3, 2, 3])
    sch.split(j, [None, 17])
    sch.split(k, [3, None])
    check_schedule(sch, cube, expected)
