"""TVM's trace forms: a trace's decisions live in its ``decisions`` map, so ``Trace(insts, {})``
replays by drawing every sampling instruction anew from the schedule's generator; the text
and JSON are those of TVM's current printer (``s_tir``, ``get_sblock``, ``GetSBlock``), and
older spellings still load."""

from __future__ import annotations

import importlib

import pytest
from schedule_checks import check_numeric, check_replay
from schedule_corpus import matmul

import tilewright as tvm
from tilewright.ir import assert_structural_equal
from tilewright.schedule import Schedule, Trace
from tilewright.schedule.instruction import Instruction, InstructionKind
from tilewright.schedule.reference import BlockRV, LoopRV
from tilewright.script import tir as T

SAMPLING = ("sample_perfect_tile", "sample_categorical", "sample_compute_location")


@T.prim_func
def two_stage(A: T.Buffer((16, 24), "float32"), C: T.Buffer((16, 24), "float32")):
    B = T.alloc_buffer((16, 24), "float32")
    for i, j in T.grid(16, 24):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 24):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def _sampled(seed: int) -> Schedule:
    """Tile C's loops by sampled factors, then place B at a sampled location, then a
    postprocessing step."""
    sch = Schedule(two_stage, seed=seed)
    c = sch.get_block("C")
    i, j = sch.get_loops(c)
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=4))
    j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=8))
    sch.reorder(i0, j0, i1, j1)
    b = sch.get_block("B")
    sch.compute_at(b, sch.sample_compute_location(b))
    unroll = sch.sample_categorical([0, 16, 64], [0.3, 0.4, 0.3])
    sch.annotate(c, "meta_schedule.unroll_explicit", unroll)
    sch.enter_postproc()
    sch.parallel(sch.get_loops(c)[0])
    return sch


def _decisions(sch: Schedule) -> list[object]:
    return [inst.decision for inst in sch.trace.insts if inst.kind.method in SAMPLING]


def test_an_empty_decision_map_resamples_from_the_schedule_generator() -> None:
    recorded = _sampled(seed=3)
    bare = Trace(recorded.trace.insts, {})
    assert bare.decisions == {}
    drawn = set()
    for seed in range(12):
        sch = Schedule(two_stage, seed=seed)
        bare.apply_to_schedule(sch, remove_postproc=True)
        # The draws are the schedule's: the same as the method calls make with its seed.
        direct = _sampled(seed)
        assert _decisions(sch) == _decisions(direct)
        kinds = [inst.kind for inst in sch.trace.insts]
        assert kinds == [inst.kind for inst in recorded.trace.insts][: len(kinds)]
        assert "enter_postproc" not in kinds
        drawn.add(repr(_decisions(sch)))
        check_numeric(sch, two_stage)
        check_replay(sch, two_stage)
    assert len(drawn) > 3  # resampled, not the recorded decisions again


def test_a_decision_map_replays_its_decisions_and_only_those() -> None:
    recorded = _sampled(seed=5)
    trace = recorded.trace
    again = Schedule(two_stage, seed=99)
    Trace(trace.insts, trace.decisions).apply_to_schedule(again)
    assert_structural_equal(again.mod, recorded.mod)
    assert _decisions(again) == _decisions(recorded)
    # Keep the tile decisions, drop the location and the unroll: those two are drawn anew.
    tiles = {i: d for i, d in trace.decisions.items() if i.kind == "sample_perfect_tile"}
    partial = Trace(trace.insts, tiles)
    assert set(partial.decisions) == set(tiles)
    for seed in range(6):
        sch = Schedule(two_stage, seed=seed)
        partial.apply_to_schedule(sch, remove_postproc=True)
        assert _decisions(sch)[:2] == _decisions(recorded)[:2]
        check_numeric(sch, two_stage)


def test_a_trace_without_a_map_keeps_the_decisions_its_instructions_carry() -> None:
    recorded = _sampled(seed=7)
    sch = Schedule(two_stage, seed=1)
    Trace(recorded.trace.insts).apply_to_schedule(sch)
    assert_structural_equal(sch.mod, recorded.mod)


def test_json_with_no_decisions_resamples_like_an_empty_map() -> None:
    insts, _ = _sampled(seed=2).trace.as_json(remove_postproc=True)
    for seed in range(4):
        from_json = Schedule(two_stage, seed=seed)
        Trace.apply_json_to_schedule([insts, []], from_json)
        direct = _sampled(seed)
        assert _decisions(from_json) == _decisions(direct)


def test_printed_trace_is_tvm_s_tir_text_and_runs() -> None:
    sch = Schedule(matmul)
    block = sch.get_sblock("C")
    i, _, _ = sch.get_loops(block)
    sch.split(i, [None, 2])
    text = str(sch.trace)
    assert text.splitlines() == [
        "# from tvm import s_tir",
        "def apply_trace(sch: s_tir.Schedule) -> None:",
        '  b0 = sch.get_sblock(name="C", func_name="main")',
        "  l1, l2, l3 = sch.get_loops(block=b0)",
        "  l4, l5 = sch.split(loop=l1, factors=[None, 2], preserve_unit_iters=True, "
        "disable_predication=False)",
    ]
    assert sch.trace.as_json()[0][0] == ["GetSBlock", [], ["C", "main"], ["b0"]]
    namespace: dict[str, object] = {}
    exec(text, namespace)  # the printed function, run on a fresh tvm.s_tir.Schedule
    fresh = tvm.s_tir.Schedule(matmul)
    namespace["apply_trace"](fresh)  # type: ignore[operator]
    assert_structural_equal(fresh.mod, sch.mod)
    check_numeric(fresh, matmul)


def test_str_of_an_instruction_is_its_call_with_blank_names() -> None:
    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, _, _ = sch.get_loops(block)
    sch.split(i, sch.sample_perfect_tile(i, n=2, decision=[4, 2]))
    assert [str(inst) for inst in sch.trace.insts] == [
        '_ = sch.get_sblock(name="C", func_name="main")',
        "_, _, _ = sch.get_loops(block=_)",
        "_, _ = sch.sample_perfect_tile(loop=_, n=2, max_innermost_factor=16)",
        "_, _ = sch.split(loop=_, factors=[_, _], preserve_unit_iters=True, "
        "disable_predication=False)",
    ]
    assert repr(sch.trace.insts[2]).startswith("Instruction(SamplePerfectTile, ")


def test_boolean_immediates_are_flags_printed_as_python_booleans() -> None:
    b0, l1, l2, l3 = BlockRV(), LoopRV(), LoopRV(), LoopRV()
    split = Instruction(
        InstructionKind.get("Split"),
        [l1, None, T.int32(2)],
        [T.bool(True), T.bool(False)],
        [l2, l3],
    )
    assert split.attrs == (True, False)
    trace = Trace(
        [
            Instruction(InstructionKind.get("GetSBlock"), [], ["C", "main"], [b0]),
            Instruction(InstructionKind.get("GetLoops"), [b0], [], [l1, LoopRV(), LoopRV()]),
            split,
        ],
        {},
    )
    assert trace.as_python()[2] == (
        "l4, l5 = sch.split(loop=l1, factors=[None, 2], preserve_unit_iters=True, "
        "disable_predication=False)"
    )
    assert trace.as_json()[0][2][2] == [True, False]
    sch = Schedule(matmul)
    trace.apply_to_schedule(sch)
    check_numeric(sch, matmul)


@pytest.mark.parametrize("kind", ["GetBlock", "get_block", "GetSBlock", "get_sblock"])
def test_every_spelling_of_get_block_loads(kind: str) -> None:
    obj = [
        [
            [kind, [], ["C", "main"], ["b0"]],
            ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
            ["Parallel", ["l1"], [], []],
        ],
        [],
    ]
    sch = Schedule(matmul)
    Trace.apply_json_to_schedule(obj, sch)
    expected = Schedule(matmul)
    expected.parallel(expected.get_loops(expected.get_block("C"))[0])
    assert_structural_equal(sch.mod, expected.mod)
    assert sch.trace.as_json()[0][0][0] == "GetSBlock"


def test_s_tir_namespace_names_the_schedule_api() -> None:
    from tilewright import s_tir
    from tilewright.s_tir.schedule import SBlockRV

    assert s_tir.Schedule is Schedule and s_tir.Trace is Trace
    assert s_tir.SBlockRV is SBlockRV is BlockRV
    assert s_tir.schedule.InstructionKind.get("GetSBlock").name == "GetSBlock"
    assert s_tir.meta_schedule is importlib.import_module("tilewright.meta_schedule")
    sch = s_tir.Schedule(matmul)
    assert isinstance(sch.get_sblock("C"), SBlockRV)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = s_tir.Nope
