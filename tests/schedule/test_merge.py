"""merge: expected scripts (TVM's example, inner loops, nests under a loop), program order of
the bodies, and every rule it enforces, data flow included."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def two_stages(
    A: T.Buffer((16, 8), "float32"),
    B: T.Buffer((16, 8), "float32"),
    C: T.Buffer((16, 8), "float32"),
):
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def _loops(func=two_stages):
    sch = Schedule(func)
    return sch, sch.get_loops("B"), sch.get_loops("C")


def test_merge_outer_loops_as_in_tvm() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((16, 8), "float32"),
        C: T.Buffer((16, 8), "float32"),
    ):
        for i_m in range(16):
            for j in range(8):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i_m, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for j in range(8):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i_m, j])
                    C[vi, vj] = B[vi, vj] + T.float32(1)

    sch, (i_b, _), (i_c, _) = _loops()
    merged = sch.merge(i_b, i_c)
    check_schedule(sch, two_stages, expected)
    assert sch.get(merged).loop_var.name == "i_m"
    assert sch.trace.as_python()[-1] == "l6 = sch.merge(l1, l4)"


def test_merge_inner_loops_merges_the_nests_above_them() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((16, 8), "float32"),
        C: T.Buffer((16, 8), "float32"),
    ):
        for i_m, j_m in T.grid(16, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i_m, j_m])
                B[vi, vj] = A[vi, vj] * T.float32(2)
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i_m, j_m])
                C[vi, vj] = B[vi, vj] + T.float32(1)

    sch, (_, j_b), (_, j_c) = _loops()
    merged = sch.merge([j_b, j_c])  # a list, as TVM's *loops also takes
    check_schedule(sch, two_stages, expected)
    assert sch.get(merged).loop_var.name == "j_m"


def test_bodies_run_in_program_order_whatever_the_argument_order() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((16, 8), "float32"),
        C: T.Buffer((16, 8), "float32"),
    ):
        for i_m in range(16):
            for j in range(8):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i_m, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for j in range(8):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i_m, j])
                    C[vi, vj] = B[vi, vj] + T.float32(1)

    sch, (i_b, _), (i_c, _) = _loops()
    sch.merge(i_c, i_b)
    check_schedule(sch, two_stages, expected)


@T.prim_func
def three_under_a_loop(A: T.Buffer((4, 6), "float32"), D: T.Buffer((4, 6), "float32")):
    B = T.alloc_buffer((4, 6))
    C = T.alloc_buffer((4, 6))
    for i in range(4):
        for j in range(6):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)
        for j in range(6):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] * T.float32(3)
        for j in range(6):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = C[vi, vj] - B[vi, vj]


def test_merge_three_sibling_loops_under_a_loop() -> None:
    @T.prim_func
    def expected(A: T.Buffer((4, 6), "float32"), D: T.Buffer((4, 6), "float32")):
        B = T.alloc_buffer((4, 6))
        C = T.alloc_buffer((4, 6))
        for i in range(4):
            for j_m in range(6):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j_m])
                    B[vi, vj] = A[vi, vj] + T.float32(1)
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j_m])
                    C[vi, vj] = B[vi, vj] * T.float32(3)
                with T.block("D"):
                    vi, vj = T.axis.remap("SS", [i, j_m])
                    D[vi, vj] = C[vi, vj] - B[vi, vj]

    sch = Schedule(three_under_a_loop)
    loops = [sch.get_loops(name)[1] for name in ("B", "C", "D")]
    sch.merge(*loops)
    check_schedule(sch, three_under_a_loop, expected)


def test_a_later_nest_may_read_what_earlier_iterations_wrote() -> None:
    @T.prim_func
    def shifted(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        B = T.alloc_buffer((17,))
        for i in range(16):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi + 1] = A[vi]
        for i in range(16):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi]

    sch = Schedule(shifted)
    (i_b,) = sch.get_loops("B")
    (i_c,) = sch.get_loops("C")
    sch.merge(i_b, i_c)
    check_schedule(sch, shifted, numeric=False)  # B[0] is never written


# ---- rules ---------------------------------------------------------------------------------


def test_refuses_a_later_nest_reading_what_a_later_iteration_writes() -> None:
    @T.prim_func
    def stencil(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        B = T.alloc_buffer((17,))
        for i in range(16):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi]
        for i in range(16):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi + 1]

    sch = Schedule(stencil)
    (i_b,) = sch.get_loops("B")
    (i_c,) = sch.get_loops("C")
    error = check_refused(
        sch, lambda: sch.merge(i_b, i_c), "block 'C' would access buffer 'B' at an earlier"
    )
    assert error.rule == "data-flow"
    assert 'with T.block("C"):  # <-- here' in str(error)


def test_refuses_to_move_a_nest_past_a_block_that_reads_its_output() -> None:
    @T.prim_func
    def between(
        A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"), D: T.Buffer((8,), "float32")
    ):
        B = T.alloc_buffer((8,))
        for i in range(8):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi]
        for i in range(8):
            with T.block("D"):
                vi = T.axis.remap("S", [i])
                D[vi] = B[7 - vi]
        for i in range(8):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = A[vi] * T.float32(2)

    sch = Schedule(between)
    (i_b,) = sch.get_loops("B")
    (i_c,) = sch.get_loops("C")
    error = check_refused(sch, lambda: sch.merge(i_b, i_c), "block 'B' would move past block 'D'")
    assert error.rule == "data-flow"


def test_refuses_loops_of_different_extents_or_depths() -> None:
    @T.prim_func
    def uneven(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 4), "float32")):
        for i, j in T.grid(16, 8):
            with T.block("A"):
                vi, vj = T.axis.remap("SS", [i, j])
                A[vi, vj] = T.float32(1)
        for i, j in T.grid(16, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.float32(2)

    sch = Schedule(uneven)
    i_a, j_a = sch.get_loops("A")
    _, j_b = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.merge(j_a, j_b), "loop 'j' has the extent 4, loop 'j' 8")
    assert error.rule == "merge-extents"
    error = check_refused(sch, lambda: sch.merge(i_a, j_b), "lies 2 loops below")
    assert error.rule == "merge-extents"
    check_schedule(sch, uneven, uneven)


def test_refuses_loops_that_are_not_heads_of_single_child_nests() -> None:
    sch = Schedule(three_under_a_loop)
    i, j_b = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.merge(i, j_b), "encloses another loop")
    assert error.rule == "loop-chain"

    @T.prim_func
    def branchy(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
        for i in range(4):
            for j in range(4):
                with T.block("A"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    A[vi, vj] = T.float32(1)
            for j in range(4):
                with T.block("A2"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    A[vi, vj] = A[vi, vj] + T.float32(1)
        for i, j in T.grid(4, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.float32(2)

    sch = Schedule(branchy)
    _, j_a = sch.get_loops("A")
    _, j_b = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.merge(j_a, j_b), "a SeqStmt lies between loop 'j'")
    assert error.rule == "loop-chain"


def test_refuses_loops_that_are_bound_annotated_or_offset() -> None:
    @T.prim_func
    def kinds(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in T.thread_binding(8, thread="threadIdx.x"):
            with T.block("A"):
                vi = T.axis.remap("S", [i])
                A[vi] = T.float32(1)
        for i in T.serial(8, annotations={"key": 1}):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = T.float32(2)
        for i in range(2, 10):
            with T.block("C"):
                vi = T.axis.spatial(10, i)
                B[vi - 2] = B[vi - 2] + T.float32(1)

    sch = Schedule(kinds)
    (i_a,) = sch.get_loops("A")
    (i_b,) = sch.get_loops("B")
    (i_c,) = sch.get_loops("C")
    error = check_refused(sch, lambda: sch.merge(i_a, i_b), "is bound to threadIdx.x")
    assert error.rule == "plain-loop"
    error = check_refused(sch, lambda: sch.merge(i_b, i_c), "has annotations")
    assert error.rule == "plain-loop"
    sch.unannotate(i_b, "key")
    error = check_refused(sch, lambda: sch.merge(i_b, i_c), "starts at 2, not 0")
    assert error.rule == "loop-from-zero"


def test_refuses_fewer_than_two_distinct_loops() -> None:
    sch, (i_b, _), _ = _loops()
    error = check_refused(sch, lambda: sch.merge(i_b), "at least two loops")
    assert error.rule == "argument"
    error = check_refused(sch, lambda: sch.merge(i_b, i_b), "loop 'i' is given twice")
    assert error.rule == "distinct-loops"
