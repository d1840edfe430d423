"""compute_inline and reverse_compute_inline: expected scripts, replay, numerics, and every
rule they enforce."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule
from schedule_corpus import softmax, two_stage

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def inlined(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    for i, j in T.grid(6, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


def test_compute_inline_an_elementwise_producer() -> None:
    sch = Schedule(two_stage)
    sch.compute_inline("B")
    check_schedule(sch, two_stage, inlined)


@T.prim_func
def reverse_inlined(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    for i, j in T.grid(6, 10):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


def test_reverse_compute_inline_an_elementwise_consumer() -> None:
    sch = Schedule(two_stage)
    sch.reverse_compute_inline("C")
    check_schedule(sch, two_stage, reverse_inlined)


def test_compute_inline_into_several_consumers_including_a_reduction() -> None:
    sch = Schedule(softmax)
    sch.compute_inline("exp")
    check_schedule(sch, softmax)
    text = sch.mod["main"].script()
    assert "S[vi] = S[vi] + T.exp(A[vi, vj] - M[vi])" in text
    assert "Out[vi, vj] = T.exp(A[vi, vj] - M[vi]) / S[vi]" in text
    assert "E = T.alloc_buffer" not in text


@T.prim_func
def transposed(A: T.Buffer((4, 6), "float32"), C: T.Buffer((6, 4), "float32")):
    B = T.alloc_buffer((4, 6))
    for i, j in T.grid(4, 6):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
    for j, i in T.grid(6, 4):
        with T.block("C"):
            vj, vi = T.axis.remap("SS", [j, i])
            C[vj, vi] = B[vi, vj] * T.float32(3)


@T.prim_func
def transposed_reverse(A: T.Buffer((4, 6), "float32"), C: T.Buffer((6, 4), "float32")):
    for i, j in T.grid(4, 6):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vj, vi] = (A[vi, vj] + T.float32(1)) * T.float32(3)


def test_inlining_through_a_transposed_access() -> None:
    sch = Schedule(transposed)
    sch.reverse_compute_inline("C")
    check_schedule(sch, transposed, transposed_reverse)
    sch = Schedule(transposed)
    sch.compute_inline("B")
    check_schedule(sch, transposed)
    assert "C[vj, vi] = (A[vi, vj] + T.float32(1.0)) * T.float32(3.0)" in sch.mod.script()


# ---- rules ---------------------------------------------------------------------------------


@T.prim_func
def shifted(A: T.Buffer((8,), "float32"), C: T.Buffer((7,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(7):
        with T.block("C"):
            vi = T.axis.spatial(7, i)
            C[vi] = B[vi + 1] + B[vi]


def test_inline_body_rules() -> None:
    sch = Schedule(softmax)
    error = check_refused(sch, lambda: sch.compute_inline("row_max"), "is a reduction")
    assert error.rule == "inline-body"
    sch = Schedule(shifted)
    error = check_refused(sch, lambda: sch.reverse_compute_inline("C"), "at its iterators only")
    assert error.rule == "inline-body"


def test_inlining_refuses_to_drop_an_output() -> None:
    sch = Schedule(two_stage)
    error = check_refused(sch, lambda: sch.compute_inline("C"), "'C' is a parameter")
    assert error.rule == "output-block"


def test_reverse_compute_inline_needs_one_producer_and_the_only_consumer() -> None:
    sch = Schedule(two_stage)
    error = check_refused(sch, lambda: sch.reverse_compute_inline("B"), "exactly one producer")
    assert error.rule == "single-producer"
    sch = Schedule(softmax)
    error = check_refused(sch, lambda: sch.reverse_compute_inline("norm"), "exactly one")
    assert error.rule == "single-producer"


@T.prim_func
def two_readers(
    A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"), D: T.Buffer((8,), "float32")
):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            D[vi] = B[vi] - T.float32(1)


def test_reverse_compute_inline_refuses_a_shared_buffer() -> None:
    sch = Schedule(two_readers)
    error = check_refused(sch, lambda: sch.reverse_compute_inline("C"), "'D' also reads")
    assert error.rule == "single-consumer"


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
            C[vi] = B[vi] + A[vi]


def test_inlining_refuses_to_move_a_computation_past_a_write() -> None:
    sch = Schedule(overwritten_input)
    error = check_refused(sch, lambda: sch.compute_inline("B"), "block 'X' between")
    assert error.rule == "data-flow"
    sch = Schedule(read_before_write)
    error = check_refused(sch, lambda: sch.reverse_compute_inline("C"), "block 'X' between")
    assert error.rule == "data-flow"


@T.prim_func
def read_before_write(
    A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"), D: T.Buffer((8,), "float32")
):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("X"):
            vi = T.axis.spatial(8, i)
            D[vi] = C[vi]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)


@T.prim_func
def partly_read(A: T.Buffer((10,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((10,))
    for i in range(10):
        with T.block("B"):
            vi = T.axis.spatial(10, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)


def test_reverse_compute_inline_guards_an_overcomputing_producer() -> None:
    # TVM's semantics: the producer keeps its domain and stores only what the consumer read.
    @T.prim_func
    def expected(A: T.Buffer((10,), "float32"), C: T.Buffer((8,), "float32")):
        for i in range(10):
            with T.block("B"):
                vi = T.axis.spatial(10, i)
                T.where(i < 8)
                C[vi] = A[vi] * T.float32(2) + T.float32(1)

    sch = Schedule(partly_read)
    sch.reverse_compute_inline("C")
    check_schedule(sch, partly_read, expected)


def test_reverse_compute_inline_needs_the_producer_over_what_the_consumer_reads() -> None:
    @T.prim_func
    def overread(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
        B = T.alloc_buffer((10,))
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] * T.float32(2)
        for i in range(10):
            with T.block("C"):
                vi = T.axis.spatial(10, i)
                C[vi] = B[vi] + T.float32(1)

    sch = Schedule(overread)
    error = check_refused(sch, lambda: sch.reverse_compute_inline("C"), "should be covered")
    assert error.rule == "inline-body"
    sch = Schedule(partly_read)
    sch.compute_inline("B")  # the other direction is fine: C reads what it needs
    check_schedule(sch, partly_read)


@T.prim_func
def viewed(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i in range(4):
        with T.block("C"):
            vi = T.axis.spatial(4, i)
            T.reads(B[vi * 4 : vi * 4 + 4, 0:16])
            T.writes(C[vi * 4 : vi * 4 + 4, 0:16])
            B_tile = T.match_buffer(B[vi * 4 : vi * 4 + 4, 0:16], (4, 16))
            for ii, jj in T.grid(4, 16):
                C[vi * 4 + ii, jj] = B_tile[ii, jj] + T.float32(1)


def test_compute_inline_refuses_a_consumer_viewing_the_buffer_through_match_buffer() -> None:
    # Loads of B_tile are not loads of B: inlining would leave the view of a removed buffer.
    sch = Schedule(viewed)
    error = check_refused(
        sch,
        lambda: sch.compute_inline("B"),
        "block 'C' views buffer 'B' as 'B_tile' through T.match_buffer",
    )
    assert error.rule == "opaque-access"
    check_schedule(sch, viewed, viewed)


@T.prim_func
def tiled_then_cropped(A: T.Buffer((32, 32), "float32"), C: T.Buffer((30, 29), "float32")):
    B = T.alloc_buffer((4, 4, 8, 8))
    for i0, j0, i1, j1 in T.grid(4, 4, 8, 8):
        with T.block("B"):
            vi, vj, vm, vn = T.axis.remap("SSSS", [i0, j0, i1, j1])
            B[vi, vj, vm, vn] = A[vi * 8 + vm, vj * 8 + vn] * T.float32(2)
    for i, j in T.grid(30, 29):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi // 8, vj // 8, vi % 8, vj % 8] + T.float32(1)


def test_reverse_compute_inline_an_injective_load_whose_divisor_does_not_divide() -> None:
    # vi // 8, vi % 8 over vi < 30 is one to one but 8 does not divide 30: the load is inverted
    # over vi < 32 and the producer keeps only the elements C read (TVM guards them too).
    @T.prim_func
    def expected(A: T.Buffer((32, 32), "float32"), C: T.Buffer((30, 29), "float32")):
        for i0, j0, i1, j1 in T.grid(4, 4, 8, 8):
            with T.block("B"):
                vi, vj, vm, vn = T.axis.remap("SSSS", [i0, j0, i1, j1])
                T.where(i0 * 8 + i1 < 30 and j0 * 8 + j1 < 29)
                C[vi * 8 + vm, vj * 8 + vn] = A[vi * 8 + vm, vj * 8 + vn] * T.float32(
                    2
                ) + T.float32(1)

    sch = Schedule(tiled_then_cropped)
    sch.reverse_compute_inline("C")
    check_schedule(sch, tiled_then_cropped, expected)


def test_reverse_compute_inline_still_refuses_a_padded_load_that_is_not_one_to_one() -> None:
    @T.prim_func
    def folded(A: T.Buffer((32, 32), "float32"), C: T.Buffer((30,), "float32")):
        B = T.alloc_buffer((4, 8))
        for i0, i1 in T.grid(4, 8):
            with T.block("B"):
                vi, vm = T.axis.remap("SS", [i0, i1])
                B[vi, vm] = A[vi, vm] * T.float32(2)
        for i in range(30):
            with T.block("C"):
                vi = T.axis.spatial(30, i)
                C[vi] = B[vi // 8, vi % 4] + T.float32(1)

    sch = Schedule(folded)
    error = check_refused(sch, lambda: sch.reverse_compute_inline("C"), "must read 'B' one to one")
    assert error.rule == "inline-body"
