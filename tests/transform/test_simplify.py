from __future__ import annotations

import pytest

from tilewright.ir import IfThenElse, PrimFunc, assert_structural_equal, op
from tilewright.transform import flatten_buffers, lower_blocks, lower_init_block, simplify

from .programs import ALL, arg, assert_passes_preserve, grid, loop, store, var


def _func(args, body):
    return PrimFunc(tuple(v for v, _ in args), body, tuple(args))


def test_offsets_are_folded():
    args = [arg("A", (16,)), arg("C", (16,))]
    (_, a), (_, c) = args
    i = var("i")
    func = _func(args, loop(i, 16, store(c, a[op.mul(i, 1) + 0] + 1.0, (i + 2) * 1 - 2)))
    expected = _func(args, loop(i, 16, store(c, a[i] + 1.0, i)))
    assert_structural_equal(simplify(func), expected)


def test_nested_linear_index_is_flattened():
    args = [arg("A", (64,))]
    (_, a) = args[0]
    i, j = var("i"), var("j")
    func = _func(args, grid([i, j], [4, 16], store(a, 0.0, (i * 4 + j // 4) * 4 + j % 4)))
    got = simplify(func)
    # i * 16 + j, whatever order the simplifier prints it in; the division pair is gone.
    assert "//" not in got.script() and "%" not in got.script()


def test_condition_implied_by_loop_bounds_is_removed():
    args = [arg("A", (4,))]
    (_, a) = args[0]
    i = var("i")
    func = _func(args, loop(i, 4, IfThenElse(i < 4, store(a, 1.0, i))))
    assert_structural_equal(simplify(func), _func(args, loop(i, 4, store(a, 1.0, i))))


@pytest.mark.parametrize("name", sorted(ALL))
def test_numeric_results_unchanged(name):
    passes = [lower_init_block, lower_blocks, flatten_buffers, simplify]
    assert_passes_preserve(ALL[name](), passes)
