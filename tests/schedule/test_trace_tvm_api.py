"""TVM's trace API: instruction kinds by TVM's names, traces built by hand from
``Instruction`` objects and a decisions dict, replayed, edited, printed and serialised."""

from __future__ import annotations

import json
import pickle

import pytest
from schedule_checks import check_numeric, check_replay

import tilewright as tvm
from tilewright.ir import assert_structural_equal
from tilewright.schedule.instruction import KINDS, register_kinds
from tilewright.script import tir as T
from tilewright.tir.schedule import (
    BlockRV,
    ExprRV,
    Instruction,
    InstructionKind,
    LoopRV,
    Schedule,
    Trace,
)


@T.prim_func
def elementwise(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def _inst(
    kind: str, inputs: list[object], attrs: list[object], outputs: list[object]
) -> Instruction:
    return Instruction(InstructionKind.get(kind), inputs, attrs, outputs)  # type: ignore[arg-type]


def _def(*lines: str) -> str:
    head = ["# from tvm import s_tir", "def apply_trace(sch: s_tir.Schedule) -> None:"]
    return "\n".join(head + [f"  {line}" for line in lines])


def _tiled_trace() -> tuple[Trace, list[Instruction]]:
    """Inline B, split C's outer loop by a sampled tile, parallelise, vectorise."""
    b0, b1 = BlockRV(), BlockRV()
    l2, l3, l6, l7 = LoopRV(), LoopRV(), LoopRV(), LoopRV()
    v4, v5 = ExprRV(), ExprRV()
    insts = [
        _inst("GetBlock", [], ["B", "main"], [b0]),
        _inst("ComputeInline", [b0], [], []),
        _inst("GetBlock", [], ["C", "main"], [b1]),
        _inst("GetLoops", [b1], [], [l2, l3]),
        _inst("SamplePerfectTile", [l2], [2, 16], [v4, v5]),
        _inst("Split", [l2, v4, v5], [True, False], [l6, l7]),
        _inst("Parallel", [l6], [], []),
        _inst("Vectorize", [l3], [], []),
    ]
    return Trace(insts, {insts[4]: [4, 4]}), insts


def _tiled_by_methods() -> Schedule:
    sch = Schedule(elementwise)
    sch.compute_inline(sch.get_block("B"))
    i, j = sch.get_loops(sch.get_block("C"))
    i0, _ = sch.split(i, [4, 4])
    sch.parallel(i0)
    sch.vectorize(j)
    return sch


def test_kinds_are_found_by_tvm_and_method_names() -> None:
    names = (
        "GetSBlock GetLoops Split Fuse Reorder Parallel Vectorize Bind Unroll CacheRead "
        "CacheWrite ComputeAt ReverseComputeAt ComputeInline ReverseComputeInline "
        "DecomposeReduction RFactor Blockize Tensorize Annotate Unannotate SamplePerfectTile "
        "SampleCategorical SampleComputeLocation EnterPostproc StorageAlign SetScope "
        "TransformLayout AddUnitLoop GetChildBlocks GetProducers GetConsumers GetOutputBlocks"
    )
    for name in names.split(" "):
        assert InstructionKind.get(name).name == name
    split = InstructionKind.get("Split")
    assert split is InstructionKind.get("split") and split == "split" and str(split) == "split"
    assert split.method == "split" and not split.is_pure
    assert InstructionKind.get("GetLoops").is_pure
    assert InstructionKind.get("SamplePerfectTile").is_pure
    assert InstructionKind.get("GetBlock") is InstructionKind.get("GetSBlock")  # older TVM
    assert InstructionKind.get("GetSBlock") is InstructionKind.get("get_sblock")
    assert pickle.loads(pickle.dumps(split)) is split
    with pytest.raises(ValueError, match="unknown instruction kind 'Tile'"):
        InstructionKind.get("Tile")


def test_every_registered_kind_has_one_tvm_name() -> None:
    for kind in KINDS.values():
        assert InstructionKind.get(kind.name) is kind


def test_a_kind_registered_later_gets_a_derived_tvm_name() -> None:
    register_kinds(InstructionKind("widen_loop_now", ("loop",)))
    try:
        kind = InstructionKind.get("WidenLoopNow")
        assert kind == "widen_loop_now" and kind.name == "WidenLoopNow"
        with pytest.raises(ValueError, match="already registered"):
            register_kinds(InstructionKind("widen_loop_now", ("loop",)))
    finally:
        del KINDS["widen_loop_now"]


def test_instructions_keep_the_kind_object_and_our_layout() -> None:
    l1, l2, l3 = LoopRV(), LoopRV(), LoopRV()
    split = _inst("Split", [l1, None, 32], [True], [l2, l3])  # TVM's flat layout, old attrs
    assert split.kind.name == "Split" and split.kind == "split"
    assert split.inputs == (l1, (None, 32)) and split.attrs == (True, False)
    fuse = Instruction("Fuse", [l2, l3], [True], [LoopRV()])
    assert fuse.inputs == ((l2, l3),)
    with pytest.raises(ValueError, match=r"instruction 'bind' takes inputs \('loop',\)"):
        Instruction(InstructionKind.get("Bind"), [], [], [])


def test_hand_built_trace_replays_like_the_method_calls() -> None:
    trace, _ = _tiled_trace()
    sch = Schedule(elementwise)
    trace.apply_to_schedule(sch, remove_postproc=False, decision_provider=None)
    assert_structural_equal(sch.mod, _tiled_by_methods().mod)
    check_numeric(sch, elementwise)
    check_replay(sch, elementwise)


def test_decisions_dict_round_trip() -> None:
    trace, insts = _tiled_trace()
    tile = insts[4]
    assert trace.decisions == {tile: [4, 4]}
    assert trace.get_decision(tile) == [4, 4] and trace.get_decision(insts[0]) is None
    assert trace.insts[4] == tile and trace.insts[4].same_as(tile)
    again = Trace(trace.insts, trace.decisions)
    assert again.decisions == {tile: [4, 4]}
    assert [i.kind.name for i in again.insts][:5] == [
        "GetSBlock",
        "ComputeInline",
        "GetSBlock",
        "GetLoops",
        "SamplePerfectTile",
    ]


def test_with_decision_returns_a_new_trace() -> None:
    trace, insts = _tiled_trace()
    tile = insts[4]
    other = trace.with_decision(tile, [2, 8], remove_postproc=True)
    assert other.get_decision(tile) == [2, 8] and trace.get_decision(tile) == [4, 4]
    assert trace.with_decision(4, [8, 2]).get_decision(tile) == [8, 2]  # by index, as before
    with pytest.raises(ValueError, match="not an instruction of this trace"):
        trace.with_decision(_inst("SampleCategorical", [], [[1], [1.0]], [ExprRV()]), 0)
    with pytest.raises(ValueError, match="makes no decision"):
        trace.with_decision(insts[5], [1])
    sch = Schedule(elementwise)
    other.apply_to_schedule(sch, remove_postproc=True)
    i0, i1, _ = sch.get_loops(sch.get_block("C"))
    assert [int(sch.get(r).extent) for r in (i0, i1)] == [2, 8]
    check_numeric(sch, elementwise)


def test_decision_provider_in_tvm_form_sees_every_instruction() -> None:
    trace, _ = _tiled_trace()
    seen: list[str] = []

    def provider(inst: Instruction, inputs: list[object], attrs: list[object], decision: object):
        seen.append(inst.kind.name)
        return [8, 2] if inst.kind.name == "SamplePerfectTile" else decision

    sch = Schedule(elementwise)
    trace.apply_to_schedule(sch, False, provider)
    assert len(seen) == len(trace)
    assert [i.decision for i in sch.trace.insts if i.kind.sampling] == [[8, 2]]


def test_append_and_pop_change_the_trace_in_place() -> None:
    b0, l1, l2 = BlockRV(), LoopRV(), LoopRV()
    trace = Trace([_inst("GetBlock", [], ["B", "main"], [b0])], {})
    trace.append(_inst("GetLoops", [b0], [], [l1, l2]))
    last = _inst("SampleCategorical", [], [[1, 2], [0.5, 0.5]], [ExprRV()])
    trace.append(last, decision=1)
    assert len(trace) == 3 and trace.get_decision(last) == 1
    assert trace.pop().same_as(last)  # type: ignore[union-attr]
    assert str(trace) == _def(
        'b0 = sch.get_sblock(name="B", func_name="main")', "l1, l2 = sch.get_loops(block=b0)"
    )
    empty = Trace([], {})
    assert empty.pop() is None and str(empty) == _def("pass")


def test_printed_as_tvm_prints(capsys: pytest.CaptureFixture[str]) -> None:
    trace, _ = _tiled_trace()
    expected = _def(
        'b0 = sch.get_sblock(name="B", func_name="main")',
        "sch.compute_inline(block=b0)",
        'b1 = sch.get_sblock(name="C", func_name="main")',
        "l2, l3 = sch.get_loops(block=b1)",
        "v4, v5 = sch.sample_perfect_tile(loop=l2, n=2, max_innermost_factor=16, decision=[4, 4])",
        "l6, l7 = sch.split(loop=l2, factors=[v4, v5], preserve_unit_iters=True, "
        "disable_predication=False)",
        "sch.parallel(loop=l6)",
        "sch.vectorize(loop=l3)",
    )
    assert str(trace) == expected
    trace.show()
    assert capsys.readouterr().out == expected + "\n"
    sch = Schedule(elementwise)
    sch.annotate(sch.get_block("C"), "note", "x")
    sch.get_child_blocks(sch.get_block("root"))
    assert sch.trace.as_python()[1:] == [
        'sch.annotate(block_or_loop=b0, ann_key="note", ann_val="x")',
        'b1 = sch.get_sblock(name="root", func_name="main")',
        "b2, b3 = sch.get_child_blocks(b1)",
    ]


def test_simplified_and_remove_postproc() -> None:
    b0, b1 = BlockRV(), BlockRV()
    insts = [
        _inst("GetBlock", [], ["B", "main"], [b0]),
        _inst("ComputeInline", [b0], [], []),
        _inst("GetBlock", [], ["C", "main"], [b1]),
        _inst("EnterPostproc", [], [], []),
        _inst("Annotate", [b1, "x"], ["note"], []),
    ]
    trace = Trace(insts, {})
    assert trace.simplified(remove_postproc=False).insts == trace.insts
    design = trace.simplified(remove_postproc=True)
    assert [i.kind.name for i in design.insts] == ["GetSBlock", "ComputeInline"]
    assert len(trace.as_python(remove_postproc=True)) == 3
    assert len(trace.as_json(remove_postproc=True)[0]) == 3


def test_json_round_trip_uses_tvm_names() -> None:
    trace, _ = _tiled_trace()
    obj = trace.as_json()
    assert obj[0][:2] == [
        ["GetSBlock", [], ["B", "main"], ["b0"]],
        ["ComputeInline", ["b0"], [], []],
    ]
    assert obj[1] == [[4, [4, 4]]]
    text = json.dumps(obj)
    assert Trace.from_json(text).as_json() == obj
    sch = Schedule(elementwise)
    Trace.apply_json_to_schedule(json.loads(text), sch)
    assert_structural_equal(sch.mod, _tiled_by_methods().mod)


def test_json_in_tvm_layout_applies() -> None:
    # Split's factors flat after the loop; a string input quoted; our old method names too.
    obj = [
        [
            ["GetBlock", [], ["C", "main"], ["b0"]],
            ["get_loops", ["b0"], [], ["l1", "l2"]],
            ["Split", ["l1", None, 4], [True, False], ["l3", "l4"]],
            ["Annotate", ["b0", '"a \\"quoted\\" note"'], ["note"], []],
        ],
        [],
    ]
    sch = Schedule(elementwise)
    Trace.apply_json_to_schedule(obj, sch)
    expected = Schedule(elementwise)
    block = expected.get_block("C")
    i, _ = expected.get_loops(block)
    expected.split(i, [None, 4])
    expected.annotate(block, "note", 'a "quoted" note')
    assert_structural_equal(sch.mod, expected.mod)


def test_cache_read_with_no_consumer_list_reads_for_every_consumer() -> None:
    b0, b1 = BlockRV(), BlockRV()
    trace = Trace(
        [
            _inst("GetBlock", [], ["C", "main"], [b0]),
            _inst("CacheRead", [b0, []], [0, "local"], [b1]),
        ],
        {},
    )
    assert (
        trace.as_python()[1]
        == 'b1 = sch.cache_read(block=b0, read_buffer_index=0, storage_scope="local")'
    )
    sch = Schedule(elementwise)
    trace.apply_to_schedule(sch, remove_postproc=False)
    expected = Schedule(elementwise)
    expected.cache_read(expected.get_block("C"), 0, "local")
    assert_structural_equal(sch.mod, expected.mod)
    check_numeric(sch, elementwise)


def test_a_schedule_trace_speaks_tvm_names_and_pickles() -> None:
    sch = _tiled_by_methods()
    assert [i.kind.name for i in sch.trace.insts] == [
        "GetSBlock",
        "ComputeInline",
        "GetSBlock",
        "GetLoops",
        "Split",
        "Parallel",
        "Vectorize",
    ]
    copy = pickle.loads(pickle.dumps(sch.trace))
    assert copy.as_json() == sch.trace.as_json()
    assert copy.insts[4].kind is InstructionKind.get("Split")
    assert tvm.tir.schedule.Trace is Trace and tvm.tir.Trace is Trace
    assert tvm.tir.schedule.InstructionKind.get("Fuse").name == "Fuse"
