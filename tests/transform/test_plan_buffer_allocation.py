"""plan_buffer_allocation: each shared/local allocation moves to the loop enclosing all its uses."""

# ruff: noqa: E501 - expected scripts are printed IR, kept on one line per statement

from __future__ import annotations

from tilewright.ir import Allocate, For, PrimFunc, assert_structural_equal
from tilewright.script import from_source
from tilewright.transform import (
    inline_unit_loops,
    lower_blocks,
    lower_init_block,
    plan_buffer_allocation,
)

from .gpu_programs import load


def _lowered(name: str) -> PrimFunc:
    return inline_unit_loops(lower_blocks(lower_init_block(load(name)["main"])))


def _parse(text: str) -> PrimFunc:
    return from_source("from tilewright.script import tir as T\n" + text)  # type: ignore[return-value]


def _allocations(func: PrimFunc) -> dict[str, tuple[str, ...]]:
    """Each allocated buffer → the loop variables around its Allocate, outermost first."""
    found: dict[str, tuple[str, ...]] = {}

    def walk(stmt: object, loops: tuple[str, ...]) -> None:
        if isinstance(stmt, Allocate):
            found[stmt.buffer.name] = loops
            walk(stmt.body, loops)
        elif isinstance(stmt, For):
            walk(stmt.body, (*loops, stmt.loop_var.name))
        elif hasattr(stmt, "seq"):
            for s in stmt.seq:  # type: ignore[attr-defined]
                walk(s, loops)
        elif hasattr(stmt, "then_case"):
            walk(stmt.then_case, loops)  # type: ignore[attr-defined]

    walk(func.body, ())
    return found


def test_window_sum_shared_buffer_moves_into_the_thread_loop():
    got = plan_buffer_allocation(_lowered("Expected_4"))
    expected = _parse("""
@T.prim_func
def main(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i_0 in T.thread_binding(8, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            A_shared = T.decl_buffer((1027,), "float32", scope="shared")
            for ax0_0 in range(2):
                for ax0_1 in T.thread_binding(128, thread="threadIdx.x"):
                    if ax0_0 * 128 + ax0_1 < 130:
                        A_shared[i_0 * 128 + (ax0_0 * 128 + ax0_1)] = A[i_0 * 128 + (ax0_0 * 128 + ax0_1)]
            B[i_0 * 128 + i_1] = A_shared[i_0 * 128 + i_1] + A_shared[i_0 * 128 + i_1 + 1] + A_shared[i_0 * 128 + i_1 + 2]
""")
    assert_structural_equal(got, expected)


def test_local_accumulator_lives_per_thread():
    got = _allocations(plan_buffer_allocation(_lowered("Expected_5")))
    assert got == {"C_local": ("i_0", "j_0", "i_1", "j_1")}


def test_shared_tiles_live_in_the_reduction_loop_and_local_in_the_thread():
    got = _allocations(plan_buffer_allocation(_lowered("Expected_6")))
    assert got == {
        "C_local": ("i_0", "j_0", "i_1_j_1_fused"),
        "A_shared": ("i_0", "j_0", "i_1_j_1_fused", "k_0"),
        "B_shared": ("i_0", "j_0", "i_1_j_1_fused", "k_0"),
    }


def test_global_and_unused_allocations():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    T_global = T.alloc_buffer((8,), "float32")
    unused = T.alloc_buffer((8,), "float32", scope="local")
    for i in range(8):
        with T.block("T"):
            vi = T.axis.spatial(8, i)
            T_global[vi] = A[vi]
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = T_global[vi]
""")
    got = _allocations(plan_buffer_allocation(lower_blocks(func)))
    # Global buffers stay where the block put them; nobody reads `unused`, so it goes.
    assert got == {"T_global": ()}


def test_uses_in_sibling_loops_allocate_at_their_common_parent():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    T_local = T.alloc_buffer((4, 8), "float32", scope="local")
    for i in range(4):
        for j in range(8):
            with T.block("T"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_local[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T_local[vi, vj]
""")
    got = plan_buffer_allocation(lower_blocks(func))
    assert _allocations(got) == {"T_local": ("i",)}
    assert isinstance(got.body, For) and isinstance(got.body.body, Allocate)
