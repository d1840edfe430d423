"""The evaluator's ``cp.async``: a copy lands at the wait that covers its group, and a wait
orders the thread's own copies only."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import SharedMemoryRace, run_kernel
from tilewright.ir import PrimFunc, intrinsics
from tilewright.script import from_source


def _kernel(body: str) -> PrimFunc:
    """32 threads, each copying A[tx] to S[tx] and A[32 + tx] to S[32 + tx] in two groups;
    ``body`` (indented as the thread loop's) runs after, writing B."""
    lines = "\n".join("        " + line for line in body.strip().splitlines())
    return from_source(f"""
from tilewright.script import tir as T
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((96,), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        S = T.decl_buffer((64,), "float32", scope="shared")
        for g in range(2):
            T.evaluate(T.call_intrin(
                "int32", "tw.cuda.cp_async",
                T.call_intrin("handle", "tw.address_of", S[g * 32 + tx]),
                T.call_intrin("handle", "tw.address_of", A[g * 32 + tx]), 4,
            ))
            T.evaluate(T.call_intrin("int32", "tw.cuda.cp_async_commit_group"))
{lines}
""")


WAIT = "T.evaluate(T.call_intrin('int32', 'tw.cuda.cp_async_wait_group', {}))"


def test_copies_land_at_the_wait_that_leaves_their_group_no_longer_in_flight():
    kernel = _kernel(f"""
B[tx] = S[tx]
{WAIT.format(1)}
B[32 + tx] = S[tx] + S[32 + tx]
{WAIT.format(0)}
B[64 + tx] = S[32 + tx]
""")
    a = np.arange(64, dtype="float32")
    result = run_kernel(kernel, a, np.zeros(96, "float32"))
    b = result.arrays[1]
    assert np.isnan(b[:32]).all()  # before any wait: the fresh shared array
    assert np.isnan(b[32:64]).all()  # the second group still in flight
    np.testing.assert_array_equal(b[64:], a[32:])
    assert result.effects[intrinsics.CP_ASYNC] == 64
    assert result.effects[intrinsics.CP_ASYNC_WAIT] == 64


def test_a_wait_orders_only_the_thread_own_copies():
    kernel = _kernel(f"""
{WAIT.format(0)}
B[tx] = S[(tx + 1) % 32]
""")
    message = r"^S\[1\]: read/write race: thread \(0, 0, 0\) .* reads it and thread \(1, 0, 0\)"
    with pytest.raises(SharedMemoryRace, match=message):
        run_kernel(kernel, np.arange(64, dtype="float32"), np.zeros(96, "float32"))
