"""transform_layout with XOR swizzles: maps no affine analysis reads, proved one to one by
evaluation (expected scripts, replay, numerics), a swizzled shared-memory tile of a matmul
(evaluator, C build, CUDA source compiled with NVRTC), and what is refused."""

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run_module
from schedule_checks import check_refused, check_schedule

import tilewright as tw
from tilewright.arith import eval_set
from tilewright.driver import lower
from tilewright.ir import IntImm, Range, Var, dtype, intrinsics
from tilewright.ir.functor import substitute
from tilewright.runtime.cuda_runtime.nvrtc import nvrtc_version
from tilewright.schedule.index_map import IndexMap
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def two_stage(A: T.Buffer((16, 64), "float32"), C: T.Buffer((16, 64), "float32")):
    B = T.alloc_buffer((16, 64))
    for i, j in T.grid(16, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 64):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def two_stage_xor(A: T.Buffer((16, 64), "float32"), C: T.Buffer((16, 64), "float32")):
    B = T.alloc_buffer((16, 64))
    for i, j in T.grid(16, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj ^ vi % 8] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 64):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj ^ vi % 8] + T.float32(1)


@T.prim_func
def two_stage_chunks(A: T.Buffer((16, 64), "float32"), C: T.Buffer((16, 64), "float32")):
    B = T.alloc_buffer((16, 64))
    for i, j in T.grid(16, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, (vj // 8 ^ vi % 8) * 8 + vj % 8] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 64):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, (vj // 8 ^ vi % 8) * 8 + vj % 8] + T.float32(1)


@T.prim_func
def matmul(
    A: T.Buffer((32, 64), "float32"),
    B: T.Buffer((64, 32), "float32"),
    C: T.Buffer((32, 32), "float32"),
):
    for i, j, k in T.grid(32, 32, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


SWIZZLE = "lambda i, k: (i, (k // 4 ^ i % 8) * 4 + k % 4)"


def test_xor_of_the_column_with_the_row_permutes_each_row() -> None:
    sch = Schedule(two_stage)
    sch.transform_layout("B", ("write", 0), lambda i, j: (i, j ^ (i % 8)))
    check_schedule(sch, two_stage, two_stage_xor)
    assert "index_map=lambda i, j: (i, j ^ i % 8)" in str(sch.trace)


def test_xor_of_16_byte_chunks_given_as_the_map_text() -> None:
    sch = Schedule(two_stage)
    sch.transform_layout("C", "B", "lambda i, j: (i, (j // 8 ^ i % 8) * 8 + j % 8)")
    check_schedule(sch, two_stage, two_stage_chunks)


@pytest.mark.parametrize(
    ("swizzle", "extent"),
    [
        # vj in a 16-aligned block, XORed with at most 7: the block itself
        ("lambda i, j: (i, j ^ i % 8)", 16),
        # chunks of 8 XORed with up to 7 span 64 columns: the whole dimension
        ("lambda i, j: (i, (j // 8 ^ i % 8) * 8 + j % 8)", 64),
    ],
)
def test_a_blockized_reader_reads_the_swizzled_box(swizzle: str, extent: int) -> None:
    sch = Schedule(two_stage)
    _, j1 = sch.split(sch.get_loops("C")[1], [None, 16])
    outer = sch.blockize(j1)  # reads B[vi, vj_o * 16 : vj_o * 16 + 16]
    sch.transform_layout("B", ("write", 0), swizzle)
    region = sch.get(outer).reads[0].region
    assert [int(r.extent) for r in region] == [1, extent]
    check_schedule(sch, two_stage)


def _tiled_matmul(*, gpu: bool) -> Schedule:
    """16x16 tiles of C; per 32-wide step of k, a tile of A staged (in shared memory on the
    GPU) with its 4-element chunks XOR-swizzled by the row."""
    sch = Schedule(matmul)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 16])
    j0, j1 = sch.split(j, [None, 16])
    k0, k1 = sch.split(k, [None, 32])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    a_tile = sch.cache_read(c, 0, "shared" if gpu else "global")
    sch.compute_at(a_tile, k0)
    if gpu:
        for loop, axis in ((i0, "blockIdx.y"), (j0, "blockIdx.x")):
            sch.bind(loop, axis)
        sch.bind(i1, "threadIdx.y")
        sch.bind(j1, "threadIdx.x")
        fused = sch.fuse(*sch.get_loops(a_tile)[-2:])
        _, ty, tx = sch.split(fused, [None, 16, 16])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
    sch.transform_layout(a_tile, ("write", 0), SWIZZLE)
    return sch


def _operands() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((32, 64)).astype("float32")
    b = rng.standard_normal((64, 32)).astype("float32")
    return [a, b, np.zeros((32, 32), "float32")]


def test_a_swizzled_shared_tile_of_a_gpu_matmul_compiles_for_cuda() -> None:
    sch = _tiled_matmul(gpu=True)
    check_schedule(sch, matmul)  # numerics: the evaluator runs the thread loops in order
    artifact = tw.build_artifact(sch.mod, target="cuda")
    # The XOR keeps each row's chunks within the 32 columns of the k step: the shared tile
    # is compacted to 16 x 32, not to the whole 64 columns.
    assert "__shared__ float A_shared[512];" in artifact.source
    assert "A_shared[i_1 * 32 + (k_0 * 8 + k_1 / 4 ^ i_1 % 8) * 4 + k_1 % 4 - k_0 * 32]" in (
        artifact.source
    )
    if nvrtc_version() is not None:
        assert artifact.format == "cubin"
    # The lowered kernel, thread by thread with its barriers, in the evaluator.
    a, b, c = _operands()
    got = run_module(lower(sch.mod, "cuda"), "main", a, b, c)[2]
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


def test_a_swizzled_tile_of_a_cpu_matmul_builds_for_c() -> None:
    sch = _tiled_matmul(gpu=False)
    check_schedule(sch, matmul)
    a, b, c = _operands()
    tw.build(sch.mod, target="c")["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_bit_operations_print_and_parse_back_in_index_maps() -> None:
    m = IndexMap.from_func(lambda i, j: (i >> 1, (j ^ i << 2) * 2))
    assert str(m) == "lambda i, j: (i >> 1, (j ^ i << 2) * 2)"
    assert IndexMap.parse(str(m)) == m
    text = "lambda i, j: (i | j & 3, j ^ 1)"  # bitwise in a map's text
    assert str(IndexMap.parse(text)) == text
    with pytest.raises(TypeError, match="returns a condition: on expressions"):
        IndexMap.from_func(lambda i, j: (i, j & 7))


def test_what_a_swizzle_may_not_do() -> None:
    sch = Schedule(two_stage)
    error = check_refused(
        sch,
        lambda: sch.transform_layout("B", ("write", 0), lambda i, j: (i // 2, j ^ (i % 2))),
        r"one to one: \(0, 0\) and \(1, 1\) both map to \(0, 0\)",
    )
    assert error.rule == "index-map"
    error = check_refused(
        sch,
        lambda: sch.transform_layout("B", ("write", 0), lambda i, j: (i, (j ^ 1) * 2)),
        r"leaves holes in the box \(16, 127\)",
    )
    assert error.rule == "pad-value"
    check_refused(
        sch,
        lambda: sch.transform_layout("B", ("write", 0), lambda i, j: (i, j ^ 64)),
        r"T.bitwise_xor\(j, 64\) is not one dimension counted from 0",
    )


@T.prim_func
def huge(A: T.Buffer((4096, 2048), "float32"), C: T.Buffer((4096, 2048), "float32")):
    B = T.alloc_buffer((4096, 2048))
    for i, j in T.grid(4096, 2048):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]
    for i, j in T.grid(4096, 2048):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj]


def test_a_buffer_too_large_to_enumerate_needs_assume_injective_transform() -> None:
    sch = Schedule(huge)
    error = check_refused(
        sch,
        lambda: sch.transform_layout("B", ("write", 0), lambda i, j: (i, j ^ (i % 8))),
        "cannot be proved one to one",
    )
    assert error.rule == "injective-map"
    sch.transform_layout(
        "B", ("write", 0), lambda i, j: (i, j ^ (i % 8)), assume_injective_transform=True
    )
    assert [int(e) for e in sch.get(sch.get_block("B")).writes[0].buffer.shape] == [4096, 2048]
    assert "assume_injective_transform=True" in str(sch.trace)


@T.prim_func
def symbolic(a: T.handle, c: T.handle, n: T.int32):
    A = T.match_buffer(a, (n, 64), "float32")
    C = T.match_buffer(c, (n, 64), "float32")
    for i, j in T.grid(n, 64):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj]


def test_a_swizzle_of_a_symbolic_shape_is_refused() -> None:
    sch = Schedule(symbolic)
    error = check_refused(
        sch,
        lambda: sch.transform_layout("C", "A", lambda i, j: (i, j ^ (i % 8))),
        r"buffer 'A' has the symbolic shape \(n, 64\) and index map .* is not a one to one",
    )
    assert error.rule == "index-map"


@pytest.mark.parametrize("name", ["bitwise_xor", "bitwise_or", "bitwise_and"])
def test_the_interval_of_a_bit_operation_holds_every_value(name: str) -> None:
    # eval_set bounds `a ^ b` (0 <= b < 2**m) by a's aligned blocks of 2**m: check it against
    # every value for bases k0 = 0..5 and boxes of a and b.
    k0, x, y = (Var(v, dtype("int32")) for v in ("k0", "x", "y"))
    op = intrinsics.lookup(name)
    for start, width, small in [(0, 32, 8), (3, 5, 4), (8, 16, 16), (1, 9, 3)]:
        expr = op.call(k0 * 32 + start + x, y % small)
        dom = {x: Range(0, width), y: Range(0, 64)}
        for base in range(6):
            found = eval_set(substitute(expr, {k0: IntImm(base, dtype("int32"))}), dom)
            low, high = int(found.min_value), int(found.max_value)
            python = {"bitwise_xor": int.__xor__, "bitwise_or": int.__or__}.get(name, int.__and__)
            values = [
                python(base * 32 + start + a, b % small) for a in range(width) for b in range(64)
            ]
            assert low <= min(values) and max(values) <= high, (name, start, width, small, base)
