"""compact_buffer_allocation: shared/local buffers shrink to what one block / thread uses."""

from __future__ import annotations

import pytest

from tilewright.ir import (
    Allocate,
    BufferLoad,
    BufferStore,
    PrimFunc,
    assert_structural_equal,
    post_order_visit,
)
from tilewright.script import from_source
from tilewright.transform import (
    compact_buffer_allocation,
    inline_unit_loops,
    lower_blocks,
    lower_init_block,
    plan_buffer_allocation,
)

from .gpu_programs import load


def _compacted(func: PrimFunc) -> PrimFunc:
    lowered = inline_unit_loops(lower_blocks(lower_init_block(func)))
    return compact_buffer_allocation(plan_buffer_allocation(lowered))


def _parse(text: str) -> PrimFunc:
    return from_source("from tilewright.script import tir as T\n" + text)  # type: ignore[return-value]


def _shapes(func: PrimFunc) -> dict[str, tuple[int, ...]]:
    found: dict[str, tuple[int, ...]] = {}

    def visit(node: object) -> None:
        if isinstance(node, Allocate):
            found[node.buffer.name] = tuple(int(d) for d in node.buffer.shape)  # type: ignore[call-overload]

    post_order_visit(func.body, visit)  # type: ignore[arg-type]
    return found


def _accesses(func: PrimFunc, name: str) -> list[str]:
    found: list[str] = []

    def visit(node: object) -> None:
        if isinstance(node, BufferLoad | BufferStore) and node.buffer.name == name:
            found.append(", ".join(i.script() for i in node.indices))

    post_order_visit(func.body, visit)  # type: ignore[arg-type]
    return found


def test_window_sum_shared_buffer_holds_130_elements_without_the_block_offset():
    got = _compacted(load("Expected_4")["main"])
    expected = _parse("""
@T.prim_func
def main(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i_0 in T.thread_binding(8, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            A_shared = T.decl_buffer((130,), "float32", scope="shared")
            for ax0_0 in range(2):
                for ax0_1 in T.thread_binding(128, thread="threadIdx.x"):
                    if ax0_0 * 128 + ax0_1 < 130:
                        A_shared[ax0_0 * 128 + ax0_1] = A[i_0 * 128 + (ax0_0 * 128 + ax0_1)]
            B[i_0 * 128 + i_1] = A_shared[i_1] + A_shared[i_1 + 1] + A_shared[i_1 + 2]
""")
    assert_structural_equal(got, expected)


def test_blocking_keeps_an_8x8_accumulator_per_thread():
    got = _compacted(load("Expected_5")["main"])
    assert _shapes(got) == {"C_local": (8, 8)}
    assert sorted(set(_accesses(got, "C_local"))) == ["ax0, ax1", "i_2, j_2", "i_2_init, j_2_init"]


def test_blocking_with_shared_tiles_of_64x8_and_8x64():
    got = _compacted(load("Expected_6")["main"])
    assert _shapes(got) == {"C_local": (8, 8), "A_shared": (64, 8), "B_shared": (8, 64)}
    # The compute reads the tiles relative to the block's corner and the k_0 step.
    assert "i_1_j_1_fused // 8 * 8 + i_2, k_1" in _accesses(got, "A_shared")
    assert "k_1, i_1_j_1_fused % 8 * 8 + j_2" in _accesses(got, "B_shared")


def test_without_the_predicate_the_fetch_covers_two_full_rows_of_threads():
    func = _parse("""
@T.prim_func
def main(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")):
    A_shared = T.alloc_buffer((1027,), "float32", scope="shared")
    for i_0 in T.thread_binding(4, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            for ax0_0 in range(2):
                for ax0_1 in T.thread_binding(128, thread="threadIdx.x"):
                    with T.block("A_shared"):
                        v0 = T.axis.spatial(1027, i_0 * 256 + ax0_0 * 128 + ax0_1)
                        A_shared[v0] = A[v0]
            with T.block("C"):
                vi = T.axis.spatial(1024, i_0 * 128 + i_1)
                B[vi] = A_shared[i_0 * 256 + i_1]
""")
    assert _shapes(_compacted(func)) == {"A_shared": (256,)}


LOCAL_UNDER_TWO_THREAD_LOOPS = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    T_local = T.alloc_buffer((64,), "float32", scope="local")
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("T"):
                vi = T.axis.spatial(64, bx * 32 + tx)
                T_local[vi] = A[vi] * T.float32(2)
        for tx2 in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("B"):
                vi = T.axis.spatial(64, bx * 32 + tx2)
                B[vi] = T_local[vi]
"""


def test_local_buffers_relax_no_thread_index():
    got = _compacted(_parse(LOCAL_UNDER_TWO_THREAD_LOOPS))
    # One element per thread: each thread loop indexes it by its own variable, shifted to 0.
    assert _shapes(got) == {"T_local": (1,)}
    assert _accesses(got, "T_local") == ["0", "0"]


def test_shared_buffers_relax_thread_but_not_block_indices():
    text = LOCAL_UNDER_TWO_THREAD_LOOPS.replace('scope="local"', 'scope="shared"')
    got = _compacted(_parse(text))
    assert _shapes(got) == {"T_local": (32,)}
    assert sorted(_accesses(got, "T_local")) == ["tx", "tx2"]


def test_global_buffers_are_not_compacted():
    text = LOCAL_UNDER_TWO_THREAD_LOOPS.replace(', scope="local"', "")
    got = _compacted(_parse(text))
    assert _shapes(got) == {"T_local": (64,)}


@pytest.mark.parametrize("scope", ["shared", "local"])
def test_symbolic_regions_keep_the_full_extent(scope):
    func = _parse(f'''
@T.prim_func
def main(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (64,), "float32")
    B = T.match_buffer(b, (64,), "float32")
    T_s = T.alloc_buffer((64,), "float32", scope="{scope}")
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for i in range(n):
            with T.block("T"):
                vi = T.axis.spatial(64, i)
                T_s[vi] = A[vi]
        for i in range(64):
            with T.block("B"):
                vi = T.axis.spatial(64, i)
                B[vi] = T_s[vi]
''')
    assert _shapes(_compacted(func)) == {"T_s": (64,)}


def test_regions_over_inner_let_variables_keep_the_full_extent():
    func = lower_blocks(
        _parse("""
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            S = T.decl_buffer((64,), "float32", scope="local")
            for i in range(2):
                x: T.int32 = bx * 32 + tx
                S[x] = A[x]
                B[x] = S[x]
""")
    )
    assert _shapes(compact_buffer_allocation(func)) == {"S": (64,)}


_GLOBAL_CACHE = """
@T.prim_func
def main(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
    C_global = T.alloc_buffer((64, 64))
    for i_0 in T.parallel(8):
        for i_1, j in T.grid(8, 64):
            with T.block("C"):
                vi = T.axis.spatial(64, i_0 * 8 + i_1)
                vj = T.axis.spatial(64, j)
                C_global[vi, vj] = A[vi, vj] * T.float32(2)
        for ax0, ax1 in T.grid(8, 64):
            with T.block("C_global"):
                v0 = T.axis.spatial(64, i_0 * 8 + ax0)
                v1 = T.axis.spatial(64, ax1)
                B[v0, v1] = C_global[v0, v1]
"""


def test_a_global_cache_moves_into_its_loop_and_shrinks_on_the_cpu_only() -> None:
    import numpy as np

    import tilewright as tw

    func = _parse(_GLOBAL_CACHE)
    lowered = inline_unit_loops(lower_blocks(lower_init_block(func)))
    # GPU targets (the defaults): a global buffer stays whole, at the root.
    assert _shapes(compact_buffer_allocation(plan_buffer_allocation(lowered))) == {
        "C_global": (64, 64)
    }
    # CPU targets: one 8 x 64 tile per iteration of the parallel loop.
    cpu = compact_buffer_allocation(
        plan_buffer_allocation(lowered, keep_global=False), scopes=("shared", "local", "global")
    )
    assert _shapes(cpu) == {"C_global": (8, 64)}
    assert "float C_global[512]" in tw.build_artifact(func, target="c").source
    a = np.random.default_rng(0).standard_normal((64, 64)).astype("float32")
    b = np.zeros((64, 64), "float32")
    tw.build(func, target="c")["main"](a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_buffers_named_by_address_keep_their_shape():
    # A TMA copy or a wgmma descriptor takes &S[i] and reaches past it: a region built from
    # the addresses (S[0], S[64]), or from R's plain stores beside its address (R[0], R[64]),
    # would drop what the callee reads.
    func = lower_blocks(
        _parse("""
@T.prim_func
def main(A: T.Buffer((256,), "float16")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        S = T.decl_buffer((256,), "float16", scope="shared")
        R = T.decl_buffer((256,), "float16", scope="shared")
        for i in range(2):
            T.evaluate(T.call_extern("int32", "bulk_load", T.address_of(S[i * 64]), 128))
            R[i * 64] = A[i]
            T.evaluate(T.call_extern("int32", "consume", T.address_of(R[i * 64])))
""")
    )
    # Both keep all 256: `consume` may read R past R[64] (and the plain stores alone would
    # have shrunk R to 65 elements).
    assert _shapes(compact_buffer_allocation(func)) == {"S": (256,), "R": (256,)}
