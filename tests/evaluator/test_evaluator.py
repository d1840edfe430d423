"""The evaluator on the semantics that are easy to get wrong: division of negatives, init
blocks of split reductions, barriers between threads, races and bounds."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import BarrierDivergence, SharedMemoryRace, run, run_kernel
from tilewright.ir import PrimFunc, intrinsics
from tilewright.script import from_source

SYNC = f"T.evaluate(T.call_intrin('int32', {intrinsics.SYNC_THREADS.name!r}))"


def _parse(text: str) -> PrimFunc:
    return from_source("from tilewright.script import tir as T\n" + text)


DIVISIONS = _parse("""
@T.prim_func
def main(A: T.Buffer((8,), "int32"), D: T.Buffer((8,), "int32"), Q: T.Buffer((8, 8), "int32")):
    for i in range(8):
        Q[0, i] = T.floordiv(A[i], D[i])
        Q[1, i] = T.floormod(A[i], D[i])
        Q[2, i] = T.truncdiv(A[i], D[i])
        Q[3, i] = T.truncmod(A[i], D[i])
    for j in range(2):
        Q[4, T.Ramp(j * 4, 1, 4)] = T.floordiv(A[T.Ramp(j * 4, 1, 4)], D[T.Ramp(j * 4, 1, 4)])
        Q[5, T.Ramp(j * 4, 1, 4)] = T.floormod(A[T.Ramp(j * 4, 1, 4)], D[T.Ramp(j * 4, 1, 4)])
        Q[6, T.Ramp(j * 4, 1, 4)] = T.truncdiv(A[T.Ramp(j * 4, 1, 4)], D[T.Ramp(j * 4, 1, 4)])
        Q[7, T.Ramp(j * 4, 1, 4)] = T.truncmod(A[T.Ramp(j * 4, 1, 4)], D[T.Ramp(j * 4, 1, 4)])
""")


def test_floor_and_truncating_division_of_negatives_on_scalars_and_lanes():
    a = np.array([7, -7, 7, -7, 6, -6, 0, -1], "int32")
    d = np.array([2, 2, -2, -2, 3, -3, 5, 4], "int32")
    q = run(DIVISIONS, a, d, np.zeros((8, 8), "int32"))[2]
    floor = [a // d, a % d]
    trunc = [np.trunc(a / d).astype("int32"), np.fmod(a, d)]
    np.testing.assert_array_equal(q, np.stack(floor + trunc + floor + trunc))
    assert list(q[2, :4]) == [3, -3, -3, 3] and list(q[1, :4]) == [1, 1, -1, -1]


SPLIT_SUM = _parse("""
@T.prim_func
def main(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for k0, i, k1 in T.grid(2, 4, 4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            vk = T.axis.reduce(8, k0 * 4 + k1)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
""")


def test_init_runs_once_at_the_start_of_a_split_reordered_reduction():
    a = np.arange(32, dtype="float32").reshape(4, 8)
    got = run(SPLIT_SUM, a, np.full(4, 100.0, "float32"))[1]
    np.testing.assert_array_equal(got, a.sum(1))


def _neighbour_kernel(barrier: str) -> PrimFunc:
    return _parse(f"""
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    S = T.alloc_buffer((8,), "float32", scope="shared")
    for tx in T.thread_binding(8, thread="threadIdx.x"):
        S[tx] = A[tx] * T.float32(2)
        {barrier}
        B[tx] = S[(tx + 1) % 8]
""")


def test_a_barrier_orders_writes_before_other_threads_reads():
    a = np.arange(8, dtype="float32")
    result = run_kernel(_neighbour_kernel(SYNC), a, np.zeros(8, "float32"))
    np.testing.assert_array_equal(result.arrays[1], np.roll(2 * a, -1))
    np.testing.assert_array_equal(result.shared["S"], 2 * a)
    assert result.effects[intrinsics.SYNC_THREADS] == 8


def test_without_the_barrier_reading_a_neighbours_element_races():
    # Thread 0 reads S[1] before thread 1 writes it: found whichever order the threads run in.
    message = (
        r"^S\[1\]: read/write race: thread \(0, 0, 0\) of block \(0, 0, 0\) reads it and "
        r"thread \(1, 0, 0\) writes it with no barrier between them$"
    )
    with pytest.raises(SharedMemoryRace, match=message):
        run_kernel(_neighbour_kernel("pass"), np.ones(8, "float32"), np.zeros(8, "float32"))


def test_a_barrier_some_threads_skip_diverges():
    kernel = _neighbour_kernel(f"if tx < 4:\n            {SYNC}")
    with pytest.raises(BarrierDivergence, match="4 threads wait at a barrier that 4 threads"):
        run_kernel(kernel, np.ones(8, "float32"), np.zeros(8, "float32"))
    with pytest.raises(TypeError, match="needs threads"):
        run(kernel, np.ones(8, "float32"), np.zeros(8, "float32"))


def test_an_index_past_its_dimension_is_reported_even_if_the_flat_offset_fits():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((4, 4), "float32")):
    for i in range(5):
        A[0, i] = T.float32(1)
""")
    with pytest.raises(IndexError, match=r"A: index 4 out of \[0, 4\)"):
        run(func, np.zeros((4, 4), "float32"))


def _byte_copy_kernel(barrier: str) -> PrimFunc:
    return from_source(f"""
from tilewright.script import tirx as T
@T.prim_func
def main(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    S = T.alloc_buffer((32,), "float32", scope="shared")
    for tx in T.thread_binding(8, thread="threadIdx.x"):
        T.cuda.copy_bytes(T.address_of(S[tx * 4]), T.address_of(A[tx * 4]), 16)
        {barrier}
        T.cuda.copy_bytes(T.address_of(B[tx * 4]), T.address_of(S[(tx + 1) % 8 * 4]), 16)
""")


def test_byte_copies_through_shared_memory_need_the_barrier_too():
    a = np.arange(32, dtype="float32")
    result = run_kernel(_byte_copy_kernel(SYNC), a, np.zeros(32, "float32"))
    np.testing.assert_array_equal(result.arrays[1], np.roll(a, -4))
    assert result.effects[intrinsics.COPY_BYTES] == 16
    message = r"^S\[4\]: read/write race: thread \(0, 0, 0\) .* reads it and thread \(1, 0, 0\)"
    with pytest.raises(SharedMemoryRace, match=message):
        run_kernel(_byte_copy_kernel("pass"), a, np.zeros(32, "float32"))
