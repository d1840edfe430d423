"""annotate and unannotate on loops and blocks."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def copy(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi]


def test_annotate_a_loop_and_a_block() -> None:
    @T.prim_func
    def expected(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in T.serial(8, annotations={"pragma_auto_unroll_max_step": 16}):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                T.block_attr({"meta_schedule.tiling_structure": "SSRSRS", "k": [1, 2]})
                B[vi] = A[vi]

    sch = Schedule(copy)
    block = sch.get_block("B")
    (i,) = sch.get_loops(block)
    sch.annotate(i, "pragma_auto_unroll_max_step", 16)
    sch.annotate(block, "meta_schedule.tiling_structure", "SSRSRS")
    sch.annotate("B", "k", [1, 2])
    check_schedule(sch, copy, expected)


def test_annotate_replaces_a_value_and_unannotate_removes_it() -> None:
    sch = Schedule(copy)
    (i,) = sch.get_loops("B")
    sch.annotate(i, "k", 1)
    sch.annotate(i, "k", 2.5)
    assert sch.get(i).annotations == (("k", 2.5),)
    sch.unannotate(i, "k")
    check_schedule(sch, copy, copy)


def test_unannotate_refuses_a_missing_key() -> None:
    sch = Schedule(copy)
    (i,) = sch.get_loops("B")
    sch.annotate(i, "k", 1)
    error = check_refused(
        sch, lambda: sch.unannotate(i, "x"), r"loop 'i' has no annotation 'x' \(annotations: 'k'\)"
    )
    assert error.rule == "annotation"
    check_refused(sch, lambda: sch.unannotate("B", "k"), "block 'B' has no annotation 'k'")


def test_annotate_refuses_a_value_without_a_script_form() -> None:
    sch = Schedule(copy)
    (i,) = sch.get_loops("B")
    error = check_refused(
        sch, lambda: sch.annotate(i, "k", object()), r"annotation value .* is not a bool, int"
    )
    assert error.rule == "argument"


def test_annotate_with_a_dict_value() -> None:
    # TVM accepts a Map as an annotation value (nested lists and strings inside); the trace keeps
    # the dict, and JSON and Python replay rebuild it.
    @T.prim_func
    def expected(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in T.serial(8, annotations={"k": {"b": [1, 2], "a": "x"}}):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                T.block_attr({"layout": {"scale": 1.5, "order": {"inner": 0}}})
                B[vi] = A[vi]

    sch = Schedule(copy)
    (i,) = sch.get_loops("B")
    sch.annotate(i, "k", {"a": "x", "b": [1, 2]})
    sch.annotate("B", "layout", {"order": {"inner": 0}, "scale": 1.5})
    check_schedule(sch, copy, expected)
    assert dict(sch.get(i).annotations)["k"] == (("a", "x"), ("b", (1, 2)))
    assert "ann_val={'a': 'x', 'b': (1, 2)}" in str(sch.trace)
