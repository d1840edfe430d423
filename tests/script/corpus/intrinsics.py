"""Calls: external C functions and the addresses they take, ``T.call_intrin``, TVM's
fixed-point and bit-count builtins, vectors (``T.Ramp``, ``T.Broadcast``, ``T.Shuffle``),
``T.call_packed`` and ``@T.prim_func
def return_value(a: T.int32) -> T.int32:
    T.ret(a + 1)


@T.prim_func
def tuple_value(A: T.Buffer((4,), "float32")):
    T.evaluate(T.tvm_tuple(A.data, 4))


@T.prim_func(check_well_formed=False)``."""

from __future__ import annotations

import numpy as np

from corpus import Case
from tilewright.script import tir as T

FILL_C = (
    "static int32_t corpus_fill(float* p, int32_t n) "
    "{ for (int32_t k = 0; k < n; ++k) p[k] = (float)k; return 0; }"
)
SCALE_C = "static float corpus_scale(float x) { return x * 3.0f; }"


@T.prim_func
def call_extern_data(A: T.Buffer((8,), "float32")):
    for _i in T.serial(1, annotations={"pragma_import_c": FILL_C}):
        T.evaluate(T.call_extern("int32", "corpus_fill", A.data, 8))


def _call_extern_data(a):
    a[:] = np.arange(8)


@T.prim_func
def call_extern_value(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8, annotations={"pragma_import_c": SCALE_C}):
        B[i] = T.call_extern("float32", "corpus_scale", A[i])


def _call_extern_value(a, b):
    b[:] = a * 3


@T.prim_func
def call_extern_libm(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.call_extern("float32", "fabsf", A[i] - T.float32(1))


def _call_extern_libm(a, b):
    b[:] = np.abs(a - 1)


@T.prim_func
def access_ptr_argument(A: T.Buffer((4, 4), "float32")):
    for _i in T.serial(1, annotations={"pragma_import_c": FILL_C}):
        T.evaluate(T.call_extern("int32", "corpus_fill", A.access_ptr("w", offset=4), 8))


def _access_ptr_argument(a):
    a[1:3] = np.arange(8).reshape(2, 4)


@T.prim_func
def tvm_access_ptr_argument(A: T.Buffer((8,), "float32")):
    for _i in T.serial(1, annotations={"pragma_import_c": FILL_C}):
        T.evaluate(
            T.call_extern(
                "int32",
                "corpus_fill",
                T.tvm_access_ptr(T.type_annotation("float32"), A.data, 2, 4, 2),
                4,
            )
        )


def _tvm_access_ptr_argument(a):
    a[2:6] = np.arange(4)


@T.prim_func
def address_of_argument(A: T.Buffer((8,), "float32")):
    for _i in T.serial(1, annotations={"pragma_import_c": FILL_C}):
        T.evaluate(T.call_extern("int32", "corpus_fill", T.address_of(A[3]), 5))


def _address_of_argument(a):
    a[3:] = np.arange(5)


@T.prim_func
def call_intrin_math(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.call_intrin("float32", "tir.exp", A[i]) + T.call_intrin(
            "float32", "tir.sqrt", A[i]
        )


def _call_intrin_math(a, b):
    b[:] = np.exp(a) + np.sqrt(a)


@T.prim_func
def q_multiply_shift(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        B[i] = T.q_multiply_shift(A[i] * 1000 - 3000, 1518500250, 31, 1)


def _q_multiply_shift(a, b):
    x = (a.astype("int64") * 1000 - 3000) << 1
    b[:] = (x * 1518500250 + (1 << 30)) >> 31


@T.prim_func
def q_multiply_shift_right(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        B[i] = T.q_multiply_shift(A[i] * 100001, 1073741824, 31, -2)


def _q_multiply_shift_right(a, b):
    x = a.astype("int64") * 100001
    b[:] = (x * 1073741824 + (1 << 32)) >> 33


@T.prim_func
def bit_counts(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32"), C: T.Buffer((8,), "int32")):
    for i in range(8):
        B[i] = T.popcount(A[i] * 37 + 1)
        C[i] = T.clz(A[i] + 1)


def _bit_counts(a, b, c):
    x = a * 37 + 1
    b[:] = [bin(v).count("1") for v in x]
    c[:] = [32 - int(v).bit_length() for v in a + 1]


@T.prim_func
def bit_counts_int64(A: T.Buffer((4,), "int64"), B: T.Buffer((4,), "int64")):
    for i in range(4):
        B[i] = T.popcount(A[i] << T.int64(40)) + T.clz(A[i] + T.int64(1))


def _bit_counts_int64(a, b):
    b[:] = [bin(int(v) << 40).count("1") + 64 - (int(v) + 1).bit_length() for v in a]


@T.prim_func
def ramp_and_broadcast(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    B[T.Ramp(0, 1, 4)] = A[T.Ramp(0, 1, 4)] + T.Broadcast(T.float32(1), 4)
    B[T.ramp(4, 1, 4)] = A[T.ramp(4, 1, 4)] * T.broadcast(T.float32(2), 4)


def _ramp_and_broadcast(a, b):
    b[:4] = a[:4] + 1
    b[4:] = a[4:] * 2


@T.prim_func
def strided_ramp(A: T.Buffer((8,), "float32"), B: T.Buffer((4,), "float32")):
    B[T.Ramp(0, 1, 4)] = A[T.Ramp(1, 2, 4)]


def _strided_ramp(a, b):
    b[:] = a[1::2]


@T.prim_func
def vector_let(A: T.Buffer((8,), "float32")):
    v: T.float32x4 = A[T.Ramp(0, 1, 4)]
    A[T.Ramp(4, 1, 4)] = v * v


def _vector_let(a):
    a[4:] = a[:4] ** 2


@T.prim_func
def vload_vstore(A: T.Buffer((2, 8), "float32"), B: T.Buffer((2, 8), "float32")):
    for i in range(2):
        B.vstore([i, 0], A.vload([i, 4], "float32x4"))
        B.vstore([i, 4], A.vload([i, 0], "float32x4") + A.vload([i, 0]))


def _vload_vstore(a, b):
    b[:, :4] = a[:, 4:]
    b[:, 4:] = a[:, :4] + a[:, :1]


@T.prim_func
def shuffle_lanes(A: T.Buffer((8,), "float32")):
    A[T.Ramp(0, 1, 4)] = T.Shuffle([A[T.Ramp(0, 1, 4)], A[T.Ramp(4, 1, 4)]], [7, 6, 1, 0])


def _shuffle_lanes(a):
    a[:4] = a[[7, 6, 1, 0]]


@T.prim_func
def call_packed(A: T.Buffer((8,), "float32"), n: T.int32):
    T.evaluate(T.call_packed("tvm.contrib.my_func", A.data, n))


@T.prim_func
def return_value(a: T.int32) -> T.int32:
    T.ret(a + 1)


@T.prim_func
def tuple_value(A: T.Buffer((4,), "float32")):
    T.evaluate(T.tvm_tuple(A.data, 4))


@T.prim_func(check_well_formed=False)
def not_checked(A: T.Buffer((4,), "float32")):
    for i in range(4):
        A[i] = A[i] + T.float32(0.5)


def _not_checked(a):
    a += 0.5


@T.prim_func(private=True)
def private_function(A: T.Buffer((4,), "float32")):
    for i in range(4):
        A[i] = T.float32(i)


def _private_function(a):
    a[:] = np.arange(4)


CASES = [
    Case(call_extern_data, _call_extern_data),
    Case(call_extern_value, _call_extern_value),
    Case(call_extern_libm, _call_extern_libm),
    Case(access_ptr_argument, _access_ptr_argument),
    Case(tvm_access_ptr_argument, _tvm_access_ptr_argument),
    Case(address_of_argument, _address_of_argument),
    Case(call_intrin_math, _call_intrin_math),
    Case(q_multiply_shift, _q_multiply_shift),
    Case(q_multiply_shift_right, _q_multiply_shift_right),
    Case(bit_counts, _bit_counts),
    Case(bit_counts_int64, _bit_counts_int64),
    Case(ramp_and_broadcast, _ramp_and_broadcast),
    Case(strided_ramp, _strided_ramp),
    Case(vector_let, _vector_let),
    Case(vload_vstore, _vload_vstore),
    Case(shuffle_lanes, _shuffle_lanes),
    Case(call_packed),
    Case(return_value),
    Case(tuple_value),
    Case(not_checked, _not_checked),
    Case(private_function, _private_function),
]
