"""Expressions: arithmetic, division kinds, casts, selections, logic, lets, constants."""

from __future__ import annotations

import numpy as np

import tilewright as tvm
from corpus import Case
from tilewright.script import tir as T


@T.prim_func
def add_sub_mul(
    A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")
):
    for i in range(8):
        C[i] = A[i] * B[i] + A[i] - B[i]


def _add_sub_mul(a, b, c):
    c[:] = a * b + a - b


@T.prim_func
def float_divide(
    A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")
):
    for i in range(8):
        C[i] = A[i] / B[i]


def _float_divide(a, b, c):
    c[:] = a / b


@T.prim_func
def floor_division(B: T.Buffer((16,), "int32"), C: T.Buffer((16,), "int32")):
    for i in range(16):
        B[i] = (i - 8) // 3
        C[i] = (i - 8) % 3


def _floor_division(b, c):
    i = np.arange(16) - 8
    b[:], c[:] = i // 3, i % 3


@T.prim_func
def trunc_division(B: T.Buffer((16,), "int32"), C: T.Buffer((16,), "int32")):
    for i in range(16):
        B[i] = T.truncdiv(i - 8, 3)
        C[i] = T.truncmod(i - 8, 3)


def _trunc_division(b, c):
    i = np.arange(16) - 8
    b[:] = np.fix(i / 3)
    c[:] = np.fmod(i, 3)


@T.prim_func
def min_max(
    A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")
):
    for i in range(8):
        C[i] = T.max(T.min(A[i], B[i]), T.float32(0.8))


def _min_max(a, b, c):
    c[:] = np.maximum(np.minimum(a, b), np.float32(0.8))


@T.prim_func
def casts(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "int32"), C: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.Cast("int32", A[i] * T.float32(10))
        C[i] = T.float32(i) + T.cast(B[i], "float32")


def _casts(a, b, c):
    b[:] = (a * np.float32(10)).astype("int32")
    c[:] = np.arange(8) + b


@T.prim_func
def select(
    A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")
):
    for i in range(8):
        C[i] = T.Select(A[i] > B[i], A[i], B[i] * T.float32(2))


def _select(a, b, c):
    c[:] = np.where(a > b, a, b * 2)


@T.prim_func
def if_then_else(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.if_then_else(i < 4, A[i], T.float32(0))


def _if_then_else(a, b):
    b[:] = np.where(np.arange(8) < 4, a, 0)


@T.prim_func
def if_then_else_with_dtype(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.if_then_else(A[i] > T.float32(1), A[i], T.float32(1), dtype="float32")


def _if_then_else_with_dtype(a, b):
    b[:] = np.maximum(a, 1)


@T.prim_func
def logic_operators(B: T.Buffer((8,), "bool")):
    for i in range(8):
        B[i] = (i < 3 or i >= 6) and not i == 7  # noqa: SIM201 - a Not node


def _logic_operators(b):
    i = np.arange(8)
    b[:] = ((i < 3) | (i >= 6)) & (i != 7)


@T.prim_func
def logic_functions(B: T.Buffer((8,), "bool")):
    for i in range(8):
        B[i] = T.Or(T.And(T.NE(i, 2), T.EQ(i % 2, 0)), T.Not(i < 7))


def _logic_functions(b):
    i = np.arange(8)
    b[:] = ((i != 2) & (i % 2 == 0)) | ~(i < 7)


@T.prim_func
def tir_all_any(A: T.Buffer((8,), "float32")):
    for i in range(8):
        if tvm.tir.all(i > 1, i < 6, i != 3) or tvm.tir.any(i == 7):
            A[i] = T.float32(0)


def _tir_all_any(a):
    i = np.arange(8)
    a[((i > 1) & (i < 6) & (i != 3)) | (i == 7)] = 0


@T.prim_func
def let_expression(B: T.Buffer((8,), "int32")):
    x = T.int32()
    for i in range(8):
        B[i] = T.Let(x * x + x, where={x: i + 1})


def _let_expression(b):
    x = np.arange(8) + 1
    b[:] = x * x + x


@T.prim_func
def let_call(B: T.Buffer((8,), "int32")):
    x = T.int32()
    for i in range(8):
        B[i] = T.let(x, i * 3, x - 1)


def _let_call(b):
    b[:] = np.arange(8) * 3 - 1


@T.prim_func
def dtype_limits(F: T.Buffer((2,), "float32"), Ints: T.Buffer((4,), "int32")):
    F[0] = T.min_value("float32")
    F[1] = T.max_value("float32")
    Ints[0] = T.Cast("int32", T.min_value("int8"))
    Ints[1] = T.Cast("int32", T.max_value("uint8"))
    Ints[2] = T.min_value("int32")
    Ints[3] = T.max_value("int32")


def _dtype_limits(f, i):
    f[:] = [np.finfo(np.float32).min, np.finfo(np.float32).max]
    i[:] = [-128, 255, np.iinfo(np.int32).min, np.iinfo(np.int32).max]


@T.prim_func
def int64_arithmetic(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int64")):
    for i in range(8):
        B[i] = T.Cast("int64", A[i]) * T.int64(3000000000) + T.int64(-7)


def _int64_arithmetic(a, b):
    b[:] = a.astype("int64") * 3000000000 - 7


@T.prim_func
def float16_arithmetic(A: T.Buffer((8,), "float16"), B: T.Buffer((8,), "float16")):
    for i in range(8):
        B[i] = A[i] * T.float16(0.5) + T.float16(1)


def _float16_arithmetic(a, b):
    b[:] = a * np.float16(0.5) + np.float16(1)


@T.prim_func
def float64_arithmetic(A: T.Buffer((8,), "float64"), B: T.Buffer((8,), "float64")):
    for i in range(8):
        B[i] = A[i] * T.float64(0.001) - T.float64(1e-9)


def _float64_arithmetic(a, b):
    b[:] = a * 0.001 - 1e-9


@T.prim_func
def uint8_wraparound(A: T.Buffer((8,), "uint8"), B: T.Buffer((8,), "uint8")):
    for i in range(8):
        B[i] = A[i] + T.uint8(250)


def _uint8_wraparound(a, b):
    b[:] = (a.astype("int32") + 250) % 256


@T.prim_func
def bit_operators(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        B[i] = (A[i] << 2) | (A[i] >> 1) ^ (A[i] & 3) + ~i


def _bit_operators(a, b):
    i = np.arange(8, dtype="int32")
    b[:] = (a << 2) | ((a >> 1) ^ ((a & 3) + ~i))


@T.prim_func
def bit_functions(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        B[i] = T.bitwise_or(
            T.shift_left(A[i], 3),
            T.bitwise_and(T.bitwise_xor(A[i], 5), T.bitwise_not(T.shift_right(A[i], 1))),
        )


def _bit_functions(a, b):
    b[:] = (a << 3) | ((a ^ 5) & ~(a >> 1))


@T.prim_func
def ceildiv(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        B[i] = T.ceildiv(A[i], 4)


def _ceildiv(a, b):
    b[:] = -(-a // 4)


@T.prim_func
def likely_branch(A: T.Buffer((8,), "float32")):
    for i in range(8):
        if T.likely(i < 7):
            A[i] = A[i] * T.float32(2)


def _likely_branch(a):
    a[:7] *= 2


@T.prim_func
def boolean_constants(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "bool")):
    for i in range(8):
        B[i] = T.Select(A[i] > 5, T.bool(True), T.boolean(False))


def _boolean_constants(a, b):
    b[:] = a > 5


@T.prim_func
def negation(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = -A[i] + T.float32(-1.5)


def _negation(a, b):
    b[:] = -a - np.float32(1.5)


@T.prim_func
def index_arithmetic(A: T.Buffer((16,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = A[i * 2 + 1] - A[15 - i * 2]


def _index_arithmetic(a, b):
    b[:] = a[1::2] - a[15::-2]


CASES = [
    Case(add_sub_mul, _add_sub_mul),
    Case(float_divide, _float_divide),
    Case(floor_division, _floor_division),
    Case(trunc_division, _trunc_division),
    Case(min_max, _min_max),
    Case(casts, _casts),
    Case(select, _select),
    Case(if_then_else, _if_then_else),
    Case(if_then_else_with_dtype, _if_then_else_with_dtype),
    Case(logic_operators, _logic_operators),
    Case(logic_functions, _logic_functions),
    Case(tir_all_any, _tir_all_any),
    Case(let_expression, _let_expression),
    Case(let_call, _let_call),
    Case(dtype_limits, _dtype_limits),
    Case(int64_arithmetic, _int64_arithmetic),
    Case(float16_arithmetic, _float16_arithmetic, rtol=1e-3),
    Case(float64_arithmetic, _float64_arithmetic),
    Case(uint8_wraparound, _uint8_wraparound),
    Case(bit_operators, _bit_operators),
    Case(bit_functions, _bit_functions),
    Case(ceildiv, _ceildiv),
    Case(likely_branch, _likely_branch),
    Case(boolean_constants, _boolean_constants),
    Case(negation, _negation),
    Case(index_arithmetic, _index_arithmetic),
]
