"""Constant integer bounds: interval arithmetic, dtype limits, scopes and symbolic domains."""

from __future__ import annotations

import pytest

from tilewright.arith import NEG_INF, POS_INF, Analyzer, ConstIntBound, const_int_bound
from tilewright.ir import op
from tilewright.ir.dtype import dtype, float32, int32, int64
from tilewright.ir.expr import Cast, FloatImm, IntImm, Let, Range, Var

x, y, i, j, n = (Var(name, int32) for name in ("x", "y", "i", "j", "n"))


def R(lo, extent):
    return Range.from_min_extent(lo, extent)


def c(value):
    return IntImm(value, int32)


CASES = [
    ("const", c(5), {}, (5, 5)),
    ("affine", i * 2 + 1, {i: R(0, 8)}, (1, 15)),
    ("split", i * 128 + j, {i: R(0, 8), j: R(0, 128)}, (0, 1023)),
    ("sub", i - j, {i: R(0, 8), j: R(0, 4)}, (-3, 7)),
    ("neg_coef", i * -3, {i: R(-2, 5)}, (-6, 6)),
    ("product", i * j, {i: R(-2, 5), j: R(-3, 4)}, (-6, 6)),
    ("floordiv", i // 8, {i: R(0, 64)}, (0, 7)),
    ("floordiv_negative", i // 4, {i: R(-9, 19)}, (-3, 2)),
    ("truncdiv_negative", op.truncdiv(i, 4), {i: R(-9, 19)}, (-2, 2)),
    ("floordiv_negative_divisor", op.floordiv(i, -4), {i: R(0, 9)}, (-2, 0)),
    ("floordiv_by_range", i // j, {i: R(0, 17), j: R(1, 4)}, (0, 16)),
    ("floormod", i % 8, {i: R(0, 64)}, (0, 7)),
    ("floormod_one_block", i % 8, {i: R(8, 4)}, (0, 3)),
    ("floormod_negative_block", i % 8, {i: R(-5, 5)}, (3, 7)),
    ("floormod_small", i % 8, {i: R(0, 5)}, (0, 4)),
    ("floormod_negative_divisor", op.floormod(i, -8), {i: R(0, 64)}, (-7, 0)),
    ("truncmod_mixed", op.truncmod(i, 8), {i: R(-20, 41)}, (-7, 7)),
    ("truncmod_nonneg", op.truncmod(i, 8), {i: R(0, 6)}, (0, 5)),
    ("truncmod_nonpos", op.truncmod(i, 8), {i: R(-5, 6)}, (-5, 0)),
    ("min", op.min_value(i, j), {i: R(0, 8), j: R(2, 3)}, (0, 4)),
    ("max", op.max_value(i, j), {i: R(0, 8), j: R(2, 3)}, (2, 7)),
    ("select", op.select(op.lt(x, y), i, j), {i: R(0, 8), j: R(10, 3)}, (0, 12)),
    ("compare", op.lt(x, y), {}, (0, 1)),
    ("cast_fits", Cast(dtype("int8"), i), {i: R(0, 100)}, (0, 99)),
    ("cast_wraps", Cast(dtype("int8"), i), {i: R(0, 300)}, (-128, 127)),
    ("cast_widens", Cast(int64, i), {i: R(-4, 8)}, (-4, 3)),
    ("let", Let(x, i * 2, x + 1), {i: R(0, 4)}, (1, 7)),
    ("same_var_cancels", i - i, {}, (0, 0)),
    ("div_mod_recombine", i // 8 * 8 + i % 8, {i: R(3, 10)}, (3, 12)),
    ("unbounded_int32", x, {}, (-(2**31), 2**31 - 1)),
    ("overflow_clips", x * x, {}, (-(2**31), 2**31 - 1)),
    ("division_by_zero_range", i // j, {i: R(0, 8), j: R(-1, 3)}, (-(2**31), 2**31 - 1)),
]


@pytest.mark.parametrize(("name", "expr", "bounds", "want"), CASES, ids=[c[0] for c in CASES])
def test_const_int_bound_table(name, expr, bounds, want):
    got = const_int_bound(expr, bounds)
    assert (got.min_value, got.max_value) == want


def test_int64_and_uint_limits():
    v = Var("v", int64)
    got = const_int_bound(v)
    assert (got.min_value, got.max_value) == (NEG_INF, POS_INF)
    assert not got.has_min and not got.has_max
    u = Var("u", dtype("uint8"))
    assert const_int_bound(u) == ConstIntBound(0, 255)
    assert const_int_bound(Var("b", dtype("bool"))) == ConstIntBound(0, 1)


def test_float_expression_is_unbounded():
    got = const_int_bound(FloatImm(1.0, float32))
    assert (got.min_value, got.max_value) == (NEG_INF, POS_INF)


def test_sentinels_compare_like_numbers():
    got = const_int_bound(Var("v", int64) // 8)
    assert got.max_value >= 2**40 and got.min_value <= -(2**40)
    assert ConstIntBound(3, 3).is_const and ConstIntBound(0, 7).has_max


def test_symbolic_extent_uses_bound_of_extent():
    ana = Analyzer()
    ana.bind(n, R(1, 64))
    ana.bind(i, R(0, n))
    assert ana.const_int_bound(i) == ConstIntBound(0, 63)


def test_symbolic_min_is_relaxed_symbolically():
    ana = Analyzer()
    ana.bind(i, Range(n, c(4)))
    assert ana.const_int_bound(i - n) == ConstIntBound(0, 3)
    assert ana.can_prove(op.lt(i, n + 4))


def test_constraint_scope_refines_and_restores():
    ana = Analyzer()
    ana.bind(i, R(0, 128))
    with ana.constraint_scope(op.logical_and(op.lt(i, 10), op.ge(i, 2))):
        assert ana.const_int_bound(i) == ConstIntBound(2, 9)
        with ana.constraint_scope(op.logical_not(op.gt(i, 5))):
            assert ana.const_int_bound(i * 2) == ConstIntBound(4, 10)
    assert ana.const_int_bound(i) == ConstIntBound(0, 127)


def test_constraint_on_right_hand_side():
    ana = Analyzer()
    with ana.constraint_scope(op.lt(4, x)):
        assert ana.const_int_bound(x).min_value == 5
    with ana.constraint_scope(op.eq(x, 7)):
        assert ana.const_int_bound(x) == ConstIntBound(7, 7)


def test_bound_of_bound_value():
    ana = Analyzer()
    ana.bind(i, R(0, 8))
    ana.bind(x, i * 4)
    assert ana.const_int_bound(x + 1) == ConstIntBound(1, 29)


def test_tvm_spellings():
    assert ConstIntBound.POS_INF == POS_INF and ConstIntBound.NEG_INF == NEG_INF
    ana = Analyzer()
    ana.bind(i, R(0, 8))
    assert ana.canonical_simplify(i // 8).value == 0
    assert ana.rewrite_simplify(i % 8) is i


def test_linear_constraints_refine_after_simplification():
    ana = Analyzer()
    with ana.constraint_scope(op.lt(i + 1, c(10))):
        assert ana.const_int_bound(i).max_value == 8
    with ana.constraint_scope(op.ge(i * 4, c(18))):
        assert ana.const_int_bound(i).min_value == 5
