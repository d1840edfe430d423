"""Bit-exact dtype semantics of the generated C: half-precision conversions, integer
division helpers, casts, and the remaining statement kinds."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
from c_kernels import I32, func, i32, loop, module
from hypothesis import given, settings
from hypothesis import strategies as st

from tilewright.driver import build_lowered
from tilewright.ir import (
    AttrStmt,
    Broadcast,
    BufferStore,
    Cast,
    IfThenElse,
    LetStmt,
    Ramp,
    Var,
    decl_buffer,
    dtype,
    op,
    seq,
)


def cast_kernel(src: str, dst: str, n: int):
    A, B = decl_buffer((n,), src, "A"), decl_buffer((n,), dst, "B")
    i = Var("i", I32)
    return build_lowered(module(func([A, B], loop(i, n, BufferStore(B, Cast(dtype(dst), A[i]),
                                                                           (i,))))))  # fmt: skip


def test_every_float16_converts_exactly_to_float32():
    rt = cast_kernel("float16", "float32", 65536)
    halves = np.arange(65536, dtype="uint32").astype("uint16").view("float16")
    out = np.zeros(65536, "float32")
    rt["main"](halves, out)
    expected = halves.astype("float32")
    same = (out.view("uint32") == expected.view("uint32")) | (np.isnan(out) & np.isnan(expected))
    assert same.all()


def test_float32_to_half_types_round_to_nearest_even():
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, 20000, dtype="uint64").astype("uint32")
    values = np.concatenate([
        bits.view("float32"),
        (rng.standard_normal(20000) * 1e-5).astype("float32"),  # half subnormals
        np.array([65504, 65519.99, 65520, -65520, 2**-25, 2**-24 * 1.5, 0.0, -0.0], "float32"),
    ])  # fmt: skip
    for name, np_type in (("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)):
        rt = cast_kernel("float32", name, values.size)
        out = np.zeros(values.size, np_type)
        rt["main"](values, out)
        with np.errstate(over="ignore", invalid="ignore"):
            expected = values.astype(np_type)
        finite = ~np.isnan(expected.astype("float32"))
        np.testing.assert_array_equal(out.view("uint16")[finite], expected.view("uint16")[finite])
        assert np.isnan(out.astype("float32")[~finite]).all()


@functools.cache
def div_kernel():
    A, B = decl_buffer((64,), "int64", "A"), decl_buffer((64,), "int64", "B")
    Q, R = decl_buffer((64,), "int64", "Q"), decl_buffer((64,), "int64", "R")
    i = Var("i", I32)
    body = loop(i, 64, seq(BufferStore(Q, op.floordiv(A[i], B[i]), (i,)),
                           BufferStore(R, op.floormod(A[i], B[i]), (i,))))  # fmt: skip
    return build_lowered(module(func([A, B, Q, R], body)), "c")


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(-(2**62), 2**62), min_size=64, max_size=64),
    st.lists(st.integers(-(2**20), 2**20).filter(lambda v: v != 0), min_size=64, max_size=64),
)
def test_floordiv_floormod_match_python(numerators, divisors):
    a, b = np.array(numerators, "int64"), np.array(divisors, "int64")
    q, r = np.zeros(64, "int64"), np.zeros(64, "int64")
    div_kernel()["main"](a, b, q, r)
    assert q.tolist() == [x // y for x, y in zip(numerators, divisors)]
    assert r.tolist() == [x % y for x, y in zip(numerators, divisors)]


def test_let_attr_else_if_and_vector_half_store():
    A = decl_buffer((8,), "float16", "A")
    B = decl_buffer((8,), "int32", "B")
    i, t = Var("i", I32), Var("t", I32)
    classify = IfThenElse(
        op.lt(t, 3),
        BufferStore(B, i32(-1), (i,)),
        IfThenElse(op.lt(t, 6), BufferStore(B, i32(0), (i,)), BufferStore(B, t, (i,))),
    )
    body = seq(
        AttrStmt(i32(0), "pragma_note", i32(1), loop(i, 8, LetStmt(t, op.mul(i, 1), classify))),
        BufferStore(A, op.add(A.load([Ramp(i32(0), i32(1), 8)]),
                              Broadcast(op.const(0.5, "float16"), 8)),
                    (Ramp(i32(0), i32(1), 8),)),
    )  # fmt: skip
    rt = build_lowered(module(func([A, B], body)), "c")
    assert "} else if (t < 6) {" in rt.get_source()
    a, b = np.arange(8, dtype="float16"), np.zeros(8, "int32")
    rt["main"](a, b)
    np.testing.assert_array_equal(b, [-1, -1, -1, 0, 0, 0, 6, 7])
    np.testing.assert_array_equal(a, np.arange(8, dtype="float16") + np.float16(0.5))
