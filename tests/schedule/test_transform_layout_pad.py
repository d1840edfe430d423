# ruff: noqa: SIM300 - TVM prints padding predicates as `2 <= j`
"""transform_layout with padding: a split that does not divide stores the buffer in a larger
box, and ``pad_value`` is written into the padding by the producer (rewritten over the new
box with ``T.if_then_else``) or by a ``<buffer>_padding`` block after it (expected scripts,
replay, numerics), and what is refused."""

from __future__ import annotations

import numpy as np
from evaluator import run
from schedule_checks import check_refused, check_schedule

from tilewright.ir import IntImm, Var, dtype
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def row_sums(A: T.Buffer((14, 8), "int32"), C: T.Buffer((14,), "int32")):
    B = T.alloc_buffer((14,), "int32")
    for i, k in T.grid(14, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = 0
            B[vi] = B[vi] + A[vi, vk]
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] * 2


@T.prim_func
def row_sums_padded(A: T.Buffer((14, 8), "int32"), C: T.Buffer((14,), "int32")):
    B = T.alloc_buffer((4, 4), "int32")
    for ax0, ax1, k in T.grid(4, 4, 8):
        with T.block("B"):
            v0, v1, vk = T.axis.remap("SSR", [ax0, ax1, k])
            with T.init():
                B[v0, v1] = T.if_then_else(v0 == 3 and 2 <= v1, v0 + v1, 0)
            B[v0, v1] = T.if_then_else(v0 == 3 and 2 <= v1, v0 + v1, B[v0, v1] + A[v0 * 4 + v1, vk])
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi // 4, vi % 4] * 2


@T.prim_func
def copy_twice(A: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((14,))
    D = T.alloc_buffer((14,))
    for i in range(14):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi]
            D[vi] = A[vi]
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + D[vi]


@T.prim_func
def copy_twice_padded(A: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((4, 4))
    D = T.alloc_buffer((14,))
    for i in range(14):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi // 4, vi % 4] = A[vi]
            D[vi] = A[vi]
    for ax0, ax1 in T.grid(4, 4):
        with T.block("B_padding"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.where(ax0 == 3 and 2 <= ax1)
            B[v0, v1] = T.float32(1.5)
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi // 4, vi % 4] + D[vi]


def test_a_row_major_producer_iterates_over_the_padded_box() -> None:
    sch = Schedule(row_sums)
    sch.transform_layout("B", "B", lambda i: (i // 4, i % 4), pad_value=lambda i, j: i + j)
    check_schedule(sch, row_sums, row_sums_padded)
    assert "pad_value=lambda i, j: (i + j,)" in str(sch.trace)


def test_a_producer_with_other_effects_is_followed_by_a_padding_block() -> None:
    sch = Schedule(copy_twice)
    sch.transform_layout("B", ("write", 0), lambda i: (i // 4, i % 4), pad_value=1.5)
    check_schedule(sch, copy_twice, copy_twice_padded)


@T.prim_func
def scale(A: T.Buffer((6, 6), "float32"), C: T.Buffer((6, 6), "float32")):
    for i, j in T.grid(6, 6):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(3)


def test_a_padded_output_holds_the_pad_value() -> None:
    sch = Schedule(scale)
    sch.transform_layout(
        "C", "C", lambda i, j: (i // 4, j // 4, i % 4, j % 4), pad_value=T.float32(-1)
    )
    check_schedule(sch, scale, numeric=False)
    func = sch.mod["main"]
    assert [int(e) for e in func.buffer_map[1][1].shape] == [2, 2, 4, 4]
    a = np.arange(36, dtype="float32").reshape(6, 6)
    got = run(func, a, np.zeros((2, 2, 4, 4), "float32"))[1]
    flat = got.transpose(0, 2, 1, 3).reshape(8, 8)  # back to rows and columns
    np.testing.assert_allclose(flat[:6, :6], a * 3)
    assert (flat[6:, :] == -1).all() and (flat[:, 6:] == -1).all()


def test_what_padding_needs() -> None:
    sch = Schedule(row_sums)
    split = lambda i: (i // 4, i % 4)
    error = check_refused(
        sch,
        lambda: sch.transform_layout("B", "B", split),
        r"in the box \(4, 4\), with padding: give pad_value",
    )
    assert error.rule == "pad-value"
    check_refused(
        sch, lambda: sch.transform_layout("B", "B", split, pad_value=0.5), "is not an integer"
    )
    n = Var("n", dtype("int32"))
    check_refused(
        sch, lambda: sch.transform_layout("B", "B", split, pad_value=n + 1), "is an expression"
    )
    other = sch.get(sch.get_block("C")).writes[0].buffer
    check_refused(
        sch,
        lambda: sch.transform_layout("B", "B", split, pad_value=lambda i, j: other[i]),
        r"an index map holds only .* not C\[i\]",
    )
    check_refused(
        sch,
        lambda: sch.transform_layout("B", "B", split, pad_value=lambda i, j: (i, j)),
        "must take the 2 new indices and give one value",
    )


def test_a_pad_value_of_another_dtype_is_refused() -> None:
    # TVM's TransformationPaddingTypeError: the pad value's dtype is the buffer's.
    sch = Schedule(row_sums)
    split = lambda i: (i // 4, i % 4)
    error = check_refused(
        sch,
        lambda: sch.transform_layout("B", "B", split, pad_value=IntImm(0, dtype("int8"))),
        "has dtype int8; buffer 'B' holds int32",
    )
    assert error.rule == "pad-value-dtype"
    sch = Schedule(copy_twice)
    error = check_refused(
        sch,
        lambda: sch.transform_layout("B", ("write", 0), split, pad_value=T.float16(1)),
        "has dtype float16; buffer 'B' holds float32",
    )
    assert error.rule == "pad-value-dtype"
    # A function of the new indices gives int32 values: not a float32 buffer's.
    error = check_refused(
        sch,
        lambda: sch.transform_layout("B", ("write", 0), split, pad_value=lambda i, j: i + j),
        "gives int32 values; buffer 'B' holds float32",
    )
    assert error.rule == "pad-value-dtype"
    # The same value as a float32 constant is taken.
    sch.transform_layout("B", ("write", 0), split, pad_value=T.float32(1.5))
    check_schedule(sch, copy_twice, copy_twice_padded)


@T.prim_func
def fused(A: T.Buffer((14, 6), "float32"), C: T.Buffer((14, 6), "float32")):
    B = T.alloc_buffer((14, 6))
    for i in range(14):
        for ax0 in range(6):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(6):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def fused_padded(A: T.Buffer((14, 6), "float32"), C: T.Buffer((14, 6), "float32")):
    B = T.alloc_buffer((4, 6, 4))
    for i in range(14):
        for ax0 in range(6):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                B[vi // 4, vj, vi % 4] = A[vi, vj] * T.float32(2)
        for j in range(6):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi // 4, vj, vi % 4] + T.float32(1)
    for ax0, ax1, ax2 in T.grid(4, 6, 4):
        with T.block("B_padding"):
            v0, v1, v2 = T.axis.remap("SSS", [ax0, ax1, ax2])
            T.where(ax0 == 3 and 2 <= ax2)
            B[v0, v1, v2] = T.float32(0)


def test_a_producer_computed_at_its_consumer_is_followed_at_the_top_level() -> None:
    sch = Schedule(fused)
    sch.transform_layout("B", "B", lambda i, j: (i // 4, j, i % 4), pad_value=0.0)
    check_schedule(sch, fused, fused_padded)


@T.prim_func
def opaque_producer(A: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((14,))
    for i in range(14):
        with T.block("B"):
            B[i] = A[i] * T.float32(2)
    for i in range(14):
        with T.block("C"):
            C[i] = B[i] + T.float32(1)


@T.prim_func
def opaque_producer_padded(A: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((4, 4))
    for ax0, ax1 in T.grid(4, 4):
        with T.block("B"):
            B[ax0, ax1] = T.if_then_else(
                ax0 == 3 and 2 <= ax1, T.float32(-1), A[ax0 * 4 + ax1] * T.float32(2)
            )
    for i in range(14):
        with T.block("C"):
            C[i] = B[i // 4, i % 4] + T.float32(1)


def test_an_opaque_producer_iterates_over_the_padded_box() -> None:
    # TVM's padding of an opaque block: its loops run over the new box, and it stores the pad
    # value in the padding.
    sch = Schedule(opaque_producer)
    sch.transform_layout("B", "B", lambda i: (i // 4, i % 4), pad_value=-1.0)
    check_schedule(sch, opaque_producer, opaque_producer_padded)


@T.prim_func
def row_sums_implicitly_padded(A: T.Buffer((14, 8), "int32"), C: T.Buffer((14,), "int32")):
    B = T.alloc_buffer((4, 4), "int32")
    for i, k in T.grid(14, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi // 4, vi % 4] = 0
            B[vi // 4, vi % 4] = B[vi // 4, vi % 4] + A[vi, vk]
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi // 4, vi % 4] * 2


def test_assume_injective_transform_leaves_the_padding_unwritten() -> None:
    # Implicit padding: without pad_value, assume_injective_transform=True takes the split
    # that does not divide; elements (3, 2) and (3, 3) of B are never written nor read.
    sch = Schedule(row_sums)
    sch.transform_layout("B", "B", lambda i: (i // 4, i % 4), assume_injective_transform=True)
    check_schedule(sch, row_sums, row_sums_implicitly_padded)
    assert "pad_value=None, assume_injective_transform=True" in str(sch.trace)


def test_assume_injective_transform_takes_a_swizzle_that_leaves_holes() -> None:
    # i ^ 2 maps 12, 13 to 14, 15: a box of 16 whose elements 12 and 13 nothing stores,
    # refused unless assumed (then left unwritten).
    sch = Schedule(copy_twice)
    error = check_refused(
        sch, lambda: sch.transform_layout("B", "B", lambda i: (i ^ 2,)), "leaves holes"
    )
    assert error.rule == "pad-value"
    sch.transform_layout("B", "B", lambda i: (i ^ 2,), assume_injective_transform=True)
    assert [int(e) for e in sch.get(sch.get_block("B")).writes[0].buffer.shape] == [16]
    check_schedule(sch, copy_twice)
