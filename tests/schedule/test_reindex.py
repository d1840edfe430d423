"""reindex, reindex_cache_read and reindex_cache_write: expected scripts, trace replay,
numeric equality, and every rule they enforce (the schedule unchanged after a refusal)."""

from __future__ import annotations

import pytest
from schedule_checks import check_refused, check_schedule
from schedule_corpus import matmul, two_stage

import tilewright as tw
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def transpose(A: T.Buffer((16, 12), "float32"), B: T.Buffer((12, 16), "float32")):
    for i, j in T.grid(12, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi] * T.float32(2)


@T.prim_func
def transpose_reindex_read(A: T.Buffer((16, 12), "float32"), B: T.Buffer((12, 16), "float32")):
    A_reindex = T.alloc_buffer((12, 16))
    for ax0, ax1 in T.grid(12, 16):
        with T.block("A_reindex"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            A_reindex[v0, v1] = A[v1, v0]
    for i, j in T.grid(12, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A_reindex[vi, vj] * T.float32(2)


@pytest.mark.parametrize("spelling", [("read", 0), "A", "buffer"])
def test_reindex_read_copies_in_the_block_iterators_order(spelling: object) -> None:
    sch = Schedule(transpose)
    block = sch.get_block("B")
    which = sch.get(block).reads[0].buffer if spelling == "buffer" else spelling
    new = sch.reindex(block, which)  # type: ignore[arg-type]
    assert sch.get(new).name == "A_reindex"
    assert 'buffer=["read", 0]' in str(sch.trace)
    check_schedule(sch, transpose, transpose_reindex_read)


@T.prim_func
def matmul_reindex_write(
    A: T.Buffer((8, 10), "float32"),
    B: T.Buffer((10, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    C_reindex = T.alloc_buffer((8, 12))
    for i, j, k in T.grid(8, 12, 10):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C_reindex[vi, vj] = T.float32(0)
            C_reindex[vi, vj] = C_reindex[vi, vj] + A[vi, vk] * B[vk, vj]
    for ax0, ax1 in T.grid(8, 12):
        with T.block("C_reindex"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            C[v0, v1] = C_reindex[v0, v1]


def test_reindex_write_of_a_reduction_copies_back_after_the_nest() -> None:
    sch = Schedule(matmul)
    sch.reindex("C", "C")
    check_schedule(sch, matmul, matmul_reindex_write)


@T.prim_func
def matmul_declared(
    A: T.Buffer((4, 5), "float32"), B: T.Buffer((5, 3), "float32"), C: T.Buffer((4, 3), "float32")
):
    for i, j, k in T.grid(4, 3, 5):
        with T.block("matmul"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def matmul_declared_reindex(
    A: T.Buffer((4, 5), "float32"), B: T.Buffer((5, 3), "float32"), C: T.Buffer((4, 3), "float32")
):
    C_reindex = T.alloc_buffer((4, 3))
    for i, j, k in T.grid(4, 3, 5):
        with T.block("matmul"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(C_reindex[vi, vj], A[vi, vk], B[vk, vj])
            T.writes(C_reindex[vi, vj])
            with T.init():
                C_reindex[vi, vj] = T.float32(0)
            C_reindex[vi, vj] = C_reindex[vi, vj] + A[vi, vk] * B[vk, vj]
    for ax0, ax1 in T.grid(4, 3):
        with T.block("C_reindex"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            C[v0, v1] = C_reindex[v0, v1]


def test_reindex_write_replaces_the_declared_regions_as_tvm() -> None:
    # TVM's matmul lists C among its reads; a block with an init may still be reindexed.
    sch = Schedule(matmul_declared)
    sch.reindex("matmul", ("write", 0))
    check_schedule(sch, matmul_declared, matmul_declared_reindex)


@T.prim_func
def matmul_reindex_b(
    A: T.Buffer((8, 10), "float32"),
    B: T.Buffer((10, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    B_reindex = T.alloc_buffer((12, 10))
    for ax0, ax1 in T.grid(12, 10):
        with T.block("B_reindex"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            B_reindex[v0, v1] = B[v1, v0]
    for i, j, k in T.grid(8, 12, 10):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B_reindex[vj, vk]


def test_reindex_keeps_only_the_iterators_the_access_uses() -> None:
    # B[vk, vj] becomes B_reindex[vj, vk]: block order (i, j, k), vi left out.
    sch = Schedule(matmul)
    sch.reindex("C", ("read", 1))
    check_schedule(sch, matmul, matmul_reindex_b)


@T.prim_func
def folded(A: T.Buffer((6, 5), "float32"), B: T.Buffer((6, 8), "float32")):
    for i, j, k in T.grid(6, 8, 5):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                B[vi, vj] = T.float32(0)
            B[vi, vj] = B[vi, vj] + A[vi, vj // 8 * 3 + vk]


@T.prim_func
def folded_reindex(A: T.Buffer((6, 5), "float32"), B: T.Buffer((6, 8), "float32")):
    A_reindex = T.alloc_buffer((6, 5))
    for ax0, ax1 in T.grid(6, 5):
        with T.block("A_reindex"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            A_reindex[v0, v1] = A[v0, v1]
    for i, j, k in T.grid(6, 8, 5):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                B[vi, vj] = T.float32(0)
            B[vi, vj] = B[vi, vj] + A_reindex[vi, vk]


def test_reindex_simplifies_the_indices_over_the_iterator_domains() -> None:
    # vj // 8 is 0 over vj's domain: the copy does not depend on vj.
    sch = Schedule(folded)
    sch.reindex("B", "A")
    check_schedule(sch, folded, folded_reindex)


# ---- reindex_cache_read / reindex_cache_write ---------------------------------------------


@T.prim_func
def matmul_cache_read(
    A: T.Buffer((8, 10), "float32"),
    B: T.Buffer((10, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    A_shared = T.alloc_buffer((10, 8), scope="shared")
    for i, k in T.grid(8, 10):
        with T.block("A_shared"):
            vi, vk = T.axis.remap("SS", [i, k])
            A_shared[vk, vi] = A[vi, vk]
    for i, j, k in T.grid(8, 12, 10):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A_shared[vk, vi] * B[vk, vj]


def test_reindex_cache_read_lays_the_cache_out_by_the_index_map() -> None:
    sch = Schedule(matmul)
    new = sch.reindex_cache_read("C", 0, "shared", lambda i, j, k: (k, i))
    assert sch.get(new).name == "A_shared"
    assert "index_map=lambda i, j, k: (k, i)" in str(sch.trace)
    check_schedule(sch, matmul, matmul_cache_read)


@T.prim_func
def two_stage_cache_read(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    B = T.alloc_buffer((6, 10))
    B_local = T.alloc_buffer((60,), scope="local")
    for i, j in T.grid(6, 10):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(6, 10):
        with T.block("B_local"):
            vi, vj = T.axis.remap("SS", [i, j])
            B_local[vi * 10 + vj] = B[vi, vj]
    for i, j in T.grid(6, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B_local[vi * 10 + vj] + T.float32(1)


def test_reindex_cache_read_of_an_intermediate_goes_after_its_producer() -> None:
    sch = Schedule(two_stage)
    sch.reindex_cache_read("C", "B", "local", lambda i, j: (i * 10 + j,))
    check_schedule(sch, two_stage, two_stage_cache_read)


@T.prim_func
def matmul_cache_write(
    A: T.Buffer((8, 10), "float32"),
    B: T.Buffer((10, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    C_local = T.alloc_buffer((12, 8), scope="local")
    for i, j, k in T.grid(8, 12, 10):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C_local[vj, vi] = T.float32(0)
            C_local[vj, vi] = C_local[vj, vi] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(8, 12):
        with T.block("C_local"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = C_local[vj, vi]


def test_reindex_cache_write_copies_back_over_the_spatial_loops() -> None:
    sch = Schedule(matmul)
    new = sch.reindex_cache_write("C", 0, "local", "lambda i, j, k: (j, i)")
    assert sch.get(new).name == "C_local"
    check_schedule(sch, matmul, matmul_cache_write)


@T.prim_func
def two_stage_cache_write(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    B = T.alloc_buffer((6, 10))
    B_shared = T.alloc_buffer((10, 6), scope="shared")
    for i, j in T.grid(6, 10):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B_shared[vj, vi] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(6, 10):
        with T.block("B_shared"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = B_shared[vj, vi]
    for i, j in T.grid(6, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_reindex_cache_write_goes_before_the_first_consumer() -> None:
    sch = Schedule(two_stage)
    sch.reindex_cache_write("B", 0, "shared", tw.tir.IndexMap.from_func(lambda i, j: (j, i)))
    check_schedule(sch, two_stage, two_stage_cache_write)


# ---- rules ---------------------------------------------------------------------------------


@T.prim_func
def read_twice(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi] + A[vi, vj]


@T.prim_func
def nested(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for _o in range(1):  # under a loop: a nested block, not the function's root block
        with T.block("outer"):
            for i in range(8):
                with T.block("B"):
                    vi = T.axis.spatial(8, i)
                    B[vi] = A[vi]


@T.prim_func
def inner_loop(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = T.float32(0)
            for k in range(4):
                B[vi] = B[vi] + A[vi, k]


def test_reindex_needs_one_access_pattern_in_a_leaf_block() -> None:
    sch = Schedule(read_twice)
    error = check_refused(sch, lambda: sch.reindex("B", "A"), "at different indices")
    assert error.rule == "reindex-access"
    sch = Schedule(nested)
    error = check_refused(sch, lambda: sch.reindex("outer", "A"), "not a leaf block")
    assert error.rule == "reindex-access"
    sch = Schedule(inner_loop)
    error = check_refused(sch, lambda: sch.reindex("B", "A"), "'k', bound inside the block")
    assert error.rule == "reindex-access"
    error = check_refused(
        sch, lambda: sch.reindex_cache_read("B", "A", "local", lambda i: (i,)), "not a single"
    )
    assert error.rule == "single-point"


@T.prim_func
def in_place(A: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("A"):
            vi = T.axis.spatial(8, i)
            A[vi] = A[vi] * T.float32(2)


def test_reindex_refuses_to_hide_an_in_place_update() -> None:
    sch = Schedule(in_place)
    error = check_refused(sch, lambda: sch.reindex("A", ("read", 0)), "also writes buffer 'A'")
    assert error.rule == "data-flow"
    error = check_refused(sch, lambda: sch.reindex("A", ("write", 0)), "also reads buffer 'A'")
    assert error.rule == "data-flow"


def test_reindex_needs_the_block_alone_in_its_loop_nest() -> None:
    sch = Schedule(two_stage)
    _, j = sch.get_loops("C")
    sch.compute_at("B", j)
    error = check_refused(sch, lambda: sch.reindex("C", "B"), "holds more than its loop nest")
    assert error.rule == "loop-chain"


def test_reindex_cache_iterators_must_match_and_the_map_stay_in_bounds() -> None:
    sch = Schedule(matmul)
    error = check_refused(
        sch,
        lambda: sch.reindex_cache_read("C", 0, "shared", lambda i, j, k: (k, j)),
        "iterator 'vi' of block 'C' appears in the old indices",
    )
    assert error.rule == "reindex-iters"
    error = check_refused(
        sch,
        lambda: sch.reindex_cache_read("C", 0, "shared", lambda i, j, k: (k - 1, i)),
        "ranging over",
    )
    assert error.rule == "reindex-map"
    error = check_refused(
        sch, lambda: sch.reindex_cache_read("C", 0, "shared", lambda i, j: (j, i)), "takes 2"
    )
    assert error.rule == "argument"
    error = check_refused(
        sch, lambda: sch.reindex_cache_write("C", 0, "locl", lambda i, j, k: (i, j)), "did you"
    )
    assert error.rule == "storage-scope"


def test_bad_buffer_arguments() -> None:
    sch = Schedule(transpose)
    error = check_refused(sch, lambda: sch.reindex("B", "X"), "does not access buffer 'X'")
    assert error.rule == "buffer-index"
    error = check_refused(sch, lambda: sch.reindex("B", ("write", 3)), "index 3 is out of range")
    assert error.rule == "buffer-index"
    error = check_refused(sch, lambda: sch.reindex("B", 1.5), "is not")  # type: ignore[arg-type]
    assert error.rule == "argument"
