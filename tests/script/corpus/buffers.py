"""Buffers: parameters in every spelling, ``match_buffer`` options, allocations at function
and block level, scopes, dtypes, multi-dimensional and zero-dimensional buffers."""

from __future__ import annotations

import numpy as np

from corpus import Case
from tilewright.script import tir as T


@T.prim_func
def buffer_parameters(
    A: T.Buffer((4, 4), "float32"),
    B: T.Buffer[(4, 4), "float32"],  # noqa: F821, UP037 - the 2022 spelling
    C: T.Buffer(16, "float32"),
):
    for i, j in T.grid(4, 4):
        C[i * 4 + j] = A[i, j] + B[j, i]


def _buffer_parameters(a, b, c):
    c[:] = (a + b.T).reshape(16)


@T.prim_func
def match_buffer_of_handles(a: T.handle, b: T.handle):
    A = T.match_buffer(a, (8,), "float32")
    B = T.match_buffer(b, (8,), "float32")
    for i in range(8):
        B[i] = A[i] * T.float32(4)


def _match_buffer_of_handles(a, b):
    b[:] = a * 4


@T.prim_func
def symbolic_shape(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 4))
    B = T.match_buffer(b, (n,))
    for i, j in T.grid(n, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vj]


def _symbolic_shape(a, b):
    b[:] = a.sum(axis=1)


@T.prim_func
def strided_buffer(a: T.handle, b: T.handle):
    A = T.match_buffer(a, (4, 4), strides=(4, 1))
    B = T.match_buffer(b, (4,))
    for i in range(4):
        B[i] = A[i, i]


def _strided_buffer(a, b):
    b[:] = np.diag(a)


@T.prim_func
def match_buffer_options(a: T.handle):
    A = T.match_buffer(a, (8,), "float32", align=64, offset_factor=1, elem_offset=0)
    for i in range(8):
        A[i] = A[i] + T.float32(1)


def _match_buffer_options(a):
    a += 1


@T.prim_func
def function_level_alloc(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    tmp = T.alloc_buffer((8,))
    for i in range(8):
        tmp[i] = A[i] * T.float32(2)
    for i in range(8):
        B[i] = tmp[i] + T.float32(1)


def _function_level_alloc(a, b):
    b[:] = a * 2 + 1


@T.prim_func
def alloc_with_scope_and_dtype(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    tmp = T.alloc_buffer((8,), "int32", scope="local")
    for i in range(8):
        with T.block("tmp"):
            vi = T.axis.spatial(8, i)
            tmp[vi] = A[vi] * 3
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = tmp[vi] - 1


def _alloc_with_scope_and_dtype(a, b):
    b[:] = a * 3 - 1


@T.prim_func
def block_level_alloc(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("row"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi, 0:4])
            T.writes(B[vi])
            acc = T.alloc_buffer((1,), scope="local")
            acc[0] = T.float32(0)
            for j in range(4):
                acc[0] = acc[0] + A[vi, j] * A[vi, j]
            B[vi] = acc[0]


def _block_level_alloc(a, b):
    b[:] = (a * a).sum(axis=1)


@T.prim_func
def three_dimensional(A: T.Buffer((2, 3, 4), "float32"), B: T.Buffer((4, 3, 2), "float32")):
    for i, j, k in T.grid(2, 3, 4):
        B[k, j, i] = A[i, j, k]


def _three_dimensional(a, b):
    b[:] = a.transpose(2, 1, 0)


@T.prim_func
def zero_dimensional(A: T.Buffer((), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        B[i] = A[()] * T.float32(2)


def _zero_dimensional(a, b):
    b[:] = a * 2


@T.prim_func
def int8_buffers(A: T.Buffer((8,), "int8"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        B[i] = T.Cast("int32", A[i]) * 1000


def _int8_buffers(a, b):
    b[:] = a.astype("int32") * 1000


@T.prim_func
def bool_buffer(
    A: T.Buffer((8,), "float32"), M: T.Buffer((8,), "bool"), B: T.Buffer((8,), "float32")
):
    for i in range(8):
        B[i] = T.Select(M[i], A[i], T.float32(0))


def _bool_buffer(a, m, b):
    b[:] = np.where(m, a, 0)


@T.prim_func
def bfloat16_buffer(A: T.Buffer((8,), "bfloat16"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.Cast("float32", A[i]) * T.float32(2)


def _bfloat16_buffer(a, b):
    b[:] = a.astype("float32") * 2


@T.prim_func
def uint16_and_int16(A: T.Buffer((8,), "uint16"), B: T.Buffer((8,), "int16")):
    for i in range(8):
        B[i] = T.Cast("int16", A[i]) - T.int16(5)


def _uint16_and_int16(a, b):
    b[:] = a.astype("int16") - 5


@T.prim_func
def reinterpret_bits(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "int32")):
    for i in range(4):
        B[i] = T.reinterpret(A[i], dtype="int32")


def _reinterpret_bits(a, b):
    b[:] = a.view("int32")


CASES = [
    Case(buffer_parameters, _buffer_parameters),
    Case(match_buffer_of_handles, _match_buffer_of_handles),
    Case(symbolic_shape, _symbolic_shape, shapes={"A": (3, 4), "B": (3,)}),
    Case(strided_buffer, _strided_buffer),
    Case(match_buffer_options, _match_buffer_options),
    Case(function_level_alloc, _function_level_alloc),
    Case(alloc_with_scope_and_dtype, _alloc_with_scope_and_dtype),
    Case(block_level_alloc, _block_level_alloc),
    Case(three_dimensional, _three_dimensional),
    Case(zero_dimensional, _zero_dimensional),
    Case(int8_buffers, _int8_buffers),
    Case(bool_buffer, _bool_buffer),
    Case(bfloat16_buffer, _bfloat16_buffer, rtol=1e-2),
    Case(uint16_and_int16, _uint16_and_int16),
    Case(reinterpret_bits, _reinterpret_bits),
]


@T.prim_func
def decl_buffer_view_of_parameter(A: T.Buffer((4, 4), "float32")):
    A_flat = T.decl_buffer((16,), "float32", data=A.data)
    for i in range(16):
        A_flat[i] = A_flat[i] + T.float32(i)


def _decl_buffer_view_of_parameter(a):
    a += np.arange(16).reshape(4, 4)


@T.prim_func
def decl_buffer_view_of_allocation(A: T.Buffer((8,), "float32")):
    tmp = T.decl_buffer((8,), "float32")
    with T.decl_buffer((2, 4), "float32", data=tmp.data) as tmp_2d:
        for i, j in T.grid(2, 4):
            tmp_2d[i, j] = A[j * 2 + i]
    for i in range(8):
        A[i] = tmp[i]


def _decl_buffer_view_of_allocation(a):
    a[:] = a.reshape(4, 2).T.reshape(8)


CASES += [
    Case(decl_buffer_view_of_parameter, _decl_buffer_view_of_parameter),
    Case(decl_buffer_view_of_allocation, _decl_buffer_view_of_allocation),
]
