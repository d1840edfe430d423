"""Where tilewright refused what TVM accepts, or accepted what TVM refuses (issue 15): each
case as TVM 0.27 behaves, checked against an expected script, by trace replay and numerically
(symbolic shapes: built for C and run at two sizes)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from schedule_checks import check_refused, check_schedule

import tilewright as tw
from tilewright import config
from tilewright.script import tir as T
from tilewright.tir import Schedule

# ---- 1. reverse_compute_inline through an affine map ---------------------------------------


@T.prim_func
def reshaped(A: T.Buffer((16, 8), "float32"), C: T.Buffer((2, 8, 8), "float32")):
    B = T.alloc_buffer((16, 8))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j, k in T.grid(2, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            C[vi, vj, vk] = B[vi * 8 + vj, vk] + T.float32(1)


def test_reverse_compute_inline_inverts_an_affine_load() -> None:
    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), C: T.Buffer((2, 8, 8), "float32")):
        for i, j in T.grid(16, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi // 8, vi % 8, vj] = A[vi, vj] * T.float32(2) + T.float32(1)

    sch = Schedule(reshaped)
    sch.reverse_compute_inline("C")
    check_schedule(sch, reshaped, expected)


@T.prim_func
def shifted(A: T.Buffer((10,), "float32"), C: T.Buffer((9,), "float32")):
    B = T.alloc_buffer((10,))
    for i in range(10):
        with T.block("B"):
            vi = T.axis.spatial(10, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(9):
        with T.block("C"):
            vi = T.axis.spatial(9, i)
            C[vi] = B[vi + 1] + T.float32(1)


def test_reverse_compute_inline_of_a_shifted_load_guards_the_producer() -> None:
    @T.prim_func
    def expected(A: T.Buffer((10,), "float32"), C: T.Buffer((9,), "float32")):
        for i in range(10):
            with T.block("B"):
                vi = T.axis.spatial(10, i)
                T.where(i >= 1)
                C[vi - 1] = A[vi] * T.float32(2) + T.float32(1)

    sch = Schedule(shifted)
    sch.reverse_compute_inline("C")
    check_schedule(sch, shifted, expected)


@T.prim_func
def column(A: T.Buffer((8, 2), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8, 2))
    for i, j in T.grid(8, 2):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi, 0] + T.float32(1)


def test_reverse_compute_inline_of_a_constant_index_keeps_that_element_only() -> None:
    # Stricter than TVM, whose inverse ignores the constant index: the producer would store
    # C[vi] for both columns and the last (column 1) would win.
    @T.prim_func
    def expected(A: T.Buffer((8, 2), "float32"), C: T.Buffer((8,), "float32")):
        for i, j in T.grid(8, 2):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.where(j == 0)
                C[vi] = A[vi, vj] * T.float32(2) + T.float32(1)

    sch = Schedule(column)
    sch.reverse_compute_inline("C")
    check_schedule(sch, column, expected)


def test_reverse_compute_inline_refuses_strided_and_overlapping_loads() -> None:
    @T.prim_func
    def strided(A: T.Buffer((16,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((16,))
        for i in range(16):
            with T.block("B"):
                vi = T.axis.spatial(16, i)
                B[vi] = A[vi] * T.float32(2)
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi * 2] + T.float32(1)

    @T.prim_func
    def overlapping(A: T.Buffer((16, 16), "float32"), C: T.Buffer((8, 8), "float32")):
        B = T.alloc_buffer((16, 16))
        for i, j in T.grid(16, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi + vj, vi + vj] + T.float32(1)

    sch = Schedule(strided)
    error = check_refused(sch, lambda: sch.reverse_compute_inline("C"), "strided")
    assert error.rule == "inline-body"
    sch = Schedule(overlapping)
    error = check_refused(sch, lambda: sch.reverse_compute_inline("C"), "one to one")
    assert error.rule == "inline-body"


# ---- 2. compute_inline into a reduction ----------------------------------------------------


@T.prim_func
def padded_matmul(
    A: T.Buffer((6, 6), "float32"), B: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")
):
    P = T.alloc_buffer((8, 8))
    for i, k in T.grid(8, 8):
        with T.block("P"):
            vi, vk = T.axis.remap("SS", [i, k])
            P[vi, vk] = T.if_then_else(
                vi < 6 and vk < 6, A[T.min(vi, 5), T.min(vk, 5)], T.float32(0)
            )
    for i, j, k in T.grid(8, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + P[vi, vk] * B[vk, vj]


def test_compute_inline_into_a_reduction_consumer() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((6, 6), "float32"),
        B: T.Buffer((8, 8), "float32"),
        C: T.Buffer((8, 8), "float32"),
    ):
        for i, j, k in T.grid(8, 8, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = (
                    C[vi, vj]
                    + T.if_then_else(vi < 6 and vk < 6, A[T.min(vi, 5), T.min(vk, 5)], T.float32(0))
                    * B[vk, vj]
                )

    sch = Schedule(padded_matmul)
    sch.compute_inline("P")
    check_schedule(sch, padded_matmul, expected)


# ---- 3. reorder under a predicate ----------------------------------------------------------


@T.prim_func
def tied(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.where(i * 16 + j < 100)
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def split_guarded(A: T.Buffer((10, 4), "float32"), B: T.Buffer((10, 4), "float32")):
    for i_0, i_1, j in T.grid(3, 4, 4):
        with T.block("B"):
            vi = T.axis.spatial(10, i_0 * 4 + i_1)
            vj = T.axis.spatial(4, j)
            T.where(i_0 * 4 + i_1 < 10)
            B[vi, vj] = A[vi, vj] * T.float32(2)


def test_reorder_refuses_loops_tied_by_a_predicate() -> None:
    sch = Schedule(tied)
    i, j = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.reorder(j, i), "no binding equals")
    assert error.rule == "affine-binding"


def test_reorder_keeps_a_split_predicate() -> None:
    @T.prim_func
    def expected(A: T.Buffer((10, 4), "float32"), B: T.Buffer((10, 4), "float32")):
        for j, i_1, i_0 in T.grid(4, 4, 3):
            with T.block("B"):
                vi = T.axis.spatial(10, i_0 * 4 + i_1)
                vj = T.axis.spatial(4, j)
                T.where(i_0 * 4 + i_1 < 10)
                B[vi, vj] = A[vi, vj] * T.float32(2)

    sch = Schedule(split_guarded)
    i0, i1, j = sch.get_loops("B")
    sch.reorder(j, i1, i0)
    check_schedule(sch, split_guarded, expected)


# ---- 4. partially affine bindings ----------------------------------------------------------


@T.prim_func
def squared(A: T.Buffer((14, 4), "float32"), B: T.Buffer((14, 4), "float32")):
    for v0, v1, v2 in T.grid(3, 4, 4):
        with T.block("B"):
            i = T.axis.spatial(14, v0 * v0 + v1)
            j = T.axis.spatial(4, v2)
            B[i, j] = A[i, j] + T.float32(1)


def test_reorder_needs_affine_bindings_below_the_outermost_reordered_loop_only() -> None:
    @T.prim_func
    def expected(A: T.Buffer((14, 4), "float32"), B: T.Buffer((14, 4), "float32")):
        for v0, v2, v1 in T.grid(3, 4, 4):
            with T.block("B"):
                i = T.axis.spatial(14, v0 * v0 + v1)
                j = T.axis.spatial(4, v2)
                B[i, j] = A[i, j] + T.float32(1)

    sch = Schedule(squared)
    v0, v1, v2 = sch.get_loops("B")
    error = check_refused(sch, lambda: sch.reorder(v0, v2, v1), "not affine")
    assert error.rule == "affine-binding"
    sch.reorder(v2, v1)
    check_schedule(sch, squared, expected)


def test_split_and_fuse_accept_non_affine_bindings() -> None:
    @T.prim_func
    def expected(A: T.Buffer((14, 4), "float32"), B: T.Buffer((14, 4), "float32")):
        for v0_0, v0_1, v1_v2_fused in T.grid(2, 2, 16):
            with T.block("B"):
                i = T.axis.spatial(14, (v0_0 * 2 + v0_1) * (v0_0 * 2 + v0_1) + v1_v2_fused // 4)
                j = T.axis.spatial(4, v1_v2_fused % 4)
                T.where(v0_0 * 2 + v0_1 < 3)
                B[i, j] = A[i, j] + T.float32(1)

    sch = Schedule(squared)
    v0, v1, v2 = sch.get_loops("B")
    sch.split(v0, [None, 2])
    sch.fuse(v1, v2)
    check_schedule(sch, squared, expected)


def test_compute_at_needs_affine_bindings_of_a_reduction_only() -> None:
    @T.prim_func
    def rowsum(A: T.Buffer((4, 9), "float32"), C: T.Buffer((4,), "float32")):
        S = T.alloc_buffer((4,))
        for i, k in T.grid(4, 3):
            with T.block("S"):
                vi = T.axis.spatial(4, i)
                vk = T.axis.reduce(9, k * k)
                with T.init():
                    S[vi] = T.float32(0)
                S[vi] = S[vi] + A[vi, vk]
        for i in range(4):
            with T.block("C"):
                vi = T.axis.spatial(4, i)
                C[vi] = S[vi] * T.float32(2)

    sch = Schedule(rowsum)
    (i,) = sch.get_loops("C")
    error = check_refused(sch, lambda: sch.compute_at("S", i), "not affine")
    assert error.rule == "affine-binding"


# ---- 5. cache_read inside a nested block ---------------------------------------------------


@T.prim_func
def nested(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(16):
        with T.block("outer"):
            vi = T.axis.spatial(16, i)
            for j in range(16):
                with T.block("C"):
                    vj = T.axis.spatial(16, j)
                    C[vi, vj] = A[vi, vj] * T.float32(2)


def test_cache_read_in_a_nested_block_copies_what_the_scope_block_reads() -> None:
    # As in TVM: under a block other than the root, the cache holds only the region the
    # scope block reads, indexed from the region's start.
    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in range(16):
            with T.block("outer"):
                vi = T.axis.spatial(16, i)
                T.reads(A[vi, 0:16])
                T.writes(C[vi, 0:16])
                A_local = T.alloc_buffer((1, 16), scope="local")
                for ax0, ax1 in T.grid(1, 16):
                    with T.block("A_local"):
                        v0, v1 = T.axis.remap("SS", [ax0, ax1])
                        A_local[v0, v1] = A[vi + v0, v1]
                for j in range(16):
                    with T.block("C"):
                        vj = T.axis.spatial(16, j)
                        C[vi, vj] = A_local[0, vj] * T.float32(2)

    sch = Schedule(nested)
    sch.cache_read("C", 0, "local")
    check_schedule(sch, nested, expected)


# ---- 6. cache_write of an in-place update --------------------------------------------------


def test_cache_write_refuses_an_in_place_update() -> None:
    @T.prim_func
    def accumulate(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                C[vi] = C[vi] + A[vi]

    sch = Schedule(accumulate)
    error = check_refused(sch, lambda: sch.cache_write("C", 0, "local"), "cache_inplace")
    assert error.rule == "data-flow"


# ---- 7. symbolic shapes --------------------------------------------------------------------


@T.prim_func
def symbolic(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 3))
    C = T.match_buffer(c, (n, 3))
    B = T.alloc_buffer((n, 3))
    for i, j in T.grid(n, 3):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(n, 3):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def _run_for_c(sch: Schedule) -> None:
    if shutil.which(config.get().cc) is None:
        pytest.skip("no C compiler for the CPU target")
    lib = tw.build(sch.mod, target="c")
    for n in (5, 13):
        a = np.random.default_rng(n).standard_normal((n, 3)).astype("float32")
        c = tw.nd.array(np.zeros((n, 3), "float32"))
        lib["main"](tw.nd.array(a), c)
        np.testing.assert_allclose(c.numpy(), a * 2 + 1, rtol=1e-6)


def test_symbolic_split_and_compute_at() -> None:
    @T.prim_func
    def expected(a: T.handle, c: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n, 3))
        C = T.match_buffer(c, (n, 3))
        B = T.alloc_buffer((n, 3))
        for i_0 in range((n + 3) // 4):
            for ax0, ax1 in T.grid(4, 3):
                with T.block("B"):
                    vi = T.axis.spatial(n, i_0 * 4 + ax0)
                    vj = T.axis.spatial(3, ax1)
                    T.where(i_0 * 4 + ax0 < n)
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for i_1, j in T.grid(4, 3):
                with T.block("C"):
                    vi = T.axis.spatial(n, i_0 * 4 + i_1)
                    vj = T.axis.spatial(3, j)
                    T.where(i_0 * 4 + i_1 < n)
                    C[vi, vj] = B[vi, vj] + T.float32(1)

    sch = Schedule(symbolic)
    i, _ = sch.get_loops("C")
    outer, _ = sch.split(i, [None, 4])
    sch.compute_at(sch.get_block("B"), outer)
    check_schedule(sch, symbolic, expected, numeric=False)
    _run_for_c(sch)


def test_symbolic_fuse_then_split() -> None:
    @T.prim_func
    def expected(a: T.handle, c: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n, 3))
        C = T.match_buffer(c, (n, 3))
        B = T.alloc_buffer((n, 3))
        for i, j in T.grid(n, 3):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i_j_fused_0, i_j_fused_1 in T.grid((n * 3 + 7) // 8, 8):
            with T.block("C"):
                vi = T.axis.spatial(n, (i_j_fused_0 * 8 + i_j_fused_1) // 3)
                vj = T.axis.spatial(3, (i_j_fused_0 * 8 + i_j_fused_1) % 3)
                T.where(i_j_fused_0 * 8 + i_j_fused_1 < n * 3)
                C[vi, vj] = B[vi, vj] + T.float32(1)

    sch = Schedule(symbolic)
    fused = sch.fuse(*sch.get_loops("C"))
    sch.split(fused, [None, 8])
    check_schedule(sch, symbolic, expected, numeric=False)
    _run_for_c(sch)
