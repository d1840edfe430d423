"""transform_block_layout: a block's iteration space fused, split or permuted by an index map
(expected scripts, replay from the trace's Python and JSON, numerics), and what it refuses."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def scale(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def scale_fused(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for ax0 in range(128):
        with T.block("B"):
            v0 = T.axis.spatial(128, ax0)
            B[v0 // 8, v0 % 8] = A[v0 // 8, v0 % 8] * T.float32(2)


@T.prim_func
def scale_tiled(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for ax0, ax1, ax2 in T.grid(8, 4, 4):
        with T.block("B"):
            v0, v1, v2 = T.axis.remap("SSS", [ax0, ax1, ax2])
            B[v1 * 4 + v2, v0] = A[v1 * 4 + v2, v0] * T.float32(2)


@T.prim_func
def matmul(
    A: T.Buffer((8, 4), "float32"), B: T.Buffer((4, 8), "float32"), C: T.Buffer((8, 8), "float32")
):
    for i, j, k in T.grid(8, 8, 4):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def matmul_fused(
    A: T.Buffer((8, 4), "float32"), B: T.Buffer((4, 8), "float32"), C: T.Buffer((8, 8), "float32")
):
    for ax0, ax1 in T.grid(64, 4):
        with T.block("C"):
            v0, v1 = T.axis.remap("SR", [ax0, ax1])
            with T.init():
                C[v0 // 8, v0 % 8] = T.float32(0)
            C[v0 // 8, v0 % 8] = C[v0 // 8, v0 % 8] + A[v0 // 8, v1] * B[v1, v0 % 8]


@T.prim_func
def two_blocks(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for i in range(16):
        for j in range(8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(8):
            with T.block("B2"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = B[vi, vj] + T.float32(1)


def test_fuse_the_iterators() -> None:
    sch = Schedule(scale)
    sch.transform_block_layout("B", lambda i, j: (i * 8 + j,))
    check_schedule(sch, scale, scale_fused)
    assert "index_map=lambda i, j: (i * 8 + j,)" in str(sch.trace)


def test_permute_and_split() -> None:
    sch = Schedule(scale)
    sch.transform_block_layout(sch.get_block("B"), lambda i, j: (j, i // 4, i % 4))
    check_schedule(sch, scale, scale_tiled)


def test_fuse_the_spatial_iterators_of_a_reduction() -> None:
    sch = Schedule(matmul)
    sch.transform_block_layout("C", lambda i, j, k: (i * 8 + j, k))
    check_schedule(sch, matmul, matmul_fused)


def test_then_split_the_new_loop() -> None:
    sch = Schedule(scale)
    sch.transform_block_layout("B", "lambda i, j: (i * 8 + j,)")
    (loop,) = sch.get_loops("B")
    sch.split(loop, [None, 32])
    check_schedule(sch, scale)


def test_what_transform_block_layout_refuses() -> None:
    sch = Schedule(scale)
    error = check_refused(
        sch, lambda: sch.transform_block_layout("B", lambda i, j: (i,)), "one to one"
    )
    assert error.rule == "block-index-map"
    check_refused(sch, lambda: sch.transform_block_layout("B", lambda i: (i,)), "takes 1 indices")
    check_refused(
        sch,
        lambda: sch.transform_block_layout("B", lambda i, j: (i + 1, j)),
        "not one dimension counted from 0",
    )
    mm = Schedule(matmul)
    check_refused(
        mm, lambda: mm.transform_block_layout("C", lambda i, j, k: (i, j * 4 + k)), "mixes"
    )
    split = Schedule(scale)
    _, j = split.get_loops("B")
    split.split(j, [2, 4])
    error = check_refused(
        split, lambda: split.transform_block_layout("B", lambda i, j: (j, i)), "loops above it"
    )
    assert error.rule == "trivial-binding"
    two = Schedule(two_blocks)
    check_refused(two, lambda: two.transform_block_layout("B", lambda i, j: (j, i)), "hold other")
