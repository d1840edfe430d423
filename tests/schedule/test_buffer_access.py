"""unsafe_hide_buffer_access and annotate_buffer_access: a block's declared regions dropped or
replaced (expected scripts, replay from the trace's Python and JSON, numerics: the body is
unchanged), and what they refuse."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.arith.region import block_access_regions
from tilewright.schedule.index_map import IndexMap
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def blur(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            T.reads(B[vi], B[vi + 1], A[vi])
            T.writes(C[vi])
            C[vi] = B[vi] + B[vi + 1] + A[vi]


@T.prim_func
def blur_hidden(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            T.reads(B[vi + 1])
            T.writes(C[vi])
            C[vi] = B[vi] + B[vi + 1] + A[vi]


@T.prim_func
def blur_annotated(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            T.reads(B[vi : vi + 2], B[vi + 1], A[vi])
            T.writes(C[vi])
            T.block_attr({"explicit_read_region": [0]})
            C[vi] = B[vi] + B[vi + 1] + A[vi]


@T.prim_func
def blur_annotated_write(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            T.reads(A[vi])
            T.writes(B[vi])
            T.block_attr({"explicit_write_region": [0]})
            B[vi] = A[vi] * T.float32(2)
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            T.reads(B[vi], B[vi + 1], A[vi])
            T.writes(C[vi])
            C[vi] = B[vi] + B[vi + 1] + A[vi]


def test_hide_reads() -> None:
    sch = Schedule(blur)
    sch.unsafe_hide_buffer_access("C", "read", [0, 2])
    check_schedule(sch, blur, blur_hidden)
    assert 'buf_type="read", buf_index_array=[0, 2]' in str(sch.trace)


def test_hide_a_write() -> None:
    sch = Schedule(blur)
    sch.unsafe_hide_buffer_access("B", "write", [0])
    assert sch.get(sch.get_block("B")).writes == ()
    check_schedule(sch, blur)


def test_annotate_a_read_region_with_pairs() -> None:
    sch = Schedule(blur)
    sch.annotate_buffer_access("C", 0, "read", lambda vi: ((vi, vi + 2),))
    check_schedule(sch, blur, blur_annotated)
    assert "gen_new_ranges=lambda vi: (vi, vi + 2)" in str(sch.trace)


def test_annotate_with_an_index_map_or_its_text() -> None:
    for given in (IndexMap.from_func(lambda v: (v, v + 2)), "lambda v: (v, v + 2)"):
        sch = Schedule(blur)
        sch.annotate_buffer_access("C", 0, "read", given)
        check_schedule(sch, blur, blur_annotated)


def test_annotate_a_write_as_a_point() -> None:
    sch = Schedule(blur)
    sch.annotate_buffer_access("B", 0, "write", lambda vi: (vi,))
    check_schedule(sch, blur, blur_annotated_write)


def test_what_the_access_primitives_refuse() -> None:
    sch = Schedule(blur)
    error = check_refused(sch, lambda: sch.unsafe_hide_buffer_access("C", "both", [0]), "both")
    assert error.rule == "buffer-type"
    error = check_refused(sch, lambda: sch.unsafe_hide_buffer_access("C", "read", [3]), "range")
    assert error.rule == "buffer-index"
    error = check_refused(
        sch, lambda: sch.annotate_buffer_access("C", 0, "read", lambda vi: (vi, vi)), "empty"
    )
    assert error.rule == "access-region"
    check_refused(
        sch,
        lambda: sch.annotate_buffer_access("C", 0, "read", lambda vi: (vi, vi, vi)),
        "3 items for a buffer of 1 dimensions",
    )
    check_refused(
        sch, lambda: sch.annotate_buffer_access("C", 0, "read", lambda a, b: (a, b)), "iterators"
    )


def test_the_annotated_region_drives_compute_at_and_region_inference() -> None:
    sch = Schedule(blur)
    sch.annotate_buffer_access("C", 0, "read", lambda vi: ((vi, vi + 3),))
    reads, _ = block_access_regions(sch.get(sch.get_block("C")))
    assert [int(r.extent) for r in reads[0].region] == [3]  # kept, not re-inferred as 2
    (i,) = sch.get_loops("C")
    sch.compute_at("B", i)
    (_, ax0) = sch.get_loops("B")
    assert int(sch.get(ax0).extent) == 3  # B computes the annotated window
    check_schedule(sch, blur)
