"""cache_read, cache_write, set_scope and storage_align: expected scripts, trace replay,
numeric equality, and every rule they enforce (the schedule unchanged after a refusal)."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule
from schedule_corpus import matmul, two_stage, two_writers

import tilewright as tw
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def window(A: T.Buffer((10,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + A[vi + 1] + A[vi + 2]


@T.prim_func
def window_shared(A: T.Buffer((10,), "float32"), B: T.Buffer((8,), "float32")):
    A_shared = T.alloc_buffer((10,), scope="shared")
    for ax0 in range(10):
        with T.block("A_shared"):
            v0 = T.axis.spatial(10, ax0)
            A_shared[v0] = A[v0]
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A_shared[vi] + A_shared[vi + 1] + A_shared[vi + 2]


def test_cache_read_of_an_input_copies_the_whole_buffer_first() -> None:
    sch = Schedule(window)
    cache = sch.cache_read("B", 0, "shared")
    assert sch.get(cache).name == "A_shared"
    check_schedule(sch, window, window_shared)


@T.prim_func
def two_stage_read_local(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    B = T.alloc_buffer((6, 10))
    B_local = T.alloc_buffer((6, 10), scope="local")
    for i, j in T.grid(6, 10):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for ax0, ax1 in T.grid(6, 10):
        with T.block("B_local"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            B_local[v0, v1] = B[v0, v1]
    for i, j in T.grid(6, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B_local[vi, vj] + T.float32(1)


def test_cache_read_of_an_intermediate_goes_after_its_producer() -> None:
    sch = Schedule(two_stage)
    sch.cache_read("C", 0, "local")
    check_schedule(sch, two_stage, two_stage_read_local)


@T.prim_func
def two_consumers(
    A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"), D: T.Buffer((8,), "float32")
):
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            D[vi] = A[vi] + T.float32(1)


@T.prim_func
def only_d_cached(
    A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"), D: T.Buffer((8,), "float32")
):
    A_shared = T.alloc_buffer((8,), scope="shared")
    for ax0 in range(8):
        with T.block("A_shared"):
            v0 = T.axis.spatial(8, ax0)
            A_shared[v0] = A[v0]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            D[vi] = A_shared[vi] + T.float32(1)


def test_cache_read_for_chosen_consumers_only() -> None:
    sch = Schedule(two_consumers)
    sch.cache_read("C", 0, "shared", consumer_blocks=["D"])
    check_schedule(sch, two_consumers, only_d_cached)
    sch = Schedule(two_consumers)
    sch.cache_read("C", 0, "shared")
    text = sch.mod.script()
    assert "C[vi] = A_shared[vi] * T.float32(2.0)" in text
    assert "D[vi] = A_shared[vi] + T.float32(1.0)" in text


@T.prim_func
def two_stage_write_local(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    B = T.alloc_buffer((6, 10))
    B_local = T.alloc_buffer((6, 10), scope="local")
    for i, j in T.grid(6, 10):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B_local[vi, vj] = A[vi, vj] * T.float32(2)
    for ax0, ax1 in T.grid(6, 10):
        with T.block("B_local"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            B[v0, v1] = B_local[v0, v1]
    for i, j in T.grid(6, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_cache_write_copies_back_right_after_the_block() -> None:
    sch = Schedule(two_stage)
    cache = sch.cache_write("B", 0, "local")
    assert sch.get(cache).name == "B_local"
    check_schedule(sch, two_stage, two_stage_write_local)


@T.prim_func
def matmul_local(
    A: T.Buffer((8, 10), "float32"),
    B: T.Buffer((10, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    C_local = T.alloc_buffer((8, 12), scope="local")
    for i, j in T.grid(8, 12):
        for k in range(10):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C_local[vi, vj] = T.float32(0)
                C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
        with T.block("C_local"):
            v0, v1 = T.axis.remap("SS", [i, j])
            C[v0, v1] = C_local[v0, v1]


def test_cache_write_of_a_reduction_then_reverse_compute_at() -> None:
    sch = Schedule(matmul)
    cache = sch.cache_write("C", 0, "local")
    _, j, _ = sch.get_loops("C")
    sch.reverse_compute_at(cache, j)
    check_schedule(sch, matmul, matmul_local)


@T.prim_func
def two_stage_shared(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    B = T.alloc_buffer((6, 10), scope="shared")
    for i, j in T.grid(6, 10):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(6, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_set_scope_changes_the_allocation() -> None:
    sch = Schedule(two_stage)
    sch.set_scope("B", 0, "shared")
    check_schedule(sch, two_stage, two_stage_shared)


@T.prim_func
def two_stage_aligned(A: T.Buffer((6, 10), "float32"), C: T.Buffer((6, 10), "float32")):
    B = T.alloc_buffer((6, 10))
    for i, j in T.grid(6, 10):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi, vj])
            T.writes(B[vi, vj])
            T.block_attr({"buffer_dim_align": [[0, 0, 16, 1]]})
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(6, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_storage_align_annotates_the_block_and_replaces_an_earlier_request() -> None:
    sch = Schedule(two_stage)
    sch.storage_align("B", 0, axis=0, factor=8, offset=3)
    sch.storage_align("B", 0, axis=-2, factor=16, offset=1)
    check_schedule(sch, two_stage, two_stage_aligned)


# ---- rules ---------------------------------------------------------------------------------


def test_buffer_index_out_of_range() -> None:
    sch = Schedule(two_stage)
    error = check_refused(sch, lambda: sch.cache_read("C", 3, "shared"), "index 3 is out of range")
    assert error.rule == "buffer-index"
    error = check_refused(sch, lambda: sch.cache_write("C", 1, "local"), "index 1 is out of range")
    assert error.rule == "buffer-index"


def test_cache_write_needs_the_only_writer() -> None:
    sch = Schedule(two_writers)
    error = check_refused(sch, lambda: sch.cache_write("B0", 0, "local"), "also writes buffer 'B'")
    assert error.rule == "single-writer"


def test_cache_read_refuses_a_consumer_that_also_writes_the_buffer() -> None:
    sch = Schedule(two_writers)
    error = check_refused(
        sch, lambda: sch.cache_read("C", 0, "local", consumer_blocks=["B1"]), "both reads and"
    )
    assert error.rule == "data-flow"


def test_set_scope_and_storage_align_need_an_allocated_buffer() -> None:
    sch = Schedule(two_stage)
    error = check_refused(sch, lambda: sch.set_scope("C", 0, "shared"), "'C' is a parameter")
    assert error.rule == "param-buffer"
    error = check_refused(sch, lambda: sch.storage_align("C", 0, 0, 16, 1), "'C' is a parameter")
    assert error.rule == "param-buffer"


def test_bad_arguments() -> None:
    sch = Schedule(two_stage)
    error = check_refused(sch, lambda: sch.cache_read("C", 0, 3), "storage scope 3")  # type: ignore[arg-type]
    assert error.rule == "argument"
    error = check_refused(
        sch, lambda: sch.storage_align("B", 0, 2, 16, 1), "axis 2 is out of range"
    )
    assert error.rule == "argument"
    error = check_refused(sch, lambda: sch.storage_align("B", 0, 0, 16, 16), "offset 16")
    assert error.rule == "argument"


def test_unknown_storage_scopes_are_refused_with_a_suggestion() -> None:
    sch = Schedule(two_stage)
    error = check_refused(
        sch, lambda: sch.cache_read("C", 0, "shard"), r"unknown storage scope 'shard' \(did you"
    )
    assert error.rule == "storage-scope"
    assert "'shared'" in error.detail and "rule storage-scope" in str(error)
    error = check_refused(sch, lambda: sch.cache_write("B", 0, "locl"), "did you mean 'local'")
    assert error.rule == "storage-scope"
    error = check_refused(sch, lambda: sch.set_scope("B", 0, "Shared"), "did you mean 'shared'")
    assert error.rule == "storage-scope"
    error = check_refused(sch, lambda: sch.cache_read("C", 0, "texture"), "expected one of")
    assert error.rule == "storage-scope"


def test_every_known_storage_scope_is_accepted() -> None:
    from tilewright.ir.scope import STORAGE_SCOPES

    for scope in STORAGE_SCOPES:
        sch = Schedule(two_stage)
        sch.set_scope("B", 0, scope)
        assert sch.get(sch.get_block("B")).writes[0].buffer.scope == scope


@T.prim_func
def read_then_written(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("early"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi]
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi]


def test_cache_read_consumers_must_read_the_buffer_after_its_writer() -> None:
    sch = Schedule(read_then_written)
    error = check_refused(sch, lambda: sch.cache_read("early", 0, "local"), "before block 'B'")
    assert error.rule == "data-flow"
    sch = Schedule(two_consumers)
    error = check_refused(
        sch,
        lambda: sch.cache_read("C", 0, "local", consumer_blocks=["C", "B"]),
        "no block named 'B'",
    )
    assert error.rule == "unknown-block"
    sch = Schedule(two_stage)
    error = check_refused(
        sch, lambda: sch.cache_read("C", 0, "local", consumer_blocks=["B"]), "does not read"
    )
    assert error.rule == "argument"


def test_the_buffer_may_be_given_by_index_name_or_buffer_object() -> None:
    # As TVM accepts: each spelling picks the same buffer and records its index.
    results = []
    for spelling in (0, "A", "buffer"):
        sch = Schedule(two_stage)
        block = sch.get_block("B")
        which = sch.get(block).reads[0].buffer if spelling == "buffer" else spelling
        sch.cache_read(block, which, "global")
        results.append(sch.mod)
        assert "read_buffer_index=0" in str(sch.trace)
    for mod in results[1:]:
        tw.ir.assert_structural_equal(mod, results[0])
    sch = Schedule(two_stage)
    block = sch.get_block("B")
    check_refused(sch, lambda: sch.cache_read(block, "C", "global"), "does not read buffer 'C'")
    sch.cache_write(block, "B", "global")  # by name among the writes
