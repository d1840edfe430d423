"""Queries and the schedule state: get_block, get_loops, get_child_blocks, get, copy, and
references that stay valid (or go stale) across primitives."""

from __future__ import annotations

import pytest
from schedule_checks import check_refused, check_schedule

import tilewright as tw
from tilewright.ir import Block, For, IRModule
from tilewright.script import tir as T
from tilewright.tir import BlockRV, LoopRV, Schedule, ScheduleError


@T.prim_func
def two_stage(A: T.Buffer((4, 8), "float32"), C: T.Buffer((4, 8), "float32")):
    B = T.alloc_buffer((4, 8), "float32")
    for i in range(4):
        for j in range(8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)


def test_a_primfunc_is_scheduled_as_main() -> None:
    sch = Schedule(two_stage)
    assert isinstance(sch.mod, IRModule)
    assert sch.mod["main"] is two_stage
    assert sch.func_working_on == "main"


def test_get_block_get_loops_and_get() -> None:
    sch = Schedule(two_stage)
    block = sch.get_block("C")
    assert isinstance(block, BlockRV)
    assert isinstance(sch.get(block), Block) and sch.get(block).name == "C"
    loops = sch.get_loops(block)
    assert all(isinstance(r, LoopRV) for r in loops)
    assert [sch.get(r).loop_var.name for r in loops] == ["i", "j"]
    assert all(isinstance(sch.get(r), For) for r in loops)
    assert sch.get(sch.get_sblock("B")).name == "B"


def test_get_child_blocks_of_a_loop_and_of_the_root() -> None:
    sch = Schedule(two_stage)
    i, _ = sch.get_loops("B")
    assert [sch.get(b).name for b in sch.get_child_blocks(i)] == ["B", "C"]
    assert [sch.get(b).name for b in sch.get_child_blocks("root")] == ["B", "C"]


def test_get_block_names_the_known_blocks() -> None:
    sch = Schedule(two_stage)
    error = check_refused(
        sch,
        lambda: sch.get_block("D"),
        r"function 'main' has no block named 'D' \(blocks: 'root', 'B', 'C'\)",
    )
    assert error.rule == "unknown-block"
    check_refused(
        sch, lambda: sch.get_block("B", func_name="other"), "the module has no function 'other'"
    )
    assert len(sch.trace) == 0


def test_block_names_must_be_unique() -> None:
    @T.prim_func
    def twice(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("A"):
                vi = T.axis.spatial(4, i)
                A[vi] = T.float32(1)
        for i in range(4):
            with T.block("A"):
                vi = T.axis.spatial(4, i)
                A[vi] = T.float32(2)

    with pytest.raises(ScheduleError, match="function 'main' has two blocks named 'A'") as info:
        Schedule(twice)
    assert info.value.rule == "unique-block-names"


def test_references_survive_primitives_that_keep_their_loop() -> None:
    sch = Schedule(two_stage)
    block_b = sch.get_block("B")
    i, j = sch.get_loops(block_b)
    sch.bind(i, "blockIdx.x")
    sch.annotate(j, "k", 1)
    sch.reorder(j)
    assert sch.get(i).thread_tag == "blockIdx.x"
    assert sch.get(j).annotations == (("k", 1),)
    assert sch.get(block_b).name == "B"


def test_references_to_fused_loops_go_stale() -> None:
    sch = Schedule(two_stage)
    _, j = sch.get_loops("C")
    j0, j1 = sch.split(j, [2, 4])
    fused = sch.fuse(j0, j1)
    for stale, name in ((j, "j"), (j0, "j_0"), (j1, "j_1")):
        with pytest.raises(ScheduleError, match=f"loop '{name}' no longer exists") as info:
            sch.get(stale)
        assert info.value.rule == "stale-reference"
    assert sch.get(fused).loop_var.name == "j_0_j_1_fused"


def test_a_reference_from_another_schedule_is_refused() -> None:
    other = Schedule(two_stage).get_block("B")
    sch = Schedule(two_stage)
    check_refused(sch, lambda: sch.get_loops(other), "was not created by this schedule")


def test_copy_is_independent_and_keeps_references() -> None:
    sch = Schedule(two_stage)
    block = sch.get_block("C")
    i, j = sch.get_loops(block)
    copy = sch.copy()
    copy.split(j, [None, 4])
    assert sch.get(j).loop_var.name == "j"
    check_refused(copy, lambda: copy.get(j), "no longer exists")
    assert len(copy.trace) == len(sch.trace) + 1
    sch.parallel(i)
    assert copy.get(i).kind.script_name == "serial"
    check_schedule(copy, two_stage)
    check_schedule(sch, two_stage)


def test_work_on_picks_the_function_of_get_block() -> None:
    mod = IRModule({"main": two_stage, "other": two_stage})
    sch = Schedule(mod)
    sch.work_on("other")
    block = sch.get_block("B")
    (i, _) = sch.get_loops(block)
    sch.parallel(i)
    assert sch.mod["main"] is two_stage
    assert sch.mod["other"] is not two_stage
    assert 'func_name="other"' in str(sch.trace)


def test_schedule_takes_a_module_or_a_function() -> None:
    with pytest.raises(TypeError, match="Schedule takes an IRModule or a PrimFunc, not int"):
        Schedule(3)  # type: ignore[arg-type]


def test_show_prints_the_module(capsys: pytest.CaptureFixture[str]) -> None:
    sch = Schedule(two_stage)
    with tw.config.scope(color=False):
        sch.show()
    assert 'with T.block("C"):' in capsys.readouterr().out
