"""Math intrinsics: exponentials, roots, trigonometry, rounding, predicates, ``dtype=``."""

from __future__ import annotations

import numpy as np

from corpus import Case
from tilewright.script import tir as T


@T.prim_func
def exponentials(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = (
            T.exp(A[i])
            + T.exp2(A[i])
            + T.exp10(A[i])
            - T.log(A[i])
            + T.log2(A[i])
            + T.log10(A[i])
            + T.log1p(A[i])
        )


def _exponentials(a, b):
    b[:] = np.exp(a) + np.exp2(a) + 10**a - np.log(a) + np.log2(a) + np.log10(a) + np.log1p(a)


@T.prim_func
def roots(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.sqrt(A[i]) * T.rsqrt(A[i] + T.float32(1))


def _roots(a, b):
    b[:] = np.sqrt(a) / np.sqrt(a + 1)


@T.prim_func
def trigonometry(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.sin(A[i]) + T.cos(A[i]) * T.tan(A[i] * T.float32(0.5))


def _trigonometry(a, b):
    b[:] = np.sin(a) + np.cos(a) * np.tan(a * 0.5)


@T.prim_func
def inverse_trigonometry(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = (
            T.asin(A[i] - T.float32(1))
            + T.acos(A[i] * T.float32(0.5))
            + T.atan(A[i])
            + T.atan2(A[i], T.float32(2))
        )


def _inverse_trigonometry(a, b):
    b[:] = np.arcsin(a - 1) + np.arccos(a * 0.5) + np.arctan(a) + np.arctan2(a, 2)


@T.prim_func
def hyperbolic(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.sinh(A[i]) + T.cosh(A[i]) + T.tanh(A[i])


def _hyperbolic(a, b):
    b[:] = np.sinh(a) + np.cosh(a) + np.tanh(a)


@T.prim_func
def inverse_hyperbolic(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.acosh(A[i] + T.float32(1)) + T.asinh(A[i]) + T.atanh(A[i] * T.float32(0.5))


def _inverse_hyperbolic(a, b):
    b[:] = np.arccosh(a + 1) + np.arcsinh(a) + np.arctanh(a * 0.5)


@T.prim_func
def sigmoid_and_erf(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.sigmoid(A[i]) + T.erf(A[i])


def _sigmoid_and_erf(a, b):
    import math

    b[:] = 1 / (1 + np.exp(-a)) + np.array([math.erf(x) for x in a])


@T.prim_func
def rounding(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = (
            T.floor(A[i] * T.float32(3))
            + T.ceil(A[i] * T.float32(3)) * T.float32(10)
            + T.round(A[i] * T.float32(3)) * T.float32(100)
            + T.trunc(-A[i] * T.float32(3)) * T.float32(1000)
            + T.nearbyint(A[i]) * T.float32(10000)
        )


def _rounding(a, b):
    x = a * np.float32(3)
    b[:] = (
        np.floor(x)
        + np.ceil(x) * 10
        + np.round(x) * 100
        + np.trunc(-x) * 1000
        + np.round(a) * 10000
    )


@T.prim_func
def absolute_values(A: T.Buffer((8,), "float32"), Ints: T.Buffer((8,), "int32")):
    for i in range(8):
        A[i] = T.fabs(A[i] - T.float32(1)) + T.abs(A[i] - T.float32(2))
        Ints[i] = T.abs(Ints[i] - 5)


def _absolute_values(a, i):
    a[:] = np.abs(a - 1) + np.abs(a - 2)
    i[:] = np.abs(i - 5)


@T.prim_func
def binary_math(
    A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")
):
    for i in range(8):
        C[i] = (
            T.pow(A[i], B[i])
            + T.fmod(A[i] * T.float32(7), B[i])
            + T.hypot(A[i], B[i])
            + T.copysign(A[i], B[i] - T.float32(1))
        )


def _binary_math(a, b, c):
    c[:] = np.power(a, b) + np.fmod(a * 7, b) + np.hypot(a, b) + np.copysign(a, b - 1)


@T.prim_func
def power_operator(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = A[i] ** T.float32(2.5)


def _power_operator(a, b):
    b[:] = a**2.5


@T.prim_func
def float_bits(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.ldexp(A[i], 3) + T.nextafter(A[i], T.float32(10)) - A[i]


def _float_bits(a, b):
    b[:] = np.ldexp(a, 3) + (np.nextafter(a, np.float32(10)) - a)


@T.prim_func
def float_predicates(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        B[i] = (
            T.Cast("int32", T.isnan(T.log(A[i] - T.float32(1))))
            + T.Cast("int32", T.isinf(T.float32(1) / (A[i] - A[i]))) * 10
            + T.Cast("int32", T.isfinite(A[i])) * 100
        )


def _float_predicates(a, b):
    with np.errstate(all="ignore"):
        b[:] = np.isnan(np.log(a - 1)) + np.isinf(1 / (a - a)) * 10 + np.isfinite(a) * 100


@T.prim_func
def math_with_dtype(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = (
            T.sqrt(A[i], dtype="float32")
            + T.exp(A[i], dtype="float32")
            + T.tanh(A[i], dtype="float32")
        )


def _math_with_dtype(a, b):
    b[:] = np.sqrt(a) + np.exp(a) + np.tanh(a)


@T.prim_func
def math_on_integers(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.sqrt(A[i] + 1)


def _math_on_integers(a, b):
    b[:] = np.sqrt(a + 1)


@T.prim_func
def math_float64(A: T.Buffer((8,), "float64"), B: T.Buffer((8,), "float64")):
    for i in range(8):
        B[i] = T.exp(A[i]) * T.log(A[i]) + T.pow(A[i], T.float64(0.5))


def _math_float64(a, b):
    b[:] = np.exp(a) * np.log(a) + np.sqrt(a)


@T.prim_func
def math_float16(A: T.Buffer((8,), "float16"), B: T.Buffer((8,), "float16")):
    for i in range(8):
        B[i] = T.exp(A[i]) + T.sqrt(A[i])


def _math_float16(a, b):
    b[:] = np.exp(a.astype("float32")) + np.sqrt(a.astype("float32"))


@T.prim_func
def softmax_row(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    M = T.alloc_buffer((4,))
    S = T.alloc_buffer((4,))
    for i, k in T.grid(4, 8):
        with T.block("max"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                M[vi] = T.min_value("float32")
            M[vi] = T.max(M[vi], A[vi, vk])
    for i, k in T.grid(4, 8):
        with T.block("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + T.exp(A[vi, vk] - M[vi])
    for i, j in T.grid(4, 8):
        with T.block("norm"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = T.exp(A[vi, vj] - M[vi]) / S[vi]


def _softmax_row(a, b):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    b[:] = e / e.sum(axis=1, keepdims=True)


CASES = [
    Case(exponentials, _exponentials, rtol=1e-4),
    Case(roots, _roots),
    Case(trigonometry, _trigonometry),
    Case(inverse_trigonometry, _inverse_trigonometry),
    Case(hyperbolic, _hyperbolic),
    Case(inverse_hyperbolic, _inverse_hyperbolic),
    Case(sigmoid_and_erf, _sigmoid_and_erf),
    Case(rounding, _rounding, low=0.1, high=1.9),
    Case(absolute_values, _absolute_values, low=0.0, high=3.0),
    Case(binary_math, _binary_math),
    Case(power_operator, _power_operator),
    Case(float_bits, _float_bits),
    Case(float_predicates, _float_predicates),
    Case(math_with_dtype, _math_with_dtype),
    Case(math_on_integers, _math_on_integers),
    Case(math_float64, _math_float64),
    Case(math_float16, _math_float16, rtol=2e-3),
    Case(softmax_row, _softmax_row),
]
