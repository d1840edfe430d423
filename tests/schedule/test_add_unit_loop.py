"""add_unit_loop above a block or a loop."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def scalar(A: T.Buffer((1,), "float32")):
    with T.block("root"):
        T.reads()
        T.writes()
        with T.block("A"):
            A[0] = T.float32(1)


@T.prim_func
def copy(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi]


def test_unit_loop_above_a_block_without_loops() -> None:
    @T.prim_func
    def expected(A: T.Buffer((1,), "float32")):
        for _u in range(1):
            with T.block("A"):
                A[0] = T.float32(1)

    sch = Schedule(scalar)
    block = sch.get_block("A")
    assert sch.get_loops(block) == []
    u = sch.add_unit_loop(block)
    check_schedule(sch, scalar, expected)
    assert sch.get(u).loop_var.name == "u"
    assert len(sch.get_loops(block)) == 1


def test_unit_loop_above_a_loop() -> None:
    @T.prim_func
    def expected(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for _u, i in T.grid(1, 8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi]

    sch = Schedule(copy)
    (i,) = sch.get_loops("B")
    u = sch.add_unit_loop(i)
    check_schedule(sch, copy, expected)
    assert [sch.get(r).loop_var.name for r in sch.get_loops("B")] == ["u", "i"]
    assert sch.get(i).loop_var.name == "i"
    sch.fuse(u, i)
    check_schedule(sch, copy)


def test_the_root_block_stays_the_function_body() -> None:
    @T.prim_func
    def single(A: T.Buffer((1,), "float32")):
        with T.block("A"):
            A[0] = T.float32(1)

    sch = Schedule(single)
    error = check_refused(
        sch, lambda: sch.add_unit_loop("A"), "block 'A' is the function's root block"
    )
    assert error.rule == "root-block"
