"""cache_index: expected scripts, trace replay, numeric equality, the common-subexpression
threshold, and the rules it enforces (the schedule unchanged after a refusal)."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def resize(A: T.Buffer((1, 2, 10, 10), "float32"), B: T.Buffer((1, 2, 20, 20), "float32")):
    for i0, i1, i2, i3 in T.grid(1, 2, 20, 20):
        with T.block("A"):
            n, c, vi, vj = T.axis.remap("SSSS", [i0, i1, i2, i3])
            B[n, c, vi, vj] = A[n, c, vi // 4 + vj // 4, vj // 2]


@T.prim_func
def resize_cache_index(
    A: T.Buffer((1, 2, 10, 10), "float32"), B: T.Buffer((1, 2, 20, 20), "float32")
):
    index_var_0 = T.alloc_buffer((20, 20), "int32")
    index_var_1 = T.alloc_buffer((20,), "int32")
    for ax0, ax1 in T.grid(20, 20):
        with T.block("index_0"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            index_var_0[v0, v1] = v0 // 4 + v1 // 4
    for ax0 in range(20):
        with T.block("index_1"):
            v0 = T.axis.spatial(20, ax0)
            index_var_1[v0] = v0 // 2
    for i0, i1, i2, i3 in T.grid(1, 2, 20, 20):
        with T.block("A"):
            n, c, vi, vj = T.axis.remap("SSSS", [i0, i1, i2, i3])
            T.reads(A[n, c, vi // 4 + vj // 4, vj // 2], index_var_0[vi, vj], index_var_1[vj])
            T.writes(B[n, c, vi, vj])
            B[n, c, vi, vj] = A[n, c, index_var_0[vi, vj], index_var_1[vj]]


def test_cache_index_precomputes_each_index_expression() -> None:
    sch = Schedule(resize)
    blocks = sch.cache_index("A", "global")
    assert [sch.get(b).name for b in blocks] == ["index_0", "index_1"]
    assert 'cache_index(block=b0, storage_scope="global", cse_thresh=0)' in str(sch.trace)
    check_schedule(sch, resize, resize_cache_index)


@T.prim_func
def gather(A: T.Buffer((9,), "float32"), B: T.Buffer((4, 6), "float32")):
    for i, j in T.grid(4, 6):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[(vi * 3 + vj) % 8] + A[(vi * 3 + vj) % 8 + 1]


@T.prim_func
def gather_shared(A: T.Buffer((9,), "float32"), B: T.Buffer((4, 6), "float32")):
    index_var_0 = T.alloc_buffer((4, 6), "int32", scope="shared")
    for ax0, ax1 in T.grid(4, 6):
        with T.block("index_0"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            index_var_0[v0, v1] = (v0 * 3 + v1) % 8
    for i, j in T.grid(4, 6):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[(vi * 3 + vj) % 8 : (vi * 3 + vj) % 8 + 2], index_var_0[vi, vj])
            T.writes(B[vi, vj])
            B[vi, vj] = A[index_var_0[vi, vj]] + A[index_var_0[vi, vj] + 1]


@T.prim_func
def gather_all(A: T.Buffer((9,), "float32"), B: T.Buffer((4, 6), "float32")):
    index_var_0 = T.alloc_buffer((4, 6), "int32")
    index_var_1 = T.alloc_buffer((4, 6), "int32")
    for ax0, ax1 in T.grid(4, 6):
        with T.block("index_0"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            index_var_0[v0, v1] = (v0 * 3 + v1) % 8 + 1
    for ax0, ax1 in T.grid(4, 6):
        with T.block("index_1"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            index_var_1[v0, v1] = (v0 * 3 + v1) % 8
    for i, j in T.grid(4, 6):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(
                A[(vi * 3 + vj) % 8 : (vi * 3 + vj) % 8 + 2],
                index_var_0[vi, vj],
                index_var_1[vi, vj],
            )
            T.writes(B[vi, vj])
            B[vi, vj] = A[index_var_1[vi, vj]] + A[index_var_0[vi, vj]]


def test_cse_thresh_keeps_the_expressions_occurring_that_often() -> None:
    # (vi * 3 + vj) % 8 occurs twice, once inside (...) % 8 + 1: only it reaches 2.
    sch = Schedule(gather)
    sch.cache_index("B", "shared", cse_thresh=2)
    check_schedule(sch, gather, gather_shared)
    # Without a threshold each largest expression is cached, the more complex first.
    sch = Schedule(gather)
    sch.cache_index("B", "global")
    check_schedule(sch, gather, gather_all)


@T.prim_func
def ramp(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * (T.Cast("float32", vi) * T.float32(0.5) + T.float32(1))


@T.prim_func
def ramp_cached(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    index_var_0 = T.alloc_buffer((8,))
    for ax0 in range(8):
        with T.block("index_0"):
            v0 = T.axis.spatial(8, ax0)
            index_var_0[v0] = T.Cast("float32", v0) * T.float32(0.5) + T.float32(1)
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            T.reads(A[vi], index_var_0[vi])
            T.writes(B[vi])
            B[vi] = A[vi] * index_var_0[vi]


def test_cache_index_caches_float_computations_of_iterators_too() -> None:
    sch = Schedule(ramp)
    sch.cache_index("B", "global")
    check_schedule(sch, ramp, ramp_cached)


@T.prim_func
def plain(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(1)


def test_nothing_to_cache_changes_nothing() -> None:
    sch = Schedule(plain)
    assert sch.cache_index("B", "global") == []
    check_schedule(sch, plain, plain)


# ---- rules ---------------------------------------------------------------------------------


@T.prim_func
def under_block(A: T.Buffer((4,), "float32"), B: T.Buffer((8,), "float32")):
    for io in range(2):
        with T.block("outer"):
            vo = T.axis.spatial(2, io)
            for ii in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(8, vo * 4 + ii)
                    B[vi] = A[vi // 2]


def test_cache_index_needs_iterators_bound_to_loops_of_the_scope() -> None:
    sch = Schedule(under_block)
    error = check_refused(
        sch, lambda: sch.cache_index("B", "global"), "uses 'vo', not a loop between"
    )
    assert error.rule == "cache-index"


def test_bad_arguments() -> None:
    sch = Schedule(resize)
    error = check_refused(sch, lambda: sch.cache_index("A", "global", -1), "negative")
    assert error.rule == "argument"
    error = check_refused(sch, lambda: sch.cache_index("A", "globl"), "did you mean")
    assert error.rule == "storage-scope"
    error = check_refused(sch, lambda: sch.cache_index("root", "global"), "root block")
    assert error.rule == "root-block"
