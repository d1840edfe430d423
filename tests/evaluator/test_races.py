"""The evaluator's race detector: two threads of one launch touching one element of any buffer,
one of them writing, with no barrier that orders them, raise ``DataRace``; and the issue's row
sum, whose reduction loop is bound to threadIdx.x."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest

import tilewright as tw
from evaluator import DataRace, SharedMemoryRace, run_kernel, run_module
from evaluator.machine import Machine
from evaluator.races import Launch
from tilewright.ir import Buffer, BufferStore, Mutator, PrimFunc, intrinsics
from tilewright.schedule import Schedule
from tilewright.script import from_source

SYNC = f"T.evaluate(T.call_intrin('int32', {intrinsics.SYNC_THREADS.name!r}))"
F32 = np.float32


def _kernel(
    body: str, blocks: int = 1, threads: int = 8, n: int = 16, script: str = "tir"
) -> PrimFunc:
    """A kernel over ``blocks`` x ``threads`` (``bx``, ``tx``) with float buffers A and B of
    ``n`` elements; ``body`` is indented as the body of the thread loop."""
    lines = "\n".join("        " + line for line in body.strip().splitlines())
    return from_source(f"""
from tilewright.script import {script} as T
@T.prim_func
def main(A: T.Buffer(({n},), "float32"), B: T.Buffer(({n},), "float32")):
    for bx in T.thread_binding({blocks}, thread="blockIdx.x"):
      for tx in T.thread_binding({threads}, thread="threadIdx.x"):
{lines}
""")


def _run(kernel: PrimFunc, n: int = 16) -> np.ndarray:
    return run_kernel(kernel, np.arange(n, dtype=F32), np.zeros(n, F32)).arrays[1]


# -- one block ---------------------------------------------------------------------------------
def test_two_threads_of_a_block_writing_one_global_element_race():
    message = (
        "B[0]: write/write race: thread (0, 0, 0) of block (0, 0, 0) and thread (1, 0, 0) both "
        "write it with no barrier between them"
    )
    with pytest.raises(DataRace, match=f"^{re.escape(message)}$") as caught:
        _run(_kernel("B[tx // 2] = A[tx]"))
    assert type(caught.value) is DataRace
    race = caught.value
    assert (race.buffer, race.index, race.kind) == ("B", 0, "write/write")
    assert race.threads == (((0, 0, 0), (0, 0, 0)), ((0, 0, 0), (1, 0, 0)))


def test_writing_the_same_value_is_a_race_too():
    with pytest.raises(DataRace, match=r"B\[3\]: write/write race: .* \(0, 0, 0\) .* \(1, 0, 0\)"):
        _run(_kernel("B[3] = T.float32(1)"))


def test_reading_what_another_thread_writes_without_a_barrier_races():
    # Thread 0 reads B[1] before thread 1 writes it: found whichever order the threads run in.
    kernel = _kernel("B[tx] = A[tx]\nA[tx] = B[(tx + 1) % 8]")
    message = (
        r"^B\[1\]: read/write race: thread \(0, 0, 0\) of block \(0, 0, 0\) reads it and thread "
        r"\(1, 0, 0\) writes it with no barrier between them$"
    )
    with pytest.raises(DataRace, match=message):
        _run(kernel)


def test_a_barrier_orders_the_threads_of_its_block():
    got = _run(_kernel(f"B[tx] = A[tx]\n{SYNC}\nA[tx] = B[(tx + 1) % 8]\n{SYNC}\nB[tx] = A[tx]"))
    np.testing.assert_array_equal(got[:8], np.roll(np.arange(8, dtype=F32), -1))


def test_a_thread_reads_and_rewrites_what_it_wrote_itself():
    got = _run(_kernel("B[tx] = A[tx]\nB[tx] = B[tx] * T.float32(2)\nB[tx] = B[tx] + B[tx]"))
    np.testing.assert_array_equal(got[:8], 4 * np.arange(8, dtype=F32))


def test_threads_that_only_read_one_element_do_not_race():
    # A is written too (after a barrier): the kernel's arrays it never writes are not watched.
    got = _run(_kernel(f"B[tx] = A[0] + A[1]\n{SYNC}\nA[tx] = B[tx]"))
    np.testing.assert_array_equal(got[:8], np.full(8, 1, F32))


def test_shared_memory_races_are_shared_memory_races():
    kernel = _kernel("""
S = T.alloc_buffer((8,), "float32", scope="shared")
S[tx] = A[tx]
B[tx] = S[7 - tx]
""")
    message = (
        r"^S\[7\]: read/write race: thread \(0, 0, 0\) of block \(0, 0, 0\) reads it and thread "
        r"\(7, 0, 0\) writes it with no barrier between them$"
    )
    with pytest.raises(SharedMemoryRace, match=message):
        _run(kernel)


def test_a_race_is_named_when_what_a_thread_computed_from_it_fails():
    # Thread 1 reads the index thread 0 stores, unordered: the bad index fails first.
    kernel = from_source("""
from tilewright.script import tir as T
@T.prim_func
def main(I: T.Buffer((2,), "int32"), B: T.Buffer((2,), "float32")):
    for tx in T.thread_binding(2, thread="threadIdx.x"):
        if tx == 0:
            I[0] = 5
        if tx == 1:
            B[I[0]] = T.float32(1)
""")
    with pytest.raises(DataRace, match=r"I\[0\]: read/write race") as caught:
        run_kernel(kernel, np.zeros(2, "int32"), np.zeros(2, F32))
    assert isinstance(caught.value.__cause__, IndexError)


def _meet(sync: intrinsics.Intrinsic) -> None:
    """Two threads as the machine runs them: each writes its element of S, meets the other at
    ``sync``, then reads the other's element; the launch is checked."""
    launch = Launch([1, 1, 1], [2, 1, 1])
    array = launch.watch(np.zeros(2, F32), "S")

    def thread(tx: int) -> Iterator[intrinsics.Intrinsic]:
        array[tx] = F32(1)
        yield sync
        assert array[1 - tx] == 1

    Machine().lockstep([thread(0), thread(1)], launch)
    launch.check()


@pytest.mark.parametrize("sync", [intrinsics.WARP_SHUFFLE_XOR, intrinsics.THREAD_ALLREDUCE])
def test_shuffles_and_allreduces_order_no_memory_access(sync):
    _meet(intrinsics.SYNC_THREADS)
    with pytest.raises(DataRace, match=r"^S\[1\]: read/write race: thread \(0, 0, 0\) .* reads it"):
        _meet(sync)


# -- several blocks ----------------------------------------------------------------------------
def test_blocks_writing_one_element_race_even_with_a_barrier_between():
    kernel = _kernel(f"{SYNC}\nB[tx] = A[bx * 8 + tx]", blocks=2)
    message = (
        r"^B\[0\]: write/write race: thread \(0, 0, 0\) of block \(0, 0, 0\) and thread "
        r"\(0, 0, 0\) of block \(1, 0, 0\) both write it and threads of different blocks are "
        r"never ordered$"
    )
    with pytest.raises(DataRace, match=message):
        _run(kernel)


def test_a_block_reading_what_another_block_writes_races():
    kernel = _kernel(
        f"B[bx * 8 + tx] = A[tx]\n{SYNC}\nif bx == 0:\n    B[tx] = B[15 - tx]", blocks=2
    )
    message = (
        r"^B\[15\]: read/write race: thread \(0, 0, 0\) of block \(0, 0, 0\) reads it and thread "
        r"\(7, 0, 0\) of block \(1, 0, 0\) writes it and threads of different blocks are never "
        r"ordered$"
    )
    with pytest.raises(DataRace, match=message):
        _run(kernel)


def test_blocks_each_with_their_own_elements_and_shared_memory_do_not_race():
    kernel = _kernel(
        f"""
S = T.alloc_buffer((8,), "float32", scope="shared")
S[tx] = A[bx * 8 + tx]
{SYNC}
B[bx * 8 + tx] = S[7 - tx]
""",
        blocks=2,
    )
    np.testing.assert_array_equal(
        _run(kernel), np.arange(16, dtype=F32).reshape(2, 8)[:, ::-1].ravel()
    )


# -- vectors and byte copies ---------------------------------------------------------------------
def test_vector_lanes_are_elements():
    ramps = _kernel("B[T.Ramp(tx * 2, 1, 2)] = A[T.Ramp(tx * 2, 1, 2)]")
    np.testing.assert_array_equal(_run(ramps), np.arange(16, dtype=F32))
    overlapping = _kernel("B[T.Ramp(tx * 2, 1, 3)] = A[T.Ramp(tx, 1, 3)]", threads=5)
    with pytest.raises(DataRace, match=r"^B\[2\]: write/write race: .*\(0, 0, 0\) .*\(1, 0, 0\)"):
        _run(overlapping)
    neighbours = _kernel("B[tx] = T.float32(1)\nA[T.Ramp(tx * 2, 1, 2)] = B[T.Ramp(tx, 1, 2)]")
    message = r"^B\[1\]: read/write race: thread \(0, 0, 0\) .* reads it and thread \(1, 0, 0\)"
    with pytest.raises(DataRace, match=message):
        _run(neighbours)


def _copy(dst: str, src: str, threads: int = 4) -> PrimFunc:
    copy = f"T.cuda.copy_bytes(T.address_of({dst}), T.address_of({src}), 16)"
    return _kernel(copy, threads=threads, script="tirx")


def test_byte_copies_touch_each_element_they_cover():
    np.testing.assert_array_equal(_run(_copy("B[tx * 4]", "A[tx * 4]")), np.arange(16, dtype=F32))
    with pytest.raises(DataRace, match=r"^B\[4\]: write/write race: .*\(0, 0, 0\) .*\(1, 0, 0\)"):
        _run(_copy("B[4]", "A[tx * 4]"))
    message = r"^B\[4\]: read/write race: thread \(0, 0, 0\) .* reads it and thread \(1, 0, 0\)"
    with pytest.raises(DataRace, match=message):
        _run(_copy("B[tx * 4]", "B[4]", threads=2))


def _bytes_of_b(body: str) -> PrimFunc:
    """A kernel of 8 threads whose body stores into ``Bytes``, a uint8 view of float32 B."""
    two = from_source(f"""
from tilewright.script import tir as T
@T.prim_func
def main(B: T.Buffer((4,), "float32"), Bytes: T.Buffer((16,), "uint8")):
    for tx in T.thread_binding(8, thread="threadIdx.x"):
        {body}
""")
    (b_param, b), (_, as_bytes) = two.buffer_map
    view = Buffer("Bytes", as_bytes.shape, as_bytes.dtype, b.data)

    class OntoB(Mutator):
        def visit_BufferStore(self, stmt: BufferStore) -> BufferStore:
            return stmt.replace(buffer=view)

    return two.replace(params=(b_param,), buffer_map=((b_param, b),), body=OntoB().visit(two.body))


def test_an_access_through_a_view_touches_the_elements_it_overlaps():
    # Thread tx < 4 sets the high byte of B[tx]: 1.0 (0x3F800000) becomes 4.0 (0x40800000).
    got = run_kernel(
        _bytes_of_b("if tx < 4:\n            Bytes[tx * 4 + 3] = T.uint8(64)"), np.ones(4, F32)
    )
    np.testing.assert_array_equal(got.arrays[0], np.full(4, 4, F32))
    # Threads 0 and 1 write bytes 0 and 1, both in B[0]: coarser than the hardware.
    with pytest.raises(DataRace, match=r"^B\[0\]: write/write race: .*\(0, 0, 0\) .*\(1, 0, 0\)"):
        run_kernel(_bytes_of_b("Bytes[tx] = T.uint8(0)"), np.ones(4, F32))


# -- the row sum -----------------------------------------------------------------------
ROW_SUM = from_source("""
from tilewright.script import tir as T
@T.prim_func
def main(A: T.Buffer((64, 128), "float32"), B: T.Buffer((64,), "float32")):
    for i, k in T.grid(64, 128):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
""")

# The kernel the pipeline made of it before cross-thread reductions (flattened A, the init under
# k == 0): 128 threads of block i add into B[i] at once.
ROW_SUM_RACING = from_source("""
from tilewright.script import tir as T
@T.prim_func
def main(A: T.Buffer((8192,), "float32"), B: T.Buffer((64,), "float32")):
    for i in T.thread_binding(64, thread="blockIdx.x"):
        for k in T.thread_binding(128, thread="threadIdx.x"):
            if k == 0:
                B[i] = T.float32(0)
            B[i] = B[i] + A[i * 128 + k]
""")


def _row_sum_schedule() -> Schedule:
    sch = Schedule(ROW_SUM)
    i, k = sch.get_loops("B")
    sch.bind(i, "blockIdx.x")
    sch.bind(k, "threadIdx.x")
    return sch


def test_the_row_sum_with_its_reduction_on_threads_races_on_b():
    a = np.random.default_rng(0).standard_normal(8192).astype(F32)
    message = (
        r"^B\[0\]: write/write race: thread \(0, 0, 0\) of block \(0, 0, 0\) and thread "
        r"\(1, 0, 0\) both write it with no barrier between them$"
    )
    with pytest.raises(DataRace, match=message):
        run_kernel(ROW_SUM_RACING, a, np.zeros(64, F32))


def test_the_row_sum_the_pipeline_lowers_is_race_free_and_right():
    a = np.random.default_rng(0).standard_normal((64, 128)).astype(F32)
    lowered = tw.lower(_row_sum_schedule().mod, "cuda")
    got = run_module(lowered, "main", a, np.full(64, np.nan, F32))[1]
    np.testing.assert_allclose(got, a.sum(1), rtol=1e-5, atol=1e-5)
