"""Traces: one frozen record per primitive, printed as runnable Python, serialised to JSON,
and replayed to the same IR."""

from __future__ import annotations

import dataclasses
import json

import pytest
from schedule_checks import check_replay, check_schedule
from schedule_corpus import square_matmul

from tilewright.ir import assert_structural_equal
from tilewright.schedule import Instruction, Trace
from tilewright.script import tir as T
from tilewright.tir import Schedule, ScheduleError


@T.prim_func
def vector_add(
    A: T.Buffer((1024,), "float32"),
    B: T.Buffer((1024,), "float32"),
    C: T.Buffer((1024,), "float32"),
):
    for i in range(1024):
        with T.block("C"):
            vi = T.axis.spatial(1024, i)
            C[vi] = A[vi] + B[vi]


def test_show_prints_the_calls_as_python(capsys: pytest.CaptureFixture[str]) -> None:
    sch = Schedule(vector_add)
    (i,) = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    sch.trace.show()
    assert capsys.readouterr().out.splitlines() == [
        "# from tvm import s_tir",
        "def apply_trace(sch: s_tir.Schedule) -> None:",
        '  b0 = sch.get_sblock(name="C", func_name="main")',
        "  l1, = sch.get_loops(block=b0)",
        "  l2, l3 = sch.split(loop=l1, factors=[None, 128], preserve_unit_iters=True, "
        "disable_predication=False)",
        '  sch.bind(loop=l2, thread_axis="blockIdx.x")',
        '  sch.bind(loop=l3, thread_axis="threadIdx.x")',
    ]


def _every_primitive() -> Schedule:
    sch = Schedule(square_matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [2, None], preserve_unit_iters=False)
    k0, k1 = sch.split(k, [3, 6])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    ij = sch.fuse(i0, j0)
    sch.bind(ij, "blockIdx.x")
    sch.vectorize(j1)
    sch.unroll(k1)
    sch.annotate(k0, "pragma", "text")
    sch.annotate(block, "meta_schedule.unroll", [4, 8])
    sch.unannotate(k0, "pragma")
    sch.add_unit_loop(block)
    sch.get_child_blocks(ij)
    outer = sch.add_unit_loop(ij)
    sch.parallel(outer)
    return sch


def test_every_primitive_replays_from_python_and_json() -> None:
    sch = _every_primitive()
    kinds = {inst.kind for inst in sch.trace}
    assert kinds == {
        "get_block",
        "get_loops",
        "split",
        "reorder",
        "fuse",
        "bind",
        "vectorize",
        "unroll",
        "annotate",
        "unannotate",
        "add_unit_loop",
        "get_child_blocks",
        "parallel",
    }
    check_schedule(sch, square_matmul)


def test_json_form() -> None:
    sch = Schedule(vector_add)
    (i,) = sch.get_loops(sch.get_block("C"))
    sch.split(i, [None, 128])
    sch.annotate(sch.get_block("C"), "note", "x")
    assert sch.trace.as_json() == [
        [
            ["GetSBlock", [], ["C", "main"], ["b0"]],
            ["GetLoops", ["b0"], [], ["l1"]],
            ["Split", ["l1", [None, 128]], [True, False], ["l2", "l3"]],
            ["GetSBlock", [], ["C", "main"], ["b4"]],
            ["Annotate", ["b4", {"str": "x"}], ["note"], []],
        ],
        [],
    ]
    text = json.dumps(sch.trace.as_json())
    assert json.dumps(Trace.from_json(text).as_json()) == text
    check_replay(sch, vector_add)


def test_a_refused_primitive_is_not_recorded() -> None:
    sch = Schedule(square_matmul)
    _, _, k = sch.get_loops(sch.get_block("C"))
    before = str(sch.trace)
    with pytest.raises(ScheduleError):
        sch.parallel(k)
    assert str(sch.trace) == before


def test_records_are_frozen() -> None:
    sch = Schedule(vector_add)
    sch.get_block("C")
    inst = sch.trace.insts[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        inst.kind = "split"  # type: ignore[misc]


def test_instruction_checks_its_kind_and_arity() -> None:
    with pytest.raises(ValueError, match="unknown instruction kind 'tile'"):
        Instruction("tile", (), (), ())
    with pytest.raises(ValueError, match=r"instruction 'bind' takes inputs \('loop',\)"):
        Instruction("bind", (), (), ())


def test_decisions_are_kept_and_serialised() -> None:
    sch = Schedule(vector_add)
    (i,) = sch.get_loops(sch.get_block("C"))
    sch.sample_perfect_tile(i, 2, decision=[128, 8])
    trace = sch.trace.with_decision(2, [256, 4])
    assert trace.insts[2].decision == [256, 4]
    assert sch.trace.insts[2].decision == [128, 8]
    assert trace.as_json()[1] == [[2, [256, 4]]]
    assert Trace.from_json(json.dumps(trace.as_json())).insts[2].decision == [256, 4]


def test_replay_on_a_module_without_the_block_raises() -> None:
    sch = Schedule(vector_add)
    sch.get_block("C")

    @T.prim_func
    def other(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("D"):
                vi = T.axis.spatial(4, i)
                A[vi] = T.float32(0)

    with pytest.raises(ScheduleError, match="has no block named 'C'"):
        sch.trace.apply_to_schedule(Schedule(other))


def test_trace_of_a_copy_continues_independently() -> None:
    sch = Schedule(vector_add)
    (i,) = sch.get_loops(sch.get_block("C"))
    copy = sch.copy()
    copy.split(i, [None, 2])
    assert len(copy.trace) == 3 and len(sch.trace) == 2
    check_replay(copy, vector_add)


def test_simplified_drops_unused_queries_and_still_replays() -> None:
    sch = Schedule(square_matmul)
    sch.get_block("C")  # unused
    block = sch.get_block("C")
    sch.get_loops(block)  # unused
    i, _, _ = sch.get_loops(block)
    sch.split(i, [None, 4])
    simple = sch.trace.simplified()
    assert [inst.kind for inst in simple] == ["get_block", "get_loops", "split"]
    replayed = Schedule(square_matmul)
    simple.apply_to_schedule(replayed)
    assert_structural_equal(replayed.mod, sch.mod)


def test_replay_refuses_a_module_with_another_number_of_loops() -> None:
    sch = Schedule(vector_add)
    sch.get_loops(sch.get_block("C"))

    @T.prim_func
    def nested(A: T.Buffer((4, 4), "float32"), C: T.Buffer((4, 4), "float32")):
        for i, j in T.grid(4, 4):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj]

    with pytest.raises(ScheduleError, match="expects 1 results of get_loops") as info:
        sch.trace.apply_to_schedule(Schedule(nested))
    assert info.value.rule == "stale-reference"
