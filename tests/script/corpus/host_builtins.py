"""Constant buffers (``T.allocate_const``), TVM's stage IR (``T.realize``, ``T.prefetch``),
8-bit float and void dtypes, ``T.isnullptr``, ``T.call_pure_extern`` and TVM's host-side
builtins (``T.call_cpacked``, the LLVM intrinsic calls, ``T.tvm_struct_get/set``,
``T.tvm_stack_*``), which are printed and parsed but not built."""

from __future__ import annotations

import numpy as np

from corpus import Case
from tilewright.script import tir as T

TABLE = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]
FILL_VOID_C = (
    "static void corpus_fill_void(float* p, int32_t n) "
    "{ for (int32_t k = 0; k < n; ++k) p[k] = -1.0f; }"
)


@T.prim_func
def allocate_const_table(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.allocate_const([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5], "float32", [8])
    for i in range(8):
        C[i] = A[i] + B[i]


def _allocate_const_table(a, c):
    c[:] = a + np.array(TABLE, "float32")


@T.prim_func
def allocate_const_lookup(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
    squares = T.allocate_const([0, 1, 4, 9, 16, 25, 36, 49, 64, 81], "int32", [10])
    for i in range(16):
        B[i] = squares[A[i]] - 7


def _allocate_const_lookup(a, b):
    b[:] = a * a - 7


@T.prim_func
def allocate_const_view(A: T.Buffer((2, 4), "int32"), C: T.Buffer((2, 4), "int32")):
    # TVM's own spelling: the storage, then a buffer declared over it.
    with T.allocate_const([1, -2, 3, 4, 5, 6, -7, 8], "int32", [8]) as K:
        K_2d = T.decl_buffer((2, 4), "int32", data=K)
        for i, j in T.grid(2, 4):
            C[i, j] = A[i, j] * K_2d[i, j]
    for j in range(4):
        C[0, j] = C[0, j] + 100


def _allocate_const_view(a, c):
    c[:] = a * np.array([[1, -2, 3, 4], [5, 6, -7, 8]], "int32")
    c[0] += 100


@T.prim_func
def allocate_const_2d(A: T.Buffer((2, 3), "float64"), C: T.Buffer((2, 3), "float64")):
    W = T.allocate_const([[1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]], "float64", [2, 3])
    for i, j in T.grid(2, 3):
        C[i, j] = A[i, j] * W[i, j]


def _allocate_const_2d(a, c):
    c[:] = a * np.array([[1, 2, 3], [-1, -2, -3]], "float64")


@T.prim_func
def allocate_const_half(C: T.Buffer((4,), "float32")):
    H = T.allocate_const([0.1, 1.5, -2.25, 65504.0], "float16", [4])
    for i in range(4):
        C[i] = T.Cast("float32", H[i])


def _allocate_const_half(c):
    c[:] = np.array([0.1, 1.5, -2.25, 65504.0], "float16")


@T.prim_func
def realize_whole_buffer(A: T.Buffer((4, 8), "float32"), C: T.Buffer((4, 8), "float32")):
    B = T.Buffer((4, 8), "float32")
    with T.realize(B[0:4, 0:8], ""):
        T.prefetch(A, [T.Range(0, 4), T.Range(0, 8)])
        for i, j in T.grid(4, 8):
            B[i, j] = A[i, j] * T.float32(2)
        for i, j in T.grid(4, 8):
            C[i, j] = B[i, j] + T.float32(1)


def _realize_whole_buffer(a, c):
    c[:] = a * 2 + 1


@T.prim_func
def realize_no_scope(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.Buffer((8,), "float32")
    with T.realize(B[0:8]):
        for i in range(8):
            B[i] = A[i] + A[i]
        for i in range(8):
            C[i] = B[7 - i]


def _realize_no_scope(a, c):
    c[:] = (a + a)[::-1]


@T.prim_func
def realize_partial_region(A: T.Buffer((16,), "float32")):
    B = T.Buffer((16,), "float32")
    with T.realize(B[4:12], "", condition=A[0] > T.float32(0)):
        for i in range(4, 12):
            B[i] = A[i]


@T.prim_func
def prefetch_hint(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8,), "float32")):
    for i in range(8):
        T.prefetch(A, [T.Range(i, i + 1), T.Range(0, 8)])
        C[i] = A[i, 0] + A[i, 7]


def _prefetch_hint(a, c):
    c[:] = a[:, 0] + a[:, 7]


@T.prim_func
def isnullptr_guard(A: T.Buffer((8,), "float32")):
    if not T.isnullptr(A.data):
        for i in range(8):
            A[i] = A[i] * T.float32(3)


def _isnullptr_guard(a):
    a *= 3


@T.prim_func
def call_pure_extern_libm(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.call_pure_extern("float32", "fabsf", A[i] - T.float32(1))


def _call_pure_extern_libm(a, b):
    b[:] = np.abs(a - 1)


@T.prim_func
def call_extern_void(A: T.Buffer((8,), "float32")):
    for _i in T.serial(1, annotations={"pragma_import_c": FILL_VOID_C}):
        T.evaluate(T.call_extern(T.void, "corpus_fill_void", A.data, 8))


def _call_extern_void(a):
    a[:] = -1


@T.prim_func
def float8_casts(
    A: T.Buffer((8,), "float8_e4m3fn"),
    B: T.Buffer((8,), T.float8_e5m2),
    C: T.Buffer((8,), "float32"),
):
    for i in range(8):
        C[i] = T.Cast("float32", A[i]) + T.Cast("float32", B[i])
        A[i] = T.Cast("float8_e4m3fn", C[i] * T.float32(0.5))
    A[0] = T.float8_e4m3fn(1.5)


def _float8_casts(a, b, c):
    c[:] = a.astype("float32") + b.astype("float32")
    a[:] = (c * np.float32(0.5)).astype(a.dtype)
    a[0] = 1.5


@T.prim_func
def float8_arithmetic(A: T.Buffer((16,), "float8_e5m2"), B: T.Buffer((16,), "float8_e5m2")):
    for i in range(16):
        B[i] = A[i] * A[i] + A[i] - T.float8_e5m2(0.75)


def _float8_arithmetic(a, b):
    b[:] = a * a + a - a.dtype.type(0.75)


@T.prim_func
def allocate_const_float8(C: T.Buffer((4,), "float32")):
    F = T.allocate_const([0.1, 1.5, -3.3, 448.0], "float8_e4m3fn", [4])
    for i in range(4):
        C[i] = T.Cast("float32", F[i])


def _allocate_const_float8(c):
    c[:] = np.array([0.1, 1.5, -3.3, 448.0]).astype("float8_e4m3fn")


@T.prim_func
def call_cpacked(A: T.Buffer((8,), "float32"), n: T.int32):
    T.evaluate(T.call_cpacked("tvm_contrib_my_func", A.data, n))


@T.prim_func
def call_llvm_intrinsics(A: T.Buffer((8,), "float32")):
    for i in range(8):
        A[i] = T.call_llvm_pure_intrin("float32", "llvm.sqrt", A[i]) + T.call_llvm_intrin(
            "float32", "llvm.fabs", A[i]
        )


@T.prim_func
def packed_call_abi(A: T.Buffer((8,), "float32"), n: T.int32):
    stack_array: T.handle = T.tvm_stack_alloca("array", 1)
    stack_shape: T.handle = T.tvm_stack_make_shape(8)
    null = T.reinterpret(T.uint64(0), dtype="handle")
    array: T.handle = T.tvm_stack_make_array(A.data, stack_shape, null, 1, T.float32(0), 0)
    T.evaluate(T.tvm_struct_set(stack_array, 0, 1, array))
    ndim: T.int32 = T.tvm_struct_get(stack_array, 0, 4, "int32")
    A[0] = T.Cast("float32", ndim + n)


CASES = [
    Case(allocate_const_table, _allocate_const_table),
    Case(allocate_const_lookup, _allocate_const_lookup),
    Case(allocate_const_view, _allocate_const_view),
    Case(allocate_const_2d, _allocate_const_2d),
    Case(allocate_const_half, _allocate_const_half, rtol=1e-3),
    Case(realize_whole_buffer, _realize_whole_buffer),
    Case(realize_no_scope, _realize_no_scope),
    Case(realize_partial_region),
    Case(prefetch_hint, _prefetch_hint),
    Case(isnullptr_guard, _isnullptr_guard),
    Case(call_pure_extern_libm, _call_pure_extern_libm),
    Case(call_extern_void, _call_extern_void),
    Case(float8_casts, _float8_casts),
    Case(float8_arithmetic, _float8_arithmetic),
    Case(allocate_const_float8, _allocate_const_float8),
    Case(call_cpacked),
    Case(call_llvm_intrinsics),
    Case(packed_call_abi),
]
