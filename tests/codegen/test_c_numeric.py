"""Generated C compiled and run on numpy inputs, compared with numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from c_kernels import I32, flat, func, i32, loop, matmul, module, vector_add

from tilewright.driver import build_lowered
from tilewright.ir import (
    Allocate,
    Broadcast,
    BufferStore,
    ForKind,
    IfThenElse,
    LetStmt,
    Ramp,
    Var,
    decl_buffer,
    dtype,
    op,
    seq,
)

RNG = np.random.default_rng(0)


def test_vector_add_1d():
    rt = build_lowered(vector_add(64), "c")
    a, b = RNG.random(64, dtype="float32"), RNG.random(64, dtype="float32")
    c = np.zeros(64, "float32")
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_flattened_matmul_with_init_and_parallel_loop():
    rt = build_lowered(matmul(16, 8, 12), "c")
    assert "#pragma omp parallel for" in rt.get_source()
    a = RNG.random((16, 12), dtype="float32")
    b = RNG.random((12, 8), dtype="float32")
    c = np.full((16, 8), 7.0, "float32")  # the init must overwrite stale values
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_vectorized_loop_and_ramp_broadcast_store():
    # B[i*4 : i*4+4] = A[i*4 : i*4+4] * 2 + 1 as one vector store, inside a vectorized loop.
    A, B = decl_buffer((32,), "float32", "A"), decl_buffer((32,), "float32", "B")
    i = Var("i", I32)
    ramp = Ramp(i * 4, i32(1), 4)
    value = op.add(op.mul(A.load([ramp]), Broadcast(op.const(2.0, "float32"), 4)), 1.0)
    rt = build_lowered(
        module(func([A, B], loop(i, 8, BufferStore(B, value, (ramp,)), ForKind.VECTORIZED)))
    )
    assert "#pragma GCC ivdep" in rt.get_source()
    a, b = RNG.random(32, dtype="float32"), np.zeros(32, "float32")
    rt["main"](a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_strided_ramp_and_self_overlapping_vector_store():
    # A[1:5] = A[0:8:2] + 10: every lane must read before any lane writes.
    A = decl_buffer((8,), "int32", "A")
    store = BufferStore(
        A,
        op.add(A.load([Ramp(i32(0), i32(2), 4)]), Broadcast(i32(10), 4)),
        (Ramp(i32(1), i32(1), 4),),
    )
    rt = build_lowered(module(func([A], store)), "c")
    a = np.arange(8, dtype="int32")
    expected = a.copy()
    expected[1:5] = a[0:8:2] + 10
    rt["main"](a)
    np.testing.assert_array_equal(a, expected)


def test_vector_let_binds_lane_array():
    A, B = decl_buffer((8,), "float32", "A"), decl_buffer((8,), "float32", "B")
    v = Var("v", dtype("float32x8"))
    ramp = Ramp(i32(0), i32(1), 8)
    body = LetStmt(v, A.load([ramp]), BufferStore(B, op.mul(v, v), (ramp,)))
    rt = build_lowered(module(func([A, B], body)), "c")
    a, b = RNG.random(8, dtype="float32"), np.zeros(8, "float32")
    rt["main"](a, b)
    np.testing.assert_allclose(b, a * a, rtol=1e-6)


@pytest.mark.parametrize("size", [16, 1 << 15])  # on the stack, then on the heap
def test_allocated_local_buffer(size):
    A, B = decl_buffer((size,), "float32", "A"), decl_buffer((size,), "float32", "B")
    tmp = decl_buffer((size,), "float32", "tmp", scope="local")
    i, j = Var("i", I32), Var("j", I32)
    body = Allocate(tmp, seq(
        loop(i, size, BufferStore(tmp, op.mul(A[i], 3.0), (i,))),
        loop(j, size, BufferStore(B, op.add(tmp[size - 1 - j], 1.0), (j,))),
    ))  # fmt: skip
    rt = build_lowered(module(func([A, B], body)), "c")
    assert ("aligned_alloc" in rt.get_source()) == (size * 4 > 64 * 1024)
    a, b = RNG.random(size, dtype="float32"), np.zeros(size, "float32")
    rt["main"](a, b)
    np.testing.assert_allclose(b, a[::-1] * 3 + 1, rtol=1e-6)


@pytest.mark.parametrize("dt", ["int8", "int32", "int64"])
def test_floordiv_floormod_on_negative_values(dt):
    A, B = decl_buffer((64,), dt, "A"), decl_buffer((64,), dt, "B")
    Q, R = decl_buffer((64,), dt, "Q"), decl_buffer((64,), dt, "R")
    i = Var("i", I32)
    body = loop(i, 64, seq(
        BufferStore(Q, op.floordiv(A[i], B[i]), (i,)),
        BufferStore(R, op.floormod(A[i], B[i]), (i,)),
    ))  # fmt: skip
    rt = build_lowered(module(func([A, B, Q, R], body)), "c")
    a = RNG.integers(-100, 100, 64).astype(dt)
    b = RNG.choice([-7, -3, -1, 1, 2, 5], 64).astype(dt)
    q, r = np.zeros(64, dt), np.zeros(64, dt)
    rt["main"](a, b, q, r)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)


def test_floordiv_by_constant_of_shifted_loop_var():
    # (i - 8) // 4 and (i - 8) % 4 for i in [0, 16): the dividend is negative for i < 8.
    A, B = decl_buffer((16,), "int32", "A"), decl_buffer((16,), "int32", "B")
    i = Var("i", I32)
    body = loop(i, 16, seq(BufferStore(A, op.floordiv(i - 8, 4), (i,)),
                           BufferStore(B, op.floormod(i - 8, 4), (i,))))  # fmt: skip
    rt = build_lowered(module(func([A, B], body)), "c")
    a, b = np.zeros(16, "int32"), np.zeros(16, "int32")
    rt["main"](a, b)
    np.testing.assert_array_equal(a, (np.arange(16) - 8) // 4)
    np.testing.assert_array_equal(b, (np.arange(16) - 8) % 4)


def test_exp_max_select_if_then_else():
    A, B = decl_buffer((64,), "float32", "A"), decl_buffer((64,), "float32", "B")
    i = Var("i", I32)
    x = A[i]
    value = op.add(
        op.max_value(op.math_call("exp", x), 1.5),
        op.add(op.select(op.gt(x, 0.0), x, op.mul(x, -2.0)),
               op.if_then_else(op.lt(i, 32), op.const(100.0, "float32"), 0.0)),
    )  # fmt: skip
    rt = build_lowered(module(func([A, B], loop(i, 64, BufferStore(B, value, (i,))))))
    a, b = RNG.standard_normal(64).astype("float32"), np.zeros(64, "float32")
    rt["main"](a, b)
    expected = np.maximum(np.exp(a), 1.5) + np.where(a > 0, a, a * -2) + (np.arange(64) < 32) * 100
    np.testing.assert_allclose(b, expected, rtol=1e-5)


@pytest.mark.parametrize("dt", ["int8", "float16", "bfloat16", "float64", "uint16"])
def test_element_types(dt):
    rt = build_lowered(vector_add(50, dt=dt), "c")
    np_dt = ml_dtypes.bfloat16 if dt == "bfloat16" else np.dtype(dt)
    a = (RNG.standard_normal(50) * 20).astype(np_dt)
    b = (RNG.standard_normal(50) * 20).astype(np_dt)
    if dt == "int8":
        a, b = (RNG.integers(-60, 60, 50).astype(dt) for _ in range(2))
    c = np.zeros(50, np_dt)
    rt["main"](a, b, c)
    np.testing.assert_array_equal(c, (a + b).astype(np_dt))


def test_float16_special_values_round_trip():
    A, B = decl_buffer((8,), "float16", "A"), decl_buffer((8,), "float16", "B")
    i = Var("i", I32)
    value = op.mul(A[i], op.const(1.0, "float16"))
    rt = build_lowered(module(func([A, B], loop(i, 8, BufferStore(B, value, (i,))))))
    a = np.array([np.inf, -np.inf, 65504, 6e-8, -6e-5, 0.0, -0.0, 1 / 3], "float16")
    b = np.zeros(8, "float16")
    rt["main"](a, b)
    np.testing.assert_array_equal(b.view("uint16"), a.view("uint16"))


def test_bool_buffers_and_logic():
    A, B = decl_buffer((16,), "bool", "A"), decl_buffer((16,), "bool", "B")
    C = decl_buffer((16,), "bool", "C")
    i = Var("i", I32)
    value = op.logical_or(op.logical_and(A[i], op.logical_not(B[i])), op.eq(i, 3))
    rt = build_lowered(module(func([A, B, C], loop(i, 16, BufferStore(C, value, (i,))))))
    a, b = RNG.random(16) > 0.5, RNG.random(16) > 0.5
    c = np.zeros(16, bool)
    rt["main"](a, b, c)
    np.testing.assert_array_equal(c, (a & ~b) | (np.arange(16) == 3))


def test_symbolic_shape_binds_from_arguments():
    n = Var("n", I32)
    A, B = decl_buffer((n, 4), "float32", "A"), decl_buffer((n, 4), "float32", "B")
    a_flat, b_flat = flat(A), flat(B)
    i = Var("i", I32)
    body = loop(i, n * 4, BufferStore(b_flat, op.add(a_flat[i], 1.0), (i,)))
    rt = build_lowered(module(func([A, B], body)), "c")
    assert "int64_t n" in rt.get_source()
    for rows in (1, 5):
        a, b = RNG.random((rows, 4), dtype="float32"), np.zeros((rows, 4), "float32")
        rt["main"](a, b)
        np.testing.assert_allclose(b, a + 1, rtol=1e-6)


def test_scalar_parameters_and_guard():
    A = decl_buffer((10,), "float32", "A")
    alpha, limit = Var("alpha", dtype("float32")), Var("limit", I32)
    i = Var("i", I32)
    body = loop(i, 10, IfThenElse(op.lt(i, limit),
                                  BufferStore(A, op.mul(A[i], alpha), (i,))))  # fmt: skip
    rt = build_lowered(module(func([A], body, (alpha, limit))), "c")
    a = np.ones(10, "float32")
    rt["main"](a, 2.5, 4)
    np.testing.assert_array_equal(a, [2.5] * 4 + [1.0] * 6)


def test_two_functions_in_one_module():
    mod = vector_add(8).with_function("double_it", vector_add(8)["main"])
    rt = build_lowered(mod, "c")
    a, b, c = np.ones(8, "float32"), np.ones(8, "float32"), np.zeros(8, "float32")
    rt["double_it"](a, b, c)
    np.testing.assert_array_equal(c, 2.0)
    assert sorted(rt.function_names()) == ["double_it", "main"]


def test_heap_buffers_of_a_parallel_loop_are_allocated_once_per_thread():
    # Each of 8 parallel rows fills a 128 KB scratch buffer (heap), allocated once per thread
    # around "omp for" rather than once per iteration, and a small one (stack), declared in
    # the loop body (its values die with each iteration, which the C compiler exploits).
    rows, size = 8, 1 << 15
    A, B = decl_buffer((rows * size,), "float32", "A"), decl_buffer((rows,), "float32", "B")
    big = decl_buffer((size,), "float32", "big", scope="global")
    small = decl_buffer((4,), "float32", "small", scope="local")
    r, i = Var("r", I32), Var("i", I32)
    body = Allocate(small, Allocate(big, seq(
        loop(i, size, BufferStore(big, op.mul(A[op.add(op.mul(r, size), i)], 2.0), (i,))),
        BufferStore(small, big[size - 1], (i32(0),)),
        BufferStore(B, op.add(small[0], big[0]), (r,)),
    )))  # fmt: skip
    rt = build_lowered(module(func([A, B], loop(r, rows, body, ForKind.PARALLEL))), "c")
    source = rt.get_source()
    head = source.index("#pragma omp parallel\n")
    assert source.index("aligned_alloc", head) < source.index("#pragma omp for", head)
    assert source.index("#pragma omp for", head) < source.index("float small[4]", head)
    assert source.count("free(big)") == 1
    a, b = RNG.random(rows * size, dtype="float32"), np.zeros(rows, "float32")
    rt["main"](a, b)
    rows_of_a = a.reshape(rows, size)
    np.testing.assert_allclose(b, rows_of_a[:, -1] * 2 + rows_of_a[:, 0] * 2, rtol=1e-6)
