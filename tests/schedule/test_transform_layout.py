"""transform_layout: an allocated buffer stored transposed, split or fused (expected scripts,
replay from the trace's Python and JSON, numerics), its index maps, and what it refuses."""

from __future__ import annotations

import pytest
from schedule_checks import check_refused, check_schedule

from tilewright.schedule.index_map import IndexMap
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def two_stage(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def two_stage_transposed(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((8, 16))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vj, vi] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vj, vi] + T.float32(1)


@T.prim_func
def two_stage_split(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((4, 8, 4))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi // 4, vj, vi % 4] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi // 4, vj, vi % 4] + T.float32(1)


@T.prim_func
def two_stage_flat(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((128,))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi * 8 + vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi * 8 + vj] + T.float32(1)


def test_transpose_a_buffer() -> None:
    sch = Schedule(two_stage)
    sch.transform_layout("B", ("write", 0), lambda i, j: (j, i))
    check_schedule(sch, two_stage, two_stage_transposed)
    assert "index_map=lambda i, j: (j, i)" in str(sch.trace)


def test_split_a_dimension_given_the_buffer_by_name_from_its_reader() -> None:
    sch = Schedule(two_stage)
    sch.transform_layout("C", "B", lambda i, j: (i // 4, j, i % 4))
    check_schedule(sch, two_stage, two_stage_split)


def test_fuse_the_dimensions_given_the_buffer_object() -> None:
    sch = Schedule(two_stage)
    block = sch.get_block("B")
    buffer = sch.get(block).writes[0].buffer
    sch.transform_layout(block, buffer, IndexMap.from_func(lambda i, j: [i * 8 + j]))
    check_schedule(sch, two_stage, two_stage_flat)


def test_regions_of_a_blockized_reader_become_the_box_of_the_new_layout() -> None:
    sch = Schedule(two_stage)
    _, j = sch.get_loops("C")
    outer = sch.blockize(j)  # reads B[vi, 0:8]: a box, not a point
    sch.transform_layout("B", ("write", 0), lambda i, j: (j, i))
    region = sch.get(outer).reads[0].region
    assert [int(r.extent) for r in region] == [8, 1]  # B[0:8, vi] in the new layout
    check_schedule(sch, two_stage)


def test_index_maps_print_and_parse_back() -> None:
    m = IndexMap.from_func(lambda i, k: ((i + 1) * 4 - k // 2, k % 2))
    assert str(m) == "lambda i, k: ((i + 1) * 4 - k // 2, k % 2)"
    assert IndexMap.parse(str(m)) == m
    assert str(IndexMap.parse("lambda i: i * 2")) == "lambda i: (i * 2,)"
    with pytest.raises(ValueError, match="not integer arithmetic"):
        IndexMap.parse("lambda i: (i ** 2,)")
    with pytest.raises(ValueError, match="not a lambda"):
        IndexMap.parse("(1, 2)")


def test_a_pad_value_is_ignored_where_the_layout_has_no_padding() -> None:
    sch = Schedule(two_stage)
    sch.transform_layout("B", ("write", 0), lambda i, j: (j, i), pad_value=0.0)
    check_schedule(sch, two_stage, two_stage_transposed)


def test_what_transform_layout_refuses() -> None:
    sch = Schedule(two_stage)
    error = check_refused(
        sch,
        lambda: sch.transform_layout("B", ("write", 0), lambda i, j: (i, i)),
        "does not re-tile the shape",
    )
    assert error.rule == "index-map"
    check_refused(
        sch,
        lambda: sch.transform_layout("B", ("write", 0), lambda i: (i,)),
        "takes 1 indices; buffer 'B' has 2 dimensions",
    )
    check_refused(sch, lambda: sch.transform_layout("B", "D", lambda i, j: (j, i)), "no buffer")
    check_refused(
        sch,
        lambda: sch.transform_layout("B", ("write", 0), lambda i, j: (j + 1, i)),
        "is not one dimension counted from 0",
    )


@T.prim_func
def viewed(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi]
    with T.block("C"):
        T.reads(B[0:16])
        T.writes(C[0:16])
        Bv = T.match_buffer(B[0:16], (16,))
        for i in range(16):
            C[i] = Bv[i]


def test_a_buffer_viewed_through_match_buffer_keeps_its_layout() -> None:
    sch = Schedule(viewed)
    error = check_refused(
        sch,
        lambda: sch.transform_layout("B", "B", lambda i: (i // 4, i % 4)),
        "block 'C' views buffer 'B' through match_buffer",
    )
    assert error.rule == "match-buffer"


def test_an_index_map_with_star_args_takes_the_indices_the_names_leave() -> None:
    # TVM's IndexMap.from_func: *idx takes the middle indices, keyword-only k the last one.
    sch = Schedule(two_stage)
    sch.transform_layout("B", ("write", 0), lambda *idx, k: (k, *idx))
    check_schedule(sch, two_stage, two_stage_transposed)
    assert "index_map=lambda idx_0, k: (k, idx_0)" in str(sch.trace)
    sch = Schedule(two_stage)
    sch.transform_layout("B", ("write", 0), lambda i, *rest: (i // 4, *rest, i % 4))
    check_schedule(sch, two_stage, two_stage_split)
    assert "index_map=lambda i, rest_0: (i // 4, rest_0, i % 4)" in str(sch.trace)
    # Named indices beyond the buffer's leave *args none, and the map takes too many.
    sch = Schedule(two_stage)
    error = check_refused(
        sch,
        lambda: sch.transform_layout("B", ("write", 0), lambda i, j, *rest, k: (i, j, k)),
        "takes 3 indices",
    )
    assert error.rule == "index-map"


@T.prim_func
def two_stage_int64(
    A: T.Buffer((T.int64(16), T.int64(8)), "float32"),
    C: T.Buffer((T.int64(16), T.int64(8)), "float32"),
):
    B = T.alloc_buffer((T.int64(16), T.int64(8)))
    for i, j in T.grid(T.int64(16), T.int64(8)):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(T.int64(16), T.int64(8)):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def two_stage_int64_split(
    A: T.Buffer((T.int64(16), T.int64(8)), "float32"),
    C: T.Buffer((T.int64(16), T.int64(8)), "float32"),
):
    B = T.alloc_buffer((T.int64(8), T.int64(4), T.int64(4)))
    for i, j in T.grid(T.int64(16), T.int64(8)):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vj, vi // T.int64(4), vi % T.int64(4)] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(T.int64(16), T.int64(8)):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vj, vi // T.int64(4), vi % T.int64(4)] + T.float32(1)


def test_an_int64_buffer_takes_an_index_map_of_int64_indices() -> None:
    # TVM's index dtype legalization: the map's variables and constants take the buffer's
    # index dtype (the trace's text parses back to int64 too).
    sch = Schedule(two_stage_int64)
    sch.transform_layout("B", ("write", 0), lambda i, j: (j, i // 4, i % 4))
    check_schedule(sch, two_stage_int64, two_stage_int64_split)
