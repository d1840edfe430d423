"""cache_inplace: expected scripts, trace replay, numeric equality, and the rules it enforces
(the schedule unchanged after a refusal)."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule
from schedule_corpus import two_stage

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def scale(A: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("A"):
            vi = T.axis.spatial(8, i)
            A[vi] = A[vi] * T.float32(2) + T.float32(1)


@T.prim_func
def scale_inplace(A: T.Buffer((8,), "float32")):
    A_local = T.alloc_buffer((8,), scope="local")
    for i in range(8):
        for ax0 in range(1):  # one-iteration copy loops are kept, as TVM writes them
            with T.block("A_local"):
                v0 = T.axis.spatial(8, i + ax0)
                A_local[v0] = A[v0]
        with T.block("A"):
            vi = T.axis.spatial(8, i)
            A_local[vi] = A_local[vi] * T.float32(2) + T.float32(1)
        for ax0 in range(1):
            with T.block("A_local_1"):
                v0 = T.axis.spatial(8, i + ax0)
                A[v0] = A_local[v0]


def test_cache_inplace_stages_the_point_each_iteration_touches() -> None:
    sch = Schedule(scale)
    read, write = sch.cache_inplace("A", 0, "local")
    assert (sch.get(read).name, sch.get(write).name) == ("A_local", "A_local_1")
    assert sch.trace.insts[-1].kind == "cache_inplace"
    check_schedule(sch, scale, scale_inplace)


@T.prim_func
def prefix_sum(D: T.Buffer((16,), "float32")):
    for _i0 in range(1):
        with T.block("ext_call"):
            T.reads(D[0:16])
            T.writes(D[0:16])
            for k in range(15):
                D[k + 1] = D[k + 1] + D[k]


@T.prim_func
def prefix_sum_inplace(D: T.Buffer((16,), "float32")):
    D_shared = T.alloc_buffer((16,), scope="shared")
    for _i0 in range(1):
        for ax0 in range(16):
            with T.block("D_shared"):
                v0 = T.axis.spatial(16, ax0)
                D_shared[v0] = D[v0]
        with T.block("ext_call"):
            T.reads(D_shared[0:16])
            T.writes(D_shared[0:16])
            for k in range(15):
                D_shared[k + 1] = D_shared[k + 1] + D_shared[k]
        for ax0 in range(16):
            with T.block("D_shared_1"):
                v0 = T.axis.spatial(16, ax0)
                D[v0] = D_shared[v0]


def test_cache_inplace_of_a_whole_buffer_block_as_in_tvm() -> None:
    # The shape of TVM's example: an opaque block updating a buffer in place.
    sch = Schedule(prefix_sum)
    sch.cache_inplace("ext_call", "D", "shared")
    check_schedule(sch, prefix_sum, prefix_sum_inplace)


# ---- rules ---------------------------------------------------------------------------------


@T.prim_func
def shift(A: T.Buffer((8,), "float32")):
    for i in range(7):
        with T.block("shift"):
            vi = T.axis.spatial(7, i)
            A[vi + 1] = A[vi]


def test_cache_inplace_needs_a_buffer_read_and_written_over_one_region() -> None:
    sch = Schedule(two_stage)
    error = check_refused(
        sch, lambda: sch.cache_inplace("C", 0, "local"), "reads buffer 'B' but does not write"
    )
    assert error.rule == "inplace-buffer"
    sch = Schedule(shift)
    error = check_refused(sch, lambda: sch.cache_inplace("shift", 0, "local"), "but writes")
    assert error.rule == "inplace-buffer"


def test_bad_arguments() -> None:
    sch = Schedule(scale)
    error = check_refused(sch, lambda: sch.cache_inplace("A", 1, "local"), "out of range")
    assert error.rule == "buffer-index"
    error = check_refused(sch, lambda: sch.cache_inplace("A", 0, "lcal"), "did you mean")
    assert error.rule == "storage-scope"
    error = check_refused(sch, lambda: sch.cache_inplace("A", "B", "local"), "does not read")
    assert error.rule == "buffer-index"
