"""decompose_padding and pad_einsum: a padded copy split into fill and in-bounds copy, an
einsum's iteration space padded with its producers and consumers (expected scripts, replay
from the trace's Python and JSON, numerics), and what they refuse."""

from __future__ import annotations

import numpy as np
from schedule_checks import check_refused, check_schedule

import tilewright as tw
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def pad(x: T.Buffer((128,), "int32"), y: T.Buffer((140,), "int32")):
    for i in range(140):
        with T.block("block"):
            vi = T.axis.remap("S", [i])
            y[vi] = T.if_then_else(vi >= 6 and vi < 134, x[vi - 6], 0)


@T.prim_func
def pad_decomposed(x: T.Buffer((128,), "int32"), y: T.Buffer((140,), "int32")):
    for i in range(140):
        with T.block("block_pad_const"):
            vi = T.axis.remap("S", [i])
            T.reads()
            T.writes(y[vi])
            y[vi] = 0
    for i in range(128):
        with T.block("block"):
            vi = T.axis.spatial(128, i)
            T.reads(x[vi])
            T.writes(y[vi + 6])
            y[vi + 6] = x[vi]


@T.prim_func
def pad2d(A: T.Buffer((4, 6), "float32"), B: T.Buffer((6, 8), "float32")):
    for i, j in T.grid(6, 8):
        with T.block("P"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = T.if_then_else(
                vi >= 1 and vi < 5 and vj >= 1 and vj < 7, A[vi - 1, vj - 1], T.float32(0)
            )


@T.prim_func
def pad2d_inner(A: T.Buffer((4, 6), "float32"), B: T.Buffer((6, 8), "float32")):
    for i in range(6):
        for j in range(8):
            with T.block("P_pad_const"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads()
                T.writes(B[vi, vj])
                B[vi, vj] = T.float32(0)
        for j in range(6):
            with T.block("P"):
                vi = T.axis.spatial(6, i)
                vj = T.axis.spatial(6, j)
                T.where(1 <= i and i < 5)  # noqa: SIM300 (as TVM prints it)
                T.reads(A[vi - 1, vj])
                T.writes(B[vi, vj + 1])
                B[vi, vj + 1] = A[vi - 1, vj]


@T.prim_func
def einsum(A: T.Buffer((16, 15), "float32"), B: T.Buffer((15, 15), "float32"),
           C: T.Buffer((16, 15), "float32")):  # fmt: skip
    A_shared = T.alloc_buffer((16, 15), scope="shared")
    B_shared = T.alloc_buffer((15, 15), scope="shared")
    C_shared = T.alloc_buffer((16, 15), scope="shared")
    for i0, i1 in T.grid(16, 15):
        with T.block("A"):
            i, j = T.axis.remap("SS", [i0, i1])
            A_shared[i, j] = A[i, j]
    for i0, i1 in T.grid(15, 15):
        with T.block("B"):
            i, j = T.axis.remap("SS", [i0, i1])
            B_shared[i, j] = B[i, j]
    for i0, i1, i2 in T.grid(16, 15, 15):
        with T.block("C_shared"):
            i, j, k = T.axis.remap("SSR", [i0, i1, i2])
            with T.init():
                C_shared[i, j] = T.float32(0)
            C_shared[i, j] = C_shared[i, j] + A_shared[i, k] * B_shared[k, j]
    for i0, i1 in T.grid(16, 15):
        with T.block("C"):
            i, j = T.axis.remap("SS", [i0, i1])
            C[i, j] = C_shared[i, j]


@T.prim_func
def einsum_padded(A: T.Buffer((16, 15), "float32"), B: T.Buffer((15, 15), "float32"),
                  C: T.Buffer((16, 15), "float32")):  # fmt: skip
    A_shared_padded = T.alloc_buffer((16, 16), scope="shared")
    B_shared_padded = T.alloc_buffer((16, 16), scope="shared")
    C_shared_padded = T.alloc_buffer((16, 16), scope="shared")
    for i0, i1 in T.grid(16, 16):
        with T.block("A"):
            i, j = T.axis.remap("SS", [i0, i1])
            T.reads(A[i, j])
            T.writes(A_shared_padded[i, j])
            A_shared_padded[i, j] = T.if_then_else(j < 15, A[i, j], T.float32(0))
    for i0, i1 in T.grid(16, 16):
        with T.block("B"):
            i, j = T.axis.remap("SS", [i0, i1])
            T.reads(B[i, j])
            T.writes(B_shared_padded[i, j])
            B_shared_padded[i, j] = T.if_then_else(i < 15 and j < 15, B[i, j], T.float32(0))
    for i0, i1, i2 in T.grid(16, 16, 16):
        with T.block("C_shared"):
            i, j, k = T.axis.remap("SSR", [i0, i1, i2])
            T.reads(A_shared_padded[i, k], B_shared_padded[k, j])
            T.writes(C_shared_padded[i, j])
            with T.init():
                C_shared_padded[i, j] = T.float32(0)
            C_shared_padded[i, j] = (
                C_shared_padded[i, j] + A_shared_padded[i, k] * B_shared_padded[k, j]
            )
    for i0, i1 in T.grid(16, 15):
        with T.block("C"):
            i, j = T.axis.remap("SS", [i0, i1])
            T.reads(C_shared_padded[i, j])
            T.writes(C[i, j])
            C[i, j] = C_shared_padded[i, j]


@T.prim_func
def einsum_params(A: T.Buffer((8, 7), "float32"), B: T.Buffer((7, 8), "float32"),
                  C: T.Buffer((8, 8), "float32")):  # fmt: skip
    for i0, i1, i2 in T.grid(8, 8, 7):
        with T.block("C"):
            i, j, k = T.axis.remap("SSR", [i0, i1, i2])
            with T.init():
                C[i, j] = T.float32(0)
            C[i, j] = C[i, j] + A[i, k] * B[k, (j + 1) % 8]


def test_decompose_padding_over_the_whole_nest() -> None:
    sch = Schedule(pad)
    block = sch.get_block("block")
    (loop,) = sch.get_loops(block)
    fill = sch.decompose_padding(block, loop)
    check_schedule(sch, pad, pad_decomposed)
    assert sch.get(fill).name == "block_pad_const"


def test_decompose_padding_at_an_inner_loop_guards_the_outer_iterator() -> None:
    sch = Schedule(pad2d)
    _, j = sch.get_loops("P")
    sch.decompose_padding("P", j)
    check_schedule(sch, pad2d, pad2d_inner)


def test_what_decompose_padding_refuses() -> None:
    e = Schedule(einsum)
    (k0, _, _) = e.get_loops("C_shared")
    error = check_refused(e, lambda: e.decompose_padding("C_shared", k0), "if_then_else")
    assert error.rule == "padding-pattern"
    a0, _ = e.get_loops("C")
    error = check_refused(e, lambda: e.decompose_padding("C_shared", a0), "not above")
    assert error.rule == "pad-location"


def test_pad_einsum_pads_producers_and_the_block() -> None:
    sch = Schedule(einsum)
    sch.pad_einsum("C_shared", [0, 1, 1])
    check_schedule(sch, einsum, einsum_padded)
    assert "padding=[0, 1, 1]" in str(sch.trace)


def test_pad_einsum_without_padding_changes_nothing() -> None:
    sch = Schedule(einsum)
    sch.pad_einsum("C_shared", [0, 0, 0])
    check_schedule(sch, einsum, einsum)


def test_what_pad_einsum_refuses() -> None:
    sch = Schedule(einsum)
    error = check_refused(sch, lambda: sch.pad_einsum("C_shared", [1, 1]), "3 iterators")
    assert error.rule == "einsum-pattern"
    error = check_refused(sch, lambda: sch.pad_einsum("C", [1, 0]), "parameter")
    assert error.rule == "pad-producer"
    params = Schedule(einsum_params)
    check_refused(params, lambda: params.pad_einsum("C", [0, 0, 1]), "not by an iterator")


def test_decomposed_padding_builds_for_c_and_computes_the_padding() -> None:
    # GCC 12 at -O3 -march=native miscompiled this guarded copy (if-converted vector loop);
    # the C compiler flags keep the guard a branch.
    sch = Schedule(pad2d)
    _, j = sch.get_loops("P")
    sch.decompose_padding("P", j)
    a = np.random.default_rng(0).standard_normal((4, 6)).astype("float32")
    want = np.zeros((6, 8), "float32")
    want[1:5, 1:7] = a
    b = np.full((6, 8), 7, "float32")
    tw.build(sch.mod, target="c")(a, b)
    np.testing.assert_array_equal(b, want)
