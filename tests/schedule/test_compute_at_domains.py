"""compute_at / reverse_compute_at domains: the moved block's iterators are solved from the
region needed per iteration through its own access map, exactly: a reversed index
(``B[15 - vi]``), a one-to-one ``B[vi // 4, vi % 4]``, floordiv reads, and producers grouped
by ``blockize`` (``B[vi_o * 4 : vi_o * 4 + 4]``) compute only what one iteration needs; a
consumer reading windows runs once, in the iteration that completes its window."""

from __future__ import annotations

import numpy as np
from schedule_checks import check_refused, check_schedule

import tilewright as tw
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def reversed_write(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[15 - vi] = A[vi] * T.float32(2)
    for i0, i1 in T.grid(4, 4):
        with T.block("C"):
            vi = T.axis.spatial(16, i0 * 4 + i1)
            C[vi] = B[vi] + T.float32(1)


def test_compute_at_inverts_a_reversed_write() -> None:
    # C's i0-th iteration reads B[4 * i0 : 4 * i0 + 4], which B's vi in [12 - 4 * i0, 16 - 4 * i0)
    # write: 4 instances per iteration, not all 16.
    @T.prim_func
    def expected(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        B = T.alloc_buffer((16,))
        for i0 in range(4):
            for ax0 in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(16, 12 - i0 * 4 + ax0)
                    B[15 - vi] = A[vi] * T.float32(2)
            for i1 in range(4):
                with T.block("C"):
                    vi = T.axis.spatial(16, i0 * 4 + i1)
                    C[vi] = B[vi] + T.float32(1)

    sch = Schedule(reversed_write)
    i0, _ = sch.get_loops("C")
    sch.compute_at("B", i0)
    check_schedule(sch, reversed_write, expected)


@T.prim_func
def reversed_read(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i0, i1 in T.grid(4, 4):
        with T.block("B"):
            vi = T.axis.spatial(16, i0 * 4 + i1)
            B[vi] = A[vi] * T.float32(2)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[15 - vi] + T.float32(1)


def test_reverse_compute_at_inverts_a_reversed_read() -> None:
    @T.prim_func
    def expected(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        B = T.alloc_buffer((16,))
        for i0 in range(4):
            for i1 in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(16, i0 * 4 + i1)
                    B[vi] = A[vi] * T.float32(2)
            for ax0 in range(4):
                with T.block("C"):
                    vi = T.axis.spatial(16, 12 - i0 * 4 + ax0)
                    C[vi] = B[15 - vi] + T.float32(1)

    sch = Schedule(reversed_read)
    i0, _ = sch.get_loops("B")
    sch.reverse_compute_at("C", i0)
    check_schedule(sch, reversed_read, expected)


@T.prim_func
def folded_write(A: T.Buffer((64,), "float32"), C: T.Buffer((16, 4), "float32")):
    B = T.alloc_buffer((16, 4))
    for i in range(64):
        with T.block("B"):
            vi = T.axis.spatial(64, i)
            B[vi // 4, vi % 4] = A[vi] * T.float32(2)
    for i, j in T.grid(16, 4):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_compute_at_inverts_a_one_to_one_floordiv_floormod_write() -> None:
    # Row i of B is written by vi in [4 * i, 4 * i + 4): the map (vi // 4, vi % 4) inverted.
    @T.prim_func
    def expected(A: T.Buffer((64,), "float32"), C: T.Buffer((16, 4), "float32")):
        B = T.alloc_buffer((16, 4))
        for i in range(16):
            for ax0 in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(64, i * 4 + ax0)
                    B[vi // 4, vi % 4] = A[vi] * T.float32(2)
            for j in range(4):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = B[vi, vj] + T.float32(1)

    sch = Schedule(folded_write)
    i, _ = sch.get_loops("C")
    sch.compute_at("B", i)
    check_schedule(sch, folded_write, expected)


def test_reverse_compute_at_of_a_consumer_of_a_floordiv_floormod_write() -> None:
    @T.prim_func
    def expected(A: T.Buffer((64,), "float32"), C: T.Buffer((16, 4), "float32")):
        B = T.alloc_buffer((16, 4))
        for i in range(64):
            with T.block("B"):
                vi = T.axis.spatial(64, i)
                B[vi // 4, vi % 4] = A[vi] * T.float32(2)
            with T.block("C"):
                vi = T.axis.spatial(16, i // 4)
                vj = T.axis.spatial(4, i % 4)
                C[vi, vj] = B[vi, vj] + T.float32(1)

    sch = Schedule(folded_write)
    (i,) = sch.get_loops("B")
    sch.reverse_compute_at("C", i)
    check_schedule(sch, folded_write, expected)


@T.prim_func
def quarter_read(A: T.Buffer((16,), "float32"), C: T.Buffer((64,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * T.float32(2)
    for i0, i1 in T.grid(8, 8):
        with T.block("C"):
            vi = T.axis.spatial(64, i0 * 8 + i1)
            C[vi] = B[vi // 4] + T.float32(1)


def test_compute_at_under_a_floordiv_read() -> None:
    @T.prim_func
    def expected(A: T.Buffer((16,), "float32"), C: T.Buffer((64,), "float32")):
        B = T.alloc_buffer((16,))
        for i0 in range(8):
            for ax0 in range(2):
                with T.block("B"):
                    vi = T.axis.spatial(16, i0 * 2 + ax0)
                    B[vi] = A[vi] * T.float32(2)
            for i1 in range(8):
                with T.block("C"):
                    vi = T.axis.spatial(64, i0 * 8 + i1)
                    C[vi] = B[vi // 4] + T.float32(1)

    sch = Schedule(quarter_read)
    i0, _ = sch.get_loops("C")
    sch.compute_at("B", i0)
    check_schedule(sch, quarter_read, expected)


@T.prim_func
def two_stage_32(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32))
    for i, j in T.grid(32, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(32, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_compute_at_of_a_blockized_producer_computes_the_tiles_one_iteration_reads() -> None:
    # B_o writes 4 x 4 tiles B[vi_o * 4 : vi_o * 4 + 4, ...]; C's i_0-th iteration reads rows
    # [8 * i_0, 8 * i_0 + 8): the two tile rows 2 * i_0 and 2 * i_0 + 1, every tile column.
    @T.prim_func
    def expected(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
        B = T.alloc_buffer((32, 32))
        for i_0 in range(4):
            for ax0, ax1 in T.grid(2, 8):
                with T.block("B_o"):
                    vi_o = T.axis.spatial(8, i_0 * 2 + ax0)
                    vj_o = T.axis.spatial(8, ax1)
                    T.reads(A[vi_o * 4 : vi_o * 4 + 4, vj_o * 4 : vj_o * 4 + 4])
                    T.writes(B[vi_o * 4 : vi_o * 4 + 4, vj_o * 4 : vj_o * 4 + 4])
                    for i_1, j_1 in T.grid(4, 4):
                        with T.block("B"):
                            vi_i, vj_i = T.axis.remap("SS", [i_1, j_1])
                            B[vi_o * 4 + vi_i, vj_o * 4 + vj_i] = A[
                                vi_o * 4 + vi_i, vj_o * 4 + vj_i
                            ] * T.float32(2)
            for i_1, j in T.grid(8, 32):
                with T.block("C"):
                    vi = T.axis.spatial(32, i_0 * 8 + i_1)
                    vj = T.axis.spatial(32, j)
                    C[vi, vj] = B[vi, vj] + T.float32(1)

    sch = Schedule(two_stage_32)
    i, j = sch.get_loops("B")
    i_0, i_1 = sch.split(i, [None, 4])
    j_0, j_1 = sch.split(j, [None, 4])
    sch.reorder(i_0, j_0, i_1, j_1)
    sch.blockize(i_1)
    ci, _ = sch.get_loops("C")
    ci_0, _ = sch.split(ci, [None, 8])
    sch.compute_at("B_o", ci_0)
    check_schedule(sch, two_stage_32, expected)


@T.prim_func
def layout_trans(A: T.Buffer((1, 3, 5, 5, 16), "float32"), C: T.Buffer((1, 6, 5, 5, 8), "float32")):
    B = T.alloc_buffer((1, 3, 5, 5, 16))
    for i0, i1, i2, i3, i4 in T.grid(1, 3, 5, 5, 16):
        with T.block("compute"):
            v0, v1, v2, v3, v4 = T.axis.remap("SSSSS", [i0, i1, i2, i3, i4])
            B[v0, v1, v2, v3, v4] = A[v0, v1, v2, v3, v4] + T.float32(1)
    for ax0, ax1, ax2, ax3, ax4 in T.grid(1, 6, 5, 5, 8):
        with T.block("T_layout_trans"):
            v0, v1, v2, v3, v4 = T.axis.remap("SSSSS", [ax0, ax1, ax2, ax3, ax4])
            C[v0, v1, v2, v3, v4] = B[v0, (v1 * 8 + v4) // 16, v2, v3, (v1 * 8 + v4) % 16]


def test_reverse_compute_at_of_a_layout_transform_reading_through_floordiv_and_floormod() -> None:
    # Channel block i1 of B (16 channels) holds the consumer's channels 2 * i1 and 2 * i1 + 1.
    @T.prim_func
    def expected(A: T.Buffer((1, 3, 5, 5, 16), "float32"), C: T.Buffer((1, 6, 5, 5, 8), "float32")):
        B = T.alloc_buffer((1, 3, 5, 5, 16))
        for i0, i1 in T.grid(1, 3):
            for i2, i3, i4 in T.grid(5, 5, 16):
                with T.block("compute"):
                    v0, v1, v2, v3, v4 = T.axis.remap("SSSSS", [i0, i1, i2, i3, i4])
                    B[v0, v1, v2, v3, v4] = A[v0, v1, v2, v3, v4] + T.float32(1)
            for ax0, ax1, ax2, ax3 in T.grid(2, 5, 5, 8):
                with T.block("T_layout_trans"):
                    v0 = T.axis.spatial(1, 0)
                    v1 = T.axis.spatial(6, i1 * 2 + ax0)
                    v2, v3, v4 = T.axis.remap("SSS", [ax1, ax2, ax3])
                    C[v0, v1, v2, v3, v4] = B[v0, (v1 * 8 + v4) // 16, v2, v3, (v1 * 8 + v4) % 16]

    sch = Schedule(layout_trans)
    _, i1, _, _, _ = sch.get_loops("compute")
    sch.reverse_compute_at("T_layout_trans", i1)
    check_schedule(sch, layout_trans, expected)


@T.prim_func
def grouped_bias(X: T.Buffer((720, 2), "float32"), Y: T.Buffer((720, 2), "float32")):
    B = T.alloc_buffer((45,))
    for i in range(45):
        with T.block("init"):
            vi = T.axis.spatial(45, i)
            B[vi] = T.Cast("float32", vi)
    for c_o, w, c_i in T.grid(2, 2, 360):
        with T.block("compute"):
            ww = T.axis.spatial(2, w)
            cc = T.axis.spatial(720, c_o * 360 + c_i)
            Y[cc, ww] = X[cc, ww] + B[cc // 16]


def test_compute_at_takes_the_largest_extent_of_a_group_that_does_not_divide() -> None:
    # 360 channels of 16 per group: c_o = 0 reads groups [0, 22], c_o = 1 groups [22, 44]; 23
    # instances per iteration from group 22 * c_o (TVM's bound and start), not all 45.
    @T.prim_func
    def expected(X: T.Buffer((720, 2), "float32"), Y: T.Buffer((720, 2), "float32")):
        B = T.alloc_buffer((45,))
        for c_o in range(2):
            for ax0 in range(23):
                with T.block("init"):
                    vi = T.axis.spatial(45, c_o * 22 + ax0)
                    B[vi] = T.Cast("float32", vi)
            for w, c_i in T.grid(2, 360):
                with T.block("compute"):
                    ww = T.axis.spatial(2, w)
                    cc = T.axis.spatial(720, c_o * 360 + c_i)
                    Y[cc, ww] = X[cc, ww] + B[cc // 16]

    sch = Schedule(grouped_bias)
    c_o, _, _ = sch.get_loops("compute")
    sch.compute_at("init", c_o)
    check_schedule(sch, grouped_bias, expected)


@T.prim_func
def window_of_a_parameter(
    A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32"), C: T.Buffer((8,), "float32")
):
    for i in range(10):
        with T.block("B"):
            vi = T.axis.spatial(10, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + B[vi + 2]


def test_reverse_compute_at_reads_past_one_iteration_of_an_ascending_producer() -> None:
    # Iteration i writes B[i]; C[vi] reads B[vi] and B[vi + 2], so it runs once, in iteration
    # vi + 2, reading B[vi] from an earlier iteration (B is a parameter: its storage stays).
    @T.prim_func
    def expected(
        A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32"), C: T.Buffer((8,), "float32")
    ):
        for i in range(10):
            with T.block("B"):
                vi = T.axis.spatial(10, i)
                B[vi] = A[vi] * T.float32(2)
            with T.block("C"):
                vi = T.axis.spatial(8, i - 2)
                T.where(i - 2 >= 0)
                C[vi] = B[vi] + B[vi + 2]

    sch = Schedule(window_of_a_parameter)
    (i,) = sch.get_loops("B")
    sch.reverse_compute_at("C", i)
    check_schedule(sch, window_of_a_parameter, expected)
    a = np.random.default_rng(0).standard_normal(10).astype("float32")
    b, c = np.zeros(10, "float32"), np.zeros(8, "float32")
    tw.build(sch.mod, target="c")["main"](a, b, c)
    np.testing.assert_allclose(c, 2 * a[:8] + 2 * a[2:], rtol=1e-6)


@T.prim_func
def window_of_a_descending_producer(
    A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32"), C: T.Buffer((8,), "float32")
):
    for i in range(10):
        with T.block("B"):
            vi = T.axis.spatial(10, 9 - i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + B[vi + 2]


def test_reverse_compute_at_refuses_reading_what_a_descending_producer_writes_later() -> None:
    sch = Schedule(window_of_a_descending_producer)
    (i,) = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.reverse_compute_at("C", i), "beyond the region")
    assert error.rule == "region-cover"


@T.prim_func
def straddling_tiles(A: T.Buffer((16,), "float32"), C: T.Buffer((15,), "float32")):
    B = T.alloc_buffer((16,))
    for i0, i1 in T.grid(4, 4):
        with T.block("B"):
            vi = T.axis.spatial(16, i0 * 4 + i1)
            B[vi] = A[vi] * T.float32(2)
    for i in range(15):
        with T.block("C"):
            vi = T.axis.spatial(15, i)
            C[vi] = B[vi] + B[vi + 1]


def test_reverse_compute_at_refuses_a_window_across_tiles_of_an_allocated_buffer() -> None:
    # C[3] reads B[3] (tile 0) and B[4] (tile 1). Computing in each tile only the windows
    # inside it would skip C[3], C[7] and C[11]; computing C[3] with tile 1 reads B[3] from an
    # earlier iteration, which the per-iteration allocation of B after lowering does not keep.
    sch = Schedule(straddling_tiles)
    i0, _ = sch.get_loops("B")
    error = check_refused(
        sch, lambda: sch.reverse_compute_at("C", i0), "only a parameter buffer keeps"
    )
    assert error.rule == "region-cover"
