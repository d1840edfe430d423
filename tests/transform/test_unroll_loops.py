"""unroll_loops: constant-extent ``unroll`` loops written out once per iteration."""

from __future__ import annotations

import numpy as np
from evaluator import run

from tilewright.ir import (
    Allocate,
    For,
    ForKind,
    PrimFunc,
    SeqStmt,
    assert_structural_equal,
    collect_vars,
    const,
    decl_buffer,
)
from tilewright.transform import unroll_loops
from tilewright.transform.unroll_loops import MAX_UNROLLED_ITERATIONS

from .programs import arg, loop, store, var


def _func(body, *names_shapes) -> PrimFunc:
    args = [arg(n, s) for n, s in names_shapes]
    return PrimFunc(tuple(p for p, _ in args), body(*[b for _, b in args]), tuple(args))


def test_each_iteration_is_written_out_with_the_variable_replaced():
    k0, k1 = var("k_0"), var("k_1")

    def body(a, c):
        return loop(k0, 2, loop(k1, 2, store(c, c[0] + a[k0 * 2 + k1], const(0)), ForKind.UNROLLED))

    func = _func(body, ("A", (4,)), ("C", (1,)))
    got = unroll_loops(func)
    (_, a), (_, c) = func.buffer_map
    expected = func.with_body(
        loop(
            k0,
            2,
            SeqStmt(
                (
                    store(c, c[0] + a[k0 * 2 + 0], const(0)),
                    store(c, c[0] + a[k0 * 2 + 1], const(0)),
                )
            ),
        )
    )
    assert_structural_equal(got, expected)
    x = [np.arange(4, dtype="float32"), np.zeros(1, "float32")]
    np.testing.assert_array_equal(run(got, *x)[1], run(func, *x)[1])


def test_inner_loops_get_one_variable_per_copy():
    k, i = var("k"), var("i")

    def body(a, c):
        return loop(k, 3, loop(i, 4, store(c, c[i] + a[k * 4 + i], i)), ForKind.UNROLLED)

    func = _func(body, ("A", (12,)), ("C", (4,)))
    got = unroll_loops(func)
    assert isinstance(got.body, SeqStmt) and len(got.body.seq) == 3
    loop_vars = [s.loop_var for s in got.body.seq]  # type: ignore[attr-defined]
    assert len({id(v) for v in loop_vars}) == 3 and loop_vars[0] is i
    x = [np.arange(12, dtype="float32"), np.zeros(4, "float32")]
    np.testing.assert_array_equal(run(got, *x)[1], run(func, *x)[1])
    assert k not in collect_vars(got.body)


def test_symbolic_long_and_allocating_loops_keep_their_pragma():
    k = var("k")
    n = var("n")
    long = _func(
        lambda a, c: loop(k, MAX_UNROLLED_ITERATIONS + 1, store(c, a[k], k), ForKind.UNROLLED),
        ("A", (512,)),
        ("C", (512,)),
    )
    symbolic = _func(
        lambda a, c: loop(k, n, store(c, a[k], k), ForKind.UNROLLED), ("A", (8,)), ("C", (8,))
    )
    scratch = decl_buffer((1,), "float32", "scratch", scope="local")
    allocating = _func(
        lambda a, c: loop(
            k,
            2,
            Allocate(scratch, seq_of(store(scratch, a[k], const(0)), store(c, scratch[0], k))),
            ForKind.UNROLLED,
        ),
        ("A", (8,)),
        ("C", (8,)),
    )
    for func in (long, symbolic, allocating):
        got = unroll_loops(func)
        assert isinstance(got.body, For) and got.body.kind is ForKind.UNROLLED


def seq_of(*stmts):
    return SeqStmt(tuple(stmts))
