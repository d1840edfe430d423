"""rolling_buffer: an intermediate buffer of a compute_at cascade folded to the window its
consumer reads, the producer skipping what the previous iteration computed (expected
scripts, replay from the trace's Python and JSON, numerics), and what it refuses."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from schedule_checks import check_refused, check_schedule

import tilewright as tw
from tilewright import config
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def cascade(A: T.Buffer((10, 10), "float32"), C: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((10, 10))
    for i0, i1 in T.grid(2, 2):
        for ax0, ax1 in T.grid(6, 6):
            with T.block("B"):
                v0 = T.axis.spatial(10, i0 * 4 + ax0)
                v1 = T.axis.spatial(10, i1 * 4 + ax1)
                B[v0, v1] = A[v0, v1] * T.float32(2)
        for ax0, ax1, ax2, ax3 in T.grid(4, 4, 3, 3):
            with T.block("C"):
                v0 = T.axis.spatial(8, i0 * 4 + ax0)
                v1 = T.axis.spatial(8, i1 * 4 + ax1)
                r0, r1 = T.axis.remap("RR", [ax2, ax3])
                with T.init():
                    C[v0, v1] = T.float32(0)
                C[v0, v1] = C[v0, v1] + B[v0 + r0, v1 + r1]


@T.prim_func
def cascade_rolled(A: T.Buffer((10, 10), "float32"), C: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((6, 10))
    for i0, i1 in T.grid(2, 2):
        for ax0, ax1 in T.grid(6, 6):
            with T.block("B"):
                v0 = T.axis.spatial(10, i0 * 4 + ax0)
                v1 = T.axis.spatial(10, i1 * 4 + ax1)
                T.where((i0 < 1 or 2 <= ax0) and (i1 < 1 or 2 <= ax1))  # noqa: SIM300
                T.reads(A[v0, v1])
                T.writes(B[v0 % 6, v1])
                B[v0 % 6, v1] = A[v0, v1] * T.float32(2)
        for ax0, ax1, ax2, ax3 in T.grid(4, 4, 3, 3):
            with T.block("C"):
                v0 = T.axis.spatial(8, i0 * 4 + ax0)
                v1 = T.axis.spatial(8, i1 * 4 + ax1)
                r0, r1 = T.axis.remap("RR", [ax2, ax3])
                T.reads(B[(v0 + r0) % 6, v1 + r1])
                T.writes(C[v0, v1])
                with T.init():
                    C[v0, v1] = T.float32(0)
                C[v0, v1] = C[v0, v1] + B[(v0 + r0) % 6, v1 + r1]


@T.prim_func
def separate(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
    B = T.alloc_buffer((10,))
    for i in range(10):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(10):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + T.float32(1)


@T.prim_func
def no_overlap(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i0 in range(2):
        for ax0 in range(4):
            with T.block("B"):
                v0 = T.axis.spatial(8, i0 * 4 + ax0)
                B[v0] = A[v0] * T.float32(2)
        for ax0 in range(4):
            with T.block("C"):
                v0 = T.axis.spatial(8, i0 * 4 + ax0)
                C[v0] = B[v0] + T.float32(1)


def test_roll_the_rows_and_skip_both_overlaps() -> None:
    sch = Schedule(cascade)
    sch.rolling_buffer("B", 0)
    check_schedule(sch, cascade, cascade_rolled)
    assert "write_buffer_index=0" in str(sch.trace)


@pytest.mark.skipif(shutil.which(config.get().cc) is None, reason="no C compiler")
def test_the_rolled_buffer_lives_outside_the_rolling_loop_when_built() -> None:
    sch = Schedule(cascade)
    sch.rolling_buffer("B", 0)
    a = np.random.default_rng(0).standard_normal((10, 10)).astype("float32")
    b = a * 2
    want = np.array([[b[i : i + 3, j : j + 3].sum() for j in range(8)] for i in range(8)])
    arrays = [tw.nd.array(a), tw.nd.array(np.zeros((8, 8), "float32"))]
    tw.build(sch.mod, target="c")["main"](*arrays)
    np.testing.assert_allclose(arrays[1].numpy(), want, rtol=1e-5, atol=1e-5)


def test_the_buffer_by_name() -> None:
    sch = Schedule(cascade)
    sch.rolling_buffer(sch.get_block("B"), "B")
    check_schedule(sch, cascade, cascade_rolled)


def test_what_rolling_buffer_refuses() -> None:
    sch = Schedule(cascade)
    error = check_refused(sch, lambda: sch.rolling_buffer("C", 0), "parameter")
    assert error.rule == "param-buffer"
    apart = Schedule(separate)
    error = check_refused(apart, lambda: apart.rolling_buffer("B", 0), "no loop holds")
    assert error.rule == "rolling-buffer"
    tiles = Schedule(no_overlap)
    check_refused(tiles, lambda: tiles.rolling_buffer("B", 0), "windows that overlap")


@T.prim_func
def reads_ahead(A: T.Buffer((12,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((12,))
    for i0 in range(2):
        for ax0 in range(6):
            with T.block("B"):
                v0 = T.axis.spatial(12, i0 * 4 + ax0)
                B[v0] = A[v0] * T.float32(2)
        for ax0 in range(4):
            with T.block("C"):
                v0 = T.axis.spatial(8, i0 * 4 + ax0)
                C[v0] = B[v0 + 3]


def test_a_consumer_reading_past_the_window_is_refused() -> None:
    sch = Schedule(reads_ahead)
    error = check_refused(sch, lambda: sch.rolling_buffer("B", 0), "outside the window")
    assert error.rule == "rolling-buffer"
