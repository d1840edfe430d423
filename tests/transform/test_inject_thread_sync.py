"""inject_thread_sync: barriers exactly where shared memory passes between threads."""

# ruff: noqa: E501 - expected scripts are printed IR, kept on one line per statement

from __future__ import annotations

import pytest

from tilewright.backend import lowering_stages
from tilewright.ir import Allocate, For, PrimFunc, SeqStmt, assert_structural_equal
from tilewright.script import from_source
from tilewright.transform import inject_thread_sync
from tilewright.transform.inject_thread_sync import is_sync

from .gpu_programs import load

SYNC = 'T.evaluate(T.call_intrin("int32", "tw.sync_threads"))'


def _parse(body: str, scope: str = "shared") -> PrimFunc:
    text = f'''
from tilewright.script import tir as T
@T.prim_func
def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            S = T.decl_buffer((128,), "float32", scope="{scope}")
'''
    lines = body.strip("\n").splitlines()
    return from_source(text + "\n".join("            " + line for line in lines) + "\n")  # type: ignore[return-value]


def _until_sync(name: str) -> PrimFunc:
    func = load(name)["main"]
    for stage in lowering_stages("cuda"):
        func = stage.run(func)  # type: ignore[assignment]
        if stage.name == "inject_thread_sync":
            return func
    raise AssertionError("no inject_thread_sync stage")


def _count(stmt: object) -> int:
    if isinstance(stmt, SeqStmt):
        return sum(_count(s) for s in stmt.seq)
    if isinstance(stmt, For | Allocate):
        return _count(stmt.body)
    if hasattr(stmt, "then_case"):
        return _count(stmt.then_case) + _count(getattr(stmt, "else_case", None))
    return int(stmt is not None and is_sync(stmt))  # type: ignore[arg-type]


def test_window_sum_gets_one_barrier_between_fetch_and_compute():
    got = _until_sync("Expected_4")
    expected = from_source(f"""
from tilewright.script import tir as T
@T.prim_func
def main(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")):
    T.func_attr({{"global_symbol": "main", "tir.noalias": True}})
    for i_0 in T.thread_binding(8, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            A_shared = T.decl_buffer((130,), "float32", scope="shared")
            for ax0_0 in range(2):
                for ax0_1 in T.thread_binding(128, thread="threadIdx.x"):
                    if ax0_0 * 128 + ax0_1 < 130:
                        A_shared[ax0_0 * 128 + ax0_1] = A[i_0 * 128 + ax0_0 * 128 + ax0_1]
            {SYNC}
            B[i_0 * 128 + i_1] = A_shared[i_1] + A_shared[i_1 + 1] + A_shared[i_1 + 2]
""")
    assert_structural_equal(got, expected)


def test_blocking_with_shared_syncs_after_the_fetch_and_before_the_next_one():
    got = _until_sync("Expected_6")
    thread_loop = got.body.body.body  # i_0, j_0, i_1_j_1_fused
    k_0 = thread_loop.body.body.seq[1]  # C_local allocation; [init, k_0 loop, write back]
    assert k_0.loop_var.name == "k_0"
    first, tiles = k_0.body.seq
    assert is_sync(first)  # before the next iteration's fetch overwrites the tiles
    _, fetch_b, middle, compute = tiles.body.body.seq  # inside A_shared, B_shared
    assert is_sync(middle) and not is_sync(compute) and not is_sync(fetch_b)
    assert _count(got.body) == 2


def test_thread_local_and_global_buffers_need_no_barrier():
    assert _count(_until_sync("Expected_5").body) == 0
    func = _parse("S[tx] = A[tx]\nB[tx] = S[31 - tx]", scope="local")
    assert _count(inject_thread_sync(func).body) == 0


def test_reading_another_threads_element_needs_a_barrier():
    got = inject_thread_sync(_parse("S[tx] = A[tx]\nB[tx] = S[31 - tx]"))
    assert_structural_equal(got, _parse(f"S[tx] = A[tx]\n{SYNC}\nB[tx] = S[31 - tx]"))


def test_writing_what_another_thread_still_reads_needs_a_barrier():
    got = inject_thread_sync(_parse("B[tx] = S[tx + 1]\nS[tx] = A[tx]"))
    assert_structural_equal(got, _parse(f"B[tx] = S[tx + 1]\n{SYNC}\nS[tx] = A[tx]"))


@pytest.mark.parametrize(
    "body",
    [
        "S[tx] = A[tx]\nB[tx] = S[tx]",
        "for j in range(4):\n    S[tx * 4 + j] = A[j]\nfor j in range(4):\n    B[j] = S[tx * 4 + 3 - j]",
        "for j in range(4):\n    S[j * 32 + tx] = A[j]\nB[tx] = S[96 + tx]",
        "S[tx] = A[tx]\nS[tx + 32] = A[tx]\nB[tx] = S[tx] + S[tx + 32]",
    ],
    ids=["same-element", "own-slice", "own-column", "two-writes"],
)
def test_a_thread_reading_its_own_elements_needs_no_barrier(body):
    func = _parse(body)
    assert_structural_equal(inject_thread_sync(func), func)


def test_loop_carried_overwrite_gets_a_barrier_at_the_top_of_the_loop():
    before = "for k in range(4):\n    S[tx] = A[k * 32 + tx]\n    B[k * 32 + tx] = S[31 - tx]"
    after = f"for k in range(4):\n    {SYNC}\n    S[tx] = A[k * 32 + tx]\n    {SYNC}\n    B[k * 32 + tx] = S[31 - tx]"
    assert_structural_equal(inject_thread_sync(_parse(before)), _parse(after))


def test_existing_barriers_are_kept_and_trusted():
    body = f"for k in range(4):\n    S[tx] = A[k * 32 + tx]\n    {SYNC}\n    B[k * 32 + tx] = S[31 - tx]\n    {SYNC}"
    func = _parse(body)
    assert_structural_equal(inject_thread_sync(func), func)


def test_a_write_before_the_loop_is_synced_before_the_loop():
    before = "S[tx] = A[tx]\nfor k in range(4):\n    B[k * 32 + tx] = S[k]"
    after = f"S[tx] = A[tx]\n{SYNC}\nfor k in range(4):\n    B[k * 32 + tx] = S[k]"
    assert_structural_equal(inject_thread_sync(_parse(before)), _parse(after))


def test_barriers_in_a_branch_do_not_count_as_unconditional():
    before = f"S[tx] = A[tx]\nif bx == 0:\n    {SYNC}\nB[tx] = S[31 - tx]"
    after = f"S[tx] = A[tx]\nif bx == 0:\n    {SYNC}\n{SYNC}\nB[tx] = S[31 - tx]"
    assert_structural_equal(inject_thread_sync(_parse(before)), _parse(after))
