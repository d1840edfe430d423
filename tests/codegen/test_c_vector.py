"""Vector stores written as GCC vector extensions (``codegen/c_vector.py``): the source holds
vector code where the extension covers the store, a per-lane loop where it does not, and
every kernel computes what numpy computes."""

from __future__ import annotations

import numpy as np
import pytest
from c_kernels import I32, func, i32, loop, module

import tilewright as tw
from tilewright.codegen.c_vector import lane_parts
from tilewright.driver import build_lowered
from tilewright.ir import Broadcast, BufferStore, ForKind, Ramp, Var, decl_buffer, dtype, op
from tilewright.runtime.c_compiler import native_vector_bytes
from tilewright.schedule import Schedule
from tilewright.script import tir as T

RNG = np.random.default_rng(0)


def _accumulate(lanes: int, dt: str = "float32"):
    """C[r*lanes : (r+1)*lanes] += a[r] * B[lanes] for r < 4: a register tile's update."""
    A = decl_buffer((4,), dt, "A")
    B = decl_buffer((lanes,), dt, "B")
    C = decl_buffer((4 * lanes,), dt, "C")
    r = Var("r", I32)
    ramp = Ramp(r * lanes, i32(1), lanes)
    value = op.add(
        C.load([ramp]), op.mul(Broadcast(A[r], lanes), B.load([Ramp(i32(0), i32(1), lanes)]))
    )
    return module(func([A, B, C], loop(r, 4, BufferStore(C, value, (ramp,)))))


@pytest.mark.parametrize(
    ("lanes", "dt"), [(4, "float32"), (16, "float32"), (32, "float32"), (24, "float32"),
                      (40, "float32"), (8, "float64"), (16, "int32"), (4, "int64")]
)  # fmt: skip
def test_accumulator_stores_become_vector_code(lanes: int, dt: str) -> None:
    rt = build_lowered(_accumulate(lanes, dt), "c")
    src = rt.get_source()
    # One vector type per power-of-two part of the lanes (40: 32 then 8).
    for _, part in lane_parts(dtype(dt).with_lanes(lanes)):
        assert f"tw_vstore_{dt}x{part}(" in src
    # Wider than 16 bytes: register-wide chunks in an unrolled loop.
    largest = 1 << (lanes.bit_length() - 1)
    assert ("chunk" in src) == (largest * dtype(dt).bits > 128)
    a = (RNG.random(4) * 10).astype(dt)
    b = (RNG.random(lanes) * 10).astype(dt)
    c = (RNG.random(4 * lanes) * 10).astype(dt)
    want = c + np.repeat(a, lanes) * np.tile(b, 4)
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-6)


def test_overlapping_store_is_not_split_into_chunks() -> None:
    # A[1:33] = A[0:32] * 2: every lane reads before any lane writes (vector semantics), so
    # the store cannot run chunk after chunk; it stays a per-lane loop through a copy.
    A = decl_buffer((40,), "float32", "A")
    value = op.mul(A.load([Ramp(i32(0), i32(1), 32)]), Broadcast(op.const(2.0, "float32"), 32))
    body = BufferStore(A, value, (Ramp(i32(1), i32(1), 32),))
    rt = build_lowered(module(func([A], body)), "c")
    assert "tw_vstore" not in rt.get_source()
    a = RNG.random(40, dtype="float32")
    want = a.copy()
    want[1:33] = a[0:32] * 2
    rt["main"](a)
    np.testing.assert_allclose(a, want, rtol=1e-6)


def test_lane_parts() -> None:
    assert lane_parts(dtype("float32").with_lanes(48)) == [(0, 32), (32, 16)]
    assert lane_parts(dtype("float32").with_lanes(40)) == [(0, 32), (32, 8)]
    assert lane_parts(dtype("float32").with_lanes(16)) == [(0, 16)]
    assert lane_parts(dtype("float32").with_lanes(3)) == []  # odd: the per-lane loop
    assert lane_parts(dtype("float32").with_lanes(25)) == []  # would end with one lane
    assert lane_parts(dtype("float16").with_lanes(16)) == []  # computed in float, stored as bits
    assert lane_parts(dtype("float64").with_lanes(2)) == [(0, 2)]
    assert native_vector_bytes() in (16, 32, 64)


@T.prim_func
def _scale_shift(a: T.handle, b: T.handle) -> None:
    A = T.match_buffer(a, (64, 48), "float32")
    B = T.match_buffer(b, (64, 48), "float32")
    for i, j in T.grid(64, 48):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(3) - T.float32(1)


@pytest.mark.parametrize("lanes", [48, 16, 6])
def test_vectorized_schedule_through_the_pipeline(lanes: int) -> None:
    sch = Schedule(_scale_shift)
    _, j = sch.get_loops(sch.get_block("B"))
    _, inner = sch.split(j, [None, lanes])
    sch.vectorize(inner)
    rt = tw.build(sch.mod, target="c")
    src = rt.get_source()
    width = lanes & -lanes
    assert (f"tw_vstore_float32x{width}(" in src) == (width * 32 >= 128)
    a = RNG.random((64, 48), dtype="float32")
    b = np.zeros((64, 48), "float32")
    rt["main"](a, b)
    np.testing.assert_allclose(b, a * 3 - 1, rtol=1e-6, atol=1e-6)  # contracted to an FMA


def test_half_precision_vectorized_loop_stays_a_loop_and_computes() -> None:
    A = decl_buffer((32,), "float16", "A")
    B = decl_buffer((32,), "float16", "B")
    i = Var("i", I32)
    body = loop(i, 32, BufferStore(B, op.add(A[i], A[i]), (i,)), ForKind.VECTORIZED)
    rt = build_lowered(module(func([A, B], body)), "c")
    assert "tw_vstore" not in rt.get_source() and "#pragma GCC ivdep" in rt.get_source()
    a = RNG.random(32).astype("float16")
    b = np.zeros(32, "float16")
    rt["main"](a, b)
    np.testing.assert_array_equal(b, a + a)
