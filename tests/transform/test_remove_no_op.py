from __future__ import annotations

import pytest

from tilewright.ir import (
    Allocate,
    Call,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    LetStmt,
    PrimFunc,
    assert_structural_equal,
    decl_buffer,
    dtype,
    seq,
)
from tilewright.transform import (
    flatten_buffers,
    lower_blocks,
    lower_init_block,
    remove_no_op,
    simplify,
)

from .programs import ALL, arg, assert_passes_preserve, const, loop, store, var

TRUE, FALSE = IntImm(1, dtype("bool")), IntImm(0, dtype("bool"))


def _func(args, body):
    return PrimFunc(tuple(v for v, _ in args), body, tuple(args))


def _one_buffer():
    args = [arg("A", (8,))]
    return args, args[0][1]


def test_constant_ifs_keep_the_live_branch():
    args, a = _one_buffer()
    i = var("i")
    live, dead = store(a, 1.0, i), store(a, 2.0, i)
    body = loop(i, 8, seq(IfThenElse(TRUE, live, dead), IfThenElse(FALSE, dead)))
    expected = loop(i, 8, live)
    assert_structural_equal(remove_no_op(_func(args, body)).body, expected)


def test_false_if_with_else_keeps_the_else():
    args, a = _one_buffer()
    i = var("i")
    body = loop(i, 8, IfThenElse(FALSE, store(a, 1.0, i), store(a, 2.0, i)))
    assert_structural_equal(remove_no_op(_func(args, body)).body, loop(i, 8, store(a, 2.0, i)))


def test_empty_and_zero_trip_loops_are_removed():
    args, a = _one_buffer()
    i, j, k = var("i"), var("j"), var("k")
    keep = loop(k, 8, store(a, 0.0, k))
    body = seq(loop(i, 0, store(a, 1.0, i)), loop(j, 8, Evaluate(const(0))), keep)
    assert_structural_equal(remove_no_op(_func(args, body)).body, keep)


def test_self_store_is_removed_but_a_permutation_is_kept():
    args = [arg("A", (4, 4))]
    (_, a) = args[0]
    i, j = var("i"), var("j")
    same = store(a, a[i, j], i, j)
    swapped = store(a, a[j, i], i, j)
    body = loop(i, 4, loop(j, 4, seq(same, swapped)))
    expected = loop(i, 4, loop(j, 4, swapped))
    assert_structural_equal(remove_no_op(_func(args, body)).body, expected)


def test_scopes_left_empty_disappear_and_whole_body_becomes_evaluate_zero():
    args, _ = _one_buffer()
    x = var("x")
    tmp = decl_buffer((4,), "float32", "T", "local")
    body = Allocate(tmp, LetStmt(x, const(1), IfThenElse(FALSE, Evaluate(const(1)))))
    got = remove_no_op(_func(args, body))
    assert_structural_equal(got.body, Evaluate(const(0)))


def test_evaluate_of_a_call_is_kept():
    args, _ = _one_buffer()
    call = Evaluate(Call(dtype("int32"), "tw_sync", ()))
    func = _func(args, For(var("i"), const(0), const(4), ForKind.SERIAL, call))
    assert remove_no_op(func) is func


def test_unchanged_function_is_returned_as_is():
    func = lower_blocks(ALL["vector_add"]().func)
    assert remove_no_op(func) is func


@pytest.mark.parametrize("name", sorted(ALL))
def test_numeric_results_unchanged(name):
    passes = [lower_init_block, lower_blocks, flatten_buffers, simplify, remove_no_op]
    assert_passes_preserve(ALL[name](), passes)
