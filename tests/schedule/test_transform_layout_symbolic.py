"""transform_layout of buffers with symbolic shapes (TVM takes them): an affine map proved
one to one over the symbolic box, or any map under assume_injective_transform=True with the
new extents bounded (expected scripts, replay from Python and JSON traces, numerics in the
evaluator for several sizes, and the refusal)."""

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run
from schedule_checks import check_refused, check_schedule

from tilewright.ir import PrimFunc
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def scaled(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (32, n), "float32")
    C = T.match_buffer(c, (32, n), "float32")
    B = T.alloc_buffer((32, n))
    for i, j in T.grid(32, n):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(32, n):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def scaled_transposed(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (32, n), "float32")
    C = T.match_buffer(c, (32, n), "float32")
    B = T.alloc_buffer((n, 32))
    for i, j in T.grid(32, n):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vj, vi] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(32, n):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vj, vi] + T.float32(1)


@T.prim_func
def scaled_flat(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (32, n), "float32")
    C = T.match_buffer(c, (32, n), "float32")
    B = T.alloc_buffer((n * 32,))
    for i, j in T.grid(32, n):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi * n + vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(32, n):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi * n + vj] + T.float32(1)


def _same_numbers(before: PrimFunc, after: PrimFunc) -> None:
    for n in (1, 5, 8):
        a = np.random.default_rng(n).standard_normal((32, n)).astype("float32")
        want = run(before, a, np.zeros((32, n), "float32"))[1]
        got = run(after, a, np.zeros((32, n), "float32"))[1]
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_allclose(got, a * 2 + 1, rtol=1e-6)


def test_transpose_a_buffer_of_symbolic_shape() -> None:
    sch = Schedule(scaled)
    sch.transform_layout("B", ("write", 0), lambda i, j: (j, i))
    check_schedule(sch, scaled, scaled_transposed, numeric=False)
    _same_numbers(scaled, sch.mod["main"])


def test_a_map_naming_the_shape_symbol_under_assume_injective_transform() -> None:
    # TVM's test_transform_layout_with_symbolic_bound, in two dimensions: the function's n in
    # the map, the new extent the bound of its images (n * 32).
    n = scaled.buffer_map[0][1].shape[1]
    sch = Schedule(scaled)
    sch.transform_layout(
        "B", ("write", 0), lambda i, j: (i * n + j,), assume_injective_transform=True
    )
    check_schedule(sch, scaled, scaled_flat, numeric=False)
    # The printed trace quotes the map, which names n; replay parses it with the function's n.
    assert 'index_map="lambda i, j: (i * n + j,)"' in str(sch.trace)
    _same_numbers(scaled, sch.mod["main"])


def test_a_map_the_iterator_maps_cannot_prove_needs_assume_injective_transform() -> None:
    n = scaled.buffer_map[0][1].shape[1]
    sch = Schedule(scaled)
    error = check_refused(
        sch,
        lambda: sch.transform_layout("B", ("write", 0), lambda i, j: (i * n + j,)),
        r"has the symbolic shape \(32, n\) .* give assume_injective_transform=True",
    )
    assert error.rule == "index-map"


@pytest.mark.parametrize("pad_value", [None, 0.0])
def test_a_split_of_a_symbolic_dimension_is_refused(pad_value: float | None) -> None:
    # The split of n by 4 leaves padding unless 4 divides n: not proved, refused.
    sch = Schedule(scaled)
    error = check_refused(
        sch,
        lambda: sch.transform_layout(
            "B", ("write", 0), lambda i, j: (i, j // 4, j % 4), pad_value=pad_value
        ),
        "is not a one to one affine map of it",
    )
    assert error.rule == "index-map"


@T.prim_func
def scaled_int64(a: T.handle, c: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (T.int64(32), n), "float32")
    C = T.match_buffer(c, (T.int64(32), n), "float32")
    B = T.alloc_buffer((T.int64(32), n))
    for i, j in T.grid(T.int64(32), n):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(T.int64(32), n):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def scaled_int64_flat(a: T.handle, c: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (T.int64(32), n), "float32")
    C = T.match_buffer(c, (T.int64(32), n), "float32")
    B = T.alloc_buffer((n * T.int64(32),))
    for i, j in T.grid(T.int64(32), n):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi * n + vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(T.int64(32), n):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi * n + vj] + T.float32(1)


def test_an_int64_symbolic_shape_under_assume_injective_transform() -> None:
    # TVM's test_transform_layout_with_symbolic_bound uses int64 indices and shape symbols.
    n = scaled_int64.buffer_map[0][1].shape[1]
    sch = Schedule(scaled_int64)
    sch.transform_layout(
        "B", ("write", 0), lambda i, j: (i * n + j,), assume_injective_transform=True
    )
    check_schedule(sch, scaled_int64, scaled_int64_flat, numeric=False)
    _same_numbers(scaled_int64, sch.mod["main"])
