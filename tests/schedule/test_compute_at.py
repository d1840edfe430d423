"""compute_at and reverse_compute_at: expected scripts (unit loops dropped or kept, reduction
producers, predicates where the region overhangs the domain), replay, numerics, and every rule
they enforce."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule
from schedule_corpus import softmax, two_stage, two_writers

import tilewright as tw
from tilewright.schedule import Trace
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def two_stage_at_row(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    B = T.alloc_buffer((6, 10))
    for i in range(6):
        for ax0 in range(10):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(10):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)


def test_compute_at_a_row_loop() -> None:
    sch = Schedule(two_stage)
    i, _ = sch.get_loops("C")
    sch.compute_at("B", i)
    check_schedule(sch, two_stage, two_stage_at_row)


@T.prim_func
def two_stage_unit_loops(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    B = T.alloc_buffer((6, 10))
    for i, j in T.grid(6, 10):
        for ax0, ax1 in T.grid(1, 1):
            with T.block("B"):
                vi = T.axis.spatial(6, i + ax0)
                vj = T.axis.spatial(10, j + ax1)
                B[vi, vj] = A[vi, vj] * T.float32(2)
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_compute_at_the_innermost_loop_preserving_unit_loops() -> None:
    sch = Schedule(two_stage)
    _, j = sch.get_loops("C")
    sch.compute_at("B", j, preserve_unit_loops=True)
    check_schedule(sch, two_stage, two_stage_unit_loops)


def test_compute_at_a_reduction_producer() -> None:
    sch = Schedule(softmax)
    i, _ = sch.get_loops("exp")
    sch.compute_at("row_max", i)
    check_schedule(sch, softmax)
    text = sch.mod["main"].script()
    assert 'for ax0 in range(12):\n            with T.block("row_max"):' in text
    assert 'vi, vj = T.axis.remap("SR", [i, ax0])' in text


@T.prim_func
def odd(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
    B = T.alloc_buffer((10,))
    for i in range(10):
        with T.block("B"):
            vi = T.axis.spatial(10, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(10):
        with T.block("C"):
            vi = T.axis.spatial(10, i)
            C[vi] = B[vi] + T.float32(1)


@T.prim_func
def odd_at_tile(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
    B = T.alloc_buffer((10,))
    for i_0 in range(3):
        for ax0 in range(4):
            with T.block("B"):
                vi = T.axis.spatial(10, i_0 * 4 + ax0)
                T.where(i_0 * 4 + ax0 < 10)
                B[vi] = A[vi] * T.float32(2)
        for i_1 in range(4):
            with T.block("C"):
                vi = T.axis.spatial(10, i_0 * 4 + i_1)
                T.where(i_0 * 4 + i_1 < 10)
                C[vi] = B[vi] + T.float32(1)


def test_compute_at_adds_a_predicate_where_the_tile_overhangs() -> None:
    sch = Schedule(odd)
    (i,) = sch.get_loops("C")
    i0, _ = sch.split(i, [None, 4])
    sch.compute_at("B", i0)
    check_schedule(sch, odd, odd_at_tile)


@T.prim_func
def two_stage_reverse(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    B = T.alloc_buffer((6, 10))
    for i in range(6):
        for j in range(10):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for ax0 in range(10):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                C[vi, vj] = B[vi, vj] + T.float32(1)


def test_reverse_compute_at_a_row_loop() -> None:
    sch = Schedule(two_stage)
    i, _ = sch.get_loops("B")
    sch.reverse_compute_at("C", i)
    check_schedule(sch, two_stage, two_stage_reverse)


def test_compute_at_keeps_references_to_the_moved_block() -> None:
    sch = Schedule(two_stage)
    block = sch.get_block("B")
    i, _ = sch.get_loops("C")
    sch.compute_at(block, i)
    (ax,) = sch.get_loops(block)[1:]
    sch.vectorize(ax)
    check_schedule(sch, two_stage)
    assert "for ax0 in T.vectorized(10):" in sch.mod.script()


# ---- rules ---------------------------------------------------------------------------------


def test_location_rules() -> None:
    sch = Schedule(two_stage)
    i, _ = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.compute_at("B", i), "'B' is already under loop 'i'")
    assert error.rule == "location"
    sch = Schedule(softmax)
    i, _ = sch.get_loops("row_sum")
    error = check_refused(sch, lambda: sch.compute_at("exp", i), "'norm' of block 'exp' is not")
    assert error.rule == "location"
    i, _ = sch.get_loops("norm")
    error = check_refused(
        sch, lambda: sch.reverse_compute_at("row_sum", i), "'exp' of block 'row_sum' is not"
    )
    assert error.rule == "location"


def test_compute_at_refuses_an_output_block() -> None:
    sch = Schedule(two_stage)
    i, _ = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.compute_at("C", i), "writes the function's output")
    assert error.rule == "output-block"


@T.prim_func
def overwritten_input(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("X"):
            vi = T.axis.spatial(8, i)
            A[vi] = T.float32(0)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi]


def test_compute_at_refuses_to_move_past_a_write_of_an_input() -> None:
    sch = Schedule(overwritten_input)
    (i,) = sch.get_loops("C")
    error = check_refused(sch, lambda: sch.compute_at("B", i), "past block 'X'")
    assert error.rule == "data-flow"


@T.prim_func
def window_after(A: T.Buffer((10,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((10,))
    for i in range(10):
        with T.block("B"):
            vi = T.axis.spatial(10, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + B[vi + 2]


def test_reverse_compute_at_needs_the_region_written_by_then() -> None:
    sch = Schedule(window_after)
    (i,) = sch.get_loops("B")
    # C[vi] also reads B[vi + 2], written two iterations later: C's instance vi runs in
    # iteration vi + 2, reading B[vi] from an earlier one, which lowering (B allocated per
    # iteration of i) would lose. A parameter B is accepted (test_compute_at_domains.py).
    error = check_refused(
        sch, lambda: sch.reverse_compute_at("C", i), "below what one iteration of loop 'i' writes"
    )
    assert error.rule == "region-cover"


@T.prim_func
def strided_tile(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), scope="local")
    for t, v, i in T.grid(4, 2, 2):  # thread t writes {2t, 2t+1, 2t+8, 2t+9}: a strided tile
        with T.block("B"):
            vi = T.axis.spatial(16, v * 8 + t * 2 + i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi]


def test_reverse_compute_at_refuses_a_strided_tile() -> None:
    # The box of one t-iteration's writes is [2t, 2t + 10): read whole, 6 of its 10 elements
    # come from other iterations (wrong once t is a thread and B per-thread storage).
    sch = Schedule(strided_tile)
    t, _, _ = sch.get_loops("B")
    error = check_refused(
        sch, lambda: sch.reverse_compute_at("C", t), "write at most 4 of them there"
    )
    assert error.rule == "region-cover"
    # Where the tile is dense (under v), the move is legal.
    _, v, _ = sch.get_loops("B")
    sch.reverse_compute_at("C", v)


def test_scope_and_root_rules() -> None:
    sch = Schedule(two_stage)
    _, j = sch.get_loops("C")
    sch.blockize(j)
    (j_inner,) = sch.get_loops("C")
    error = check_refused(sch, lambda: sch.compute_at("B", j_inner), "not in the scope")
    assert error.rule == "same-scope"
    i, _ = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.compute_at("root", i), "root block cannot move")
    assert error.rule == "root-block"


def test_compute_at_needs_the_only_writer() -> None:
    sch = Schedule(two_writers)
    (i,) = sch.get_loops("C")
    error = check_refused(sch, lambda: sch.compute_at("B0", i), "also writes buffer 'B'")
    assert error.rule == "single-writer"


@T.prim_func
def scale(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(64):
        with T.block("B"):
            vi = T.axis.spatial(64, i)
            B[vi] = A[vi] * T.float32(2)


def _cached_under_threads(scope: str) -> Schedule:
    sch = Schedule(scale)
    block = sch.get_block("B")
    (i,) = sch.get_loops(block)
    i0, i1, i2 = sch.split(i, [2, 8, 4])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    cache = sch.cache_read(block, 0, scope)
    sch.compute_at(cache, i2)
    check_schedule(sch, scale)
    return sch


def test_thread_axes_are_relaxed_by_storage_scope() -> None:
    # local: one thread's element; shared: every thread of the block; global: every thread.
    local = _cached_under_threads("local").mod.script()
    assert "v0 = T.axis.spatial(64, i_0 * 32 + i_1 * 4 + i_2)" in local
    shared = _cached_under_threads("shared").mod.script()
    assert "for ax0 in range(29):" in shared
    assert "v0 = T.axis.spatial(64, i_0 * 32 + i_2 + ax0)" in shared
    whole = _cached_under_threads("global").mod.script()
    assert "for ax0 in range(61):" in whole
    assert "v0 = T.axis.spatial(64, i_2 + ax0)" in whole


@T.prim_func
def side_by_side(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"),
                 D: T.Buffer((8,), "float32")):  # fmt: skip
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("X"):
            vi = T.axis.spatial(8, i)
            D[vi] = A[vi] * T.float32(3)
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)


@T.prim_func
def side_by_side_first(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"),
                       D: T.Buffer((8,), "float32")):  # fmt: skip
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
        with T.block("X"):
            vi = T.axis.spatial(8, i)
            D[vi] = A[vi] * T.float32(3)
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)


def test_compute_at_index_picks_the_insertion_point() -> None:
    sch = Schedule(side_by_side)
    i = sch.get_loops("C")[0]
    sch.compute_at("B", i, index=-2)  # the first legal point: before X
    check_schedule(sch, side_by_side, side_by_side_first)
    assert "index=-2" in str(sch.trace)
    default = Schedule(side_by_side)
    default.compute_at("B", default.get_loops("C")[0])
    last = Schedule(side_by_side)
    last.compute_at("B", last.get_loops("C")[0], index=-1)
    tw.ir.assert_structural_equal(default.mod, last.mod)  # before C: the last legal point
    assert "index" not in str(default.trace)  # the default is left out of printed traces
    explicit = Schedule(side_by_side)
    explicit.compute_at("B", explicit.get_loops("C")[0], index=0)
    tw.ir.assert_structural_equal(explicit.mod, sch.mod)
    bad = Schedule(side_by_side)
    loop = bad.get_loops("C")[0]
    check_refused(bad, lambda: bad.compute_at("B", loop, index=2), "index 2 is not a legal")


def test_traces_written_before_index_existed_still_load() -> None:
    sch = Schedule(side_by_side)
    sch.compute_at("B", sch.get_loops("C")[0], preserve_unit_loops=False)
    old = sch.trace.as_json()
    for inst in old[0]:
        if inst[0] == "compute_at":
            del inst[2][1]  # the index attribute, as older traces lack it
    replayed = Schedule(side_by_side)
    Trace.from_json(old).apply_to_schedule(replayed)
    tw.ir.assert_structural_equal(replayed.mod, sch.mod)


@T.prim_func
def producer_then_other(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"),
                        D: T.Buffer((8,), "float32")):  # fmt: skip
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
        with T.block("X"):
            vi = T.axis.spatial(8, i)
            D[vi] = A[vi] * T.float32(3)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)


def test_reverse_compute_at_index_minus_one_is_the_last_legal_point() -> None:
    sch = Schedule(producer_then_other)
    sch.reverse_compute_at("C", sch.get_loops("B")[0], index=-1)  # TVM's default
    # B, X, then C in one loop: the same program compute_at(index=-2) makes of side_by_side.
    check_schedule(sch, producer_then_other, side_by_side_first)
    first = Schedule(producer_then_other)
    first.reverse_compute_at("C", first.get_loops("B")[0])  # ours: right after B
    body = first.get(first.get_loops("B")[0]).body
    assert [item.block.name for item in body.seq] == ["B", "C", "X"]
