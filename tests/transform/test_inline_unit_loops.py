from __future__ import annotations

import pytest

from tilewright.ir import For, ForKind, PrimFunc, assert_structural_equal, attrs
from tilewright.transform import inline_unit_loops, lower_blocks, lower_init_block

from .programs import ALL, arg, assert_passes_preserve, const, grid, loop, store, var


def _func(args, body):
    return PrimFunc(tuple(v for v, _ in args), body, tuple(args))


def test_unit_loop_is_replaced_by_its_body_at_min():
    args = [arg("A", (16,)), arg("C", (16,))]
    (_, a), (_, c) = args
    i0, i1 = var("i_0"), var("i_1")
    func = _func(args, grid([i0, i1], [16, 1], store(c, a[i0 + i1], i0 + i1)))
    expected = _func(args, loop(i0, 16, store(c, a[i0 + 0], i0 + 0)))
    assert_structural_equal(inline_unit_loops(func), expected)


def test_unit_loop_with_nonzero_min_uses_min():
    args = [arg("A", (16,))]
    (_, a) = args[0]
    i = var("i")
    func = _func(args, For(i, const(5), const(1), ForKind.UNROLLED, store(a, 0.0, i)))
    assert_structural_equal(inline_unit_loops(func).body, store(a, 0.0, const(5)))


def test_thread_bound_and_annotated_unit_loops_stay():
    args = [arg("A", (16,))]
    (_, a) = args[0]
    i, j = var("i"), var("j")
    inner = For(j, const(0), const(1), ForKind.SERIAL, store(a, 0.0, i + j), "", attrs({"k": 1}))
    func = _func(args, For(i, const(0), const(1), ForKind.THREAD_BINDING, inner, "threadIdx.x"))
    assert inline_unit_loops(func) is func


def test_loops_longer_than_one_stay():
    func = lower_blocks(ALL["vector_add"]().func)
    assert inline_unit_loops(func) is func


@pytest.mark.parametrize("name", sorted(ALL))
def test_numeric_results_unchanged(name):
    assert_passes_preserve(ALL[name](), [lower_init_block, lower_blocks, inline_unit_loops])
