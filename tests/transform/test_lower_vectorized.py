"""lower_vectorized: contiguous vectorized loops become Ramp/Broadcast stores, others serial."""

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run

from tilewright.backend import lowering_stages
from tilewright.driver import lower
from tilewright.ir import (
    Broadcast,
    BufferLoad,
    BufferStore,
    Cast,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    PrimFunc,
    Ramp,
    Var,
    assert_structural_equal,
    const,
    dtype,
    op,
    post_order_visit,
)
from tilewright.transform import is_aligned_ramp, lower_vectorized
from tilewright.transform.lower_vectorized import known_divisor

from .gpu_programs import load
from .programs import arg, loop, store, var

I32 = dtype("int32")


def _func(body_of, n: int = 16) -> tuple[PrimFunc, list]:
    args = [arg("A", (n,)), arg("B", (n,)), arg("C", (n,))]
    bufs = [b for _, b in args]
    i, v = var("i"), var("v")
    body = loop(i, n // 4, loop(v, 4, body_of(i, v, *bufs), ForKind.VECTORIZED))
    return PrimFunc(tuple(p for p, _ in args), body, tuple(args)), bufs


def _run(func: PrimFunc) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    x = [rng.standard_normal(16).astype("float32") for _ in range(3)]
    return run(func, *x)


def _same_results(before: PrimFunc, after: PrimFunc) -> None:
    for got, want in zip(_run(after), _run(before)):
        np.testing.assert_array_equal(got, want)


def test_contiguous_loop_becomes_one_vector_store():
    func, (a, b, c) = _func(lambda i, v, a, b, c: store(c, a[i * 4 + v] + b[0], i * 4 + v))
    got = lower_vectorized(func)
    i = func.body.loop_var
    ramp = Ramp(i * 4, const(1), 4)
    expected = func.with_body(
        For(
            i,
            const(0),
            const(4),
            ForKind.SERIAL,
            store(c, a.load([ramp]) + Broadcast(b[0], 4), ramp),
        )
    )
    assert_structural_equal(got, expected)
    _same_results(func, got)


def test_lane_used_as_a_value_becomes_a_ramp():
    func, _ = _func(lambda i, v, a, b, c: store(c, op.cast(v, "float32"), i * 4 + v))
    stmt = lower_vectorized(func).body.body
    assert isinstance(stmt, BufferStore) and isinstance(stmt.value, Cast)
    assert stmt.value.dtype == dtype("float32x4") and isinstance(stmt.value.value, Ramp)
    _same_results(func, lower_vectorized(func))


@pytest.mark.parametrize(
    "make",
    [
        # a gather: two elements apart
        lambda i, v, a, b, c: store(c, a[op.floormod(v * 2, 16)], i * 4 + v),
        # the store does not move with the lane: a reduction
        lambda i, v, a, b, c: store(c, c[i] + a[i * 4 + v], i),
        # a condition on the lane
        lambda i, v, a, b, c: IfThenElse(op.lt(v, 2), store(c, a[i * 4 + v], i * 4 + v)),
    ],
    ids=["gather", "reduction", "predicated"],
)
def test_other_loops_become_serial(make):
    func, _ = _func(make)
    got = lower_vectorized(func)
    inner = got.body.body
    assert isinstance(inner, For) and inner.kind is ForKind.SERIAL
    assert inner.body is func.body.body.body
    _same_results(func, got)


def test_a_loop_starting_past_zero_is_shifted():
    args = [arg("A", (8,)), arg("C", (8,))]
    (_, a), (_, c) = args
    v = var("v")
    body = For(v, const(4), const(4), ForKind.VECTORIZED, store(c, a[v], v))
    func = PrimFunc(tuple(p for p, _ in args), body, tuple(args))
    got = lower_vectorized(func).body
    assert isinstance(got, BufferStore)
    assert isinstance(got.indices[0], Ramp) and got.indices[0].base.value == 4  # type: ignore[attr-defined]


def test_cooperative_fetch_of_blocking_with_shared_is_float4_aligned():
    func = load("Expected_6")["main"]
    for stage in lowering_stages("cuda"):
        func = stage.run(func)
        if stage.name == "lower_vectorized":
            break
    stores = []

    def visit(node: object) -> None:
        if isinstance(node, BufferStore) and node.buffer.scope == "shared":
            stores.append(node)

    post_order_visit(func.body, visit)  # type: ignore[arg-type]
    assert [s.buffer.name for s in stores] == ["A_shared", "B_shared"]
    for s in stores:
        assert isinstance(s.value, BufferLoad) and s.value.buffer.name in ("A", "B")
        assert is_aligned_ramp(s.indices[0]) and is_aligned_ramp(s.value.indices[0])
        assert s.indices[0].lanes == 4  # type: ignore[attr-defined]


def test_vectorized_fetch_lowers_without_vector_loops_left():
    lowered = lower(load("matmul_shared"), "cuda")["main_kernel"]
    kinds = []

    def visit(node: object) -> None:
        if isinstance(node, For):
            kinds.append(node.kind)

    post_order_visit(lowered.body, visit)  # type: ignore[arg-type]
    assert ForKind.VECTORIZED not in kinds


def test_alignment_is_a_provable_multiple_of_the_lanes():
    t, f = Var("t", I32), Var("f", I32)
    assert is_aligned_ramp(Ramp(t * 4, const(1), 4))
    assert is_aligned_ramp(Ramp(f * 256 + op.floormod(t * 4, 8), const(1), 4))
    assert is_aligned_ramp(Ramp(op.floordiv(t * 16, 2), const(1), 8))
    assert not is_aligned_ramp(Ramp(t * 4 + 1, const(1), 4))
    assert not is_aligned_ramp(Ramp(t * 2, const(1), 4))
    assert not is_aligned_ramp(Ramp(t * 4, const(2), 4))
    assert not is_aligned_ramp(t * 4)
    assert known_divisor(IntImm(0, I32)) == 0 and known_divisor(t) == 1


def test_a_guard_that_keeps_whole_vectors_stays_a_scalar_if():
    func, (a, _, c) = _func(
        lambda i, v, a, b, c: IfThenElse(op.lt(i * 4 + v, 12), store(c, a[i * 4 + v], i * 4 + v))
    )
    got = lower_vectorized(func)
    i = func.body.loop_var
    ramp = Ramp(i * 4, const(1), 4)
    expected = func.with_body(
        For(
            i,
            const(0),
            const(4),
            ForKind.SERIAL,
            IfThenElse(op.lt(i, 3), store(c, a.load([ramp]), ramp)),
        )
    )
    assert_structural_equal(got, expected)
    _same_results(func, got)


def test_a_guard_that_splits_a_vector_keeps_the_loop():
    func, _ = _func(
        lambda i, v, a, b, c: IfThenElse(op.lt(i * 4 + v, 10), store(c, a[i * 4 + v], i * 4 + v))
    )
    inner = lower_vectorized(func).body.body
    assert isinstance(inner, For) and inner.kind is ForKind.SERIAL
    _same_results(func, lower_vectorized(func))
