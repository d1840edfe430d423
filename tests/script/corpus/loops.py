"""Loops: ``range``, ``T.serial`` with bounds, ``T.grid``, loop kinds and annotations,
symbolic and dependent extents."""

from __future__ import annotations

import numpy as np

from corpus import Case
from tilewright.script import tir as T


@T.prim_func
def python_range(A: T.Buffer((8,), "float32")):
    for i in range(8):
        A[i] = A[i] * T.float32(3)


def _python_range(a):
    a *= 3


@T.prim_func
def serial_with_bounds(A: T.Buffer((8,), "float32")):
    for i in T.serial(2, 6):
        A[i] = T.float32(0)


def _serial_with_bounds(a):
    a[2:6] = 0


@T.prim_func
def grid_loops(A: T.Buffer((4, 6), "float32"), B: T.Buffer((6, 4), "float32")):
    for i, j in T.grid(4, 6):
        B[j, i] = A[i, j]


def _grid_loops(a, b):
    b[:] = a.T


@T.prim_func
def grid_three(A: T.Buffer((2, 3, 4), "int32")):
    for i, j, k in T.grid(2, 3, 4):
        A[i, j, k] = i * 100 + j * 10 + k


def _grid_three(a):
    a[:] = np.arange(2)[:, None, None] * 100 + np.arange(3)[None, :, None] * 10 + np.arange(4)


@T.prim_func
def parallel_loop(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in T.parallel(64):
        B[i] = A[i] * A[i]


def _parallel_loop(a, b):
    b[:] = a * a


@T.prim_func
def vectorized_loop(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(4):
        for j in T.vectorized(4):
            B[i * 4 + j] = A[i * 4 + j] + T.float32(1)


def _vectorized_loop(a, b):
    b[:] = a + 1


@T.prim_func
def unrolled_loop(A: T.Buffer((8,), "float32"), B: T.Buffer((1,), "float32")):
    B[0] = T.float32(0)
    for i in T.unroll(8):
        B[0] = B[0] + A[i]


def _unrolled_loop(a, b):
    b[0] = a.sum()


@T.prim_func
def annotated_loop(A: T.Buffer((8,), "float32")):
    for i in T.serial(8, annotations={"pragma_auto_unroll_max_step": 16, "note": "x"}):
        A[i] = A[i] - T.float32(1)


def _annotated_loop(a):
    a -= 1


@T.prim_func
def symbolic_extent(a: T.handle, n: T.int32):
    A = T.match_buffer(a, (n,))
    for i in range(n):
        A[i] = A[i] * T.float32(2)


def _symbolic_extent(a, n):
    a *= 2


@T.prim_func
def triangular_loops(A: T.Buffer((6, 6), "float32")):
    for i in range(6):
        for j in range(i + 1):
            A[i, j] = T.float32(0)


def _triangular_loops(a):
    a[np.tril_indices(6)] = 0


@T.prim_func
def loop_from_variable(A: T.Buffer((8,), "int32"), lo: T.int32):
    for i in T.serial(lo, 8):
        A[i] = i


def _loop_from_variable(a, lo):
    a[lo:] = np.arange(lo, 8)


@T.prim_func
def int64_loop(A: T.Buffer((T.int64(8),), "float32")):
    for i in range(T.int64(8)):
        A[i] = T.Cast("float32", i)


def _int64_loop(a):
    a[:] = np.arange(8)


@T.prim_func
def reverse_and_stride(A: T.Buffer((16,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[7 - i] = A[i * 2]


def _reverse_and_stride(a, b):
    b[::-1] = a[::2]


@T.prim_func
def empty_body_loop(A: T.Buffer((4,), "float32")):
    for _i in range(4):
        pass
    A[0] = T.float32(1)


def _empty_body_loop(a):
    a[0] = 1


@T.prim_func
def imperfect_nest(A: T.Buffer((4, 4), "float32"), S: T.Buffer((4,), "float32")):
    for i in range(4):
        S[i] = T.float32(0)
        for j in range(4):
            S[i] = S[i] + A[i, j]
        S[i] = S[i] * T.float32(0.25)


def _imperfect_nest(a, s):
    s[:] = a.mean(axis=1)


CASES = [
    Case(python_range, _python_range),
    Case(serial_with_bounds, _serial_with_bounds),
    Case(grid_loops, _grid_loops),
    Case(grid_three, _grid_three),
    Case(parallel_loop, _parallel_loop),
    Case(vectorized_loop, _vectorized_loop),
    Case(unrolled_loop, _unrolled_loop),
    Case(annotated_loop, _annotated_loop),
    Case(symbolic_extent, _symbolic_extent, scalars={"n": 5}, shapes={"A": (5,)}),
    Case(triangular_loops, _triangular_loops),
    Case(loop_from_variable, _loop_from_variable, scalars={"lo": 3}),
    Case(int64_loop, _int64_loop),
    Case(reverse_and_stride, _reverse_and_stride),
    Case(empty_body_loop, _empty_body_loop),
    Case(imperfect_nest, _imperfect_nest),
]
