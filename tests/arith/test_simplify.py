"""Simplifier rewrites: a table of inputs and expected outputs, ordering and identity rules."""

from __future__ import annotations

import pytest

from tilewright.arith import Analyzer, simplify, simplify_stmt
from tilewright.arith.linear_form import same
from tilewright.ir import op, structural_equal
from tilewright.ir.buffer import decl_buffer
from tilewright.ir.dtype import bool_, dtype, float32, int32, int64
from tilewright.ir.expr import (
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Not,
    Range,
    Select,
    Sub,
    Var,
)
from tilewright.ir.stmt import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    IterVar,
    LetStmt,
)

x, y, z, n = (Var(name, int32) for name in ("x", "y", "z", "n"))
i0, i1, i2, fused = (Var(name, int32) for name in ("i_0", "i_1", "i_2", "i_1_j_1_fused"))
f = Var("f", float32)


def R(lo, extent):
    return Range.from_min_extent(lo, extent)


def c(value, dt=int32):
    return IntImm(value, dt)


def check(got, want):
    # structural_equal renames free variables; ``same`` also demands the very same variables,
    # so that a swapped order of x and y is caught.
    assert structural_equal(got, want) and same(got, want), f"got {got!r}, want {want!r}"


B128 = {i1: R(0, 128)}
CASES = [
    # constant folding and products of constants
    ("fold", c(3) + c(4), {}, c(7)),
    ("const_product", x * 2 * 3, {}, x * 6),
    ("const_product_left", op.mul(2, op.mul(3, x)), {}, x * 6),
    # linear forms
    ("like_terms", x * 4 + x * 4, {}, x * 8),
    ("cancel", (x + 1) - x, {}, c(1)),
    ("two_minus_one", x * 2 - x, {}, x),
    ("add_zero", x + 0, {}, x),
    ("mul_one", x * 1, {}, x),
    ("mul_zero", x * 0, {}, c(0)),
    ("order_of_appearance", y + x * 4 + 1 + x, {}, y + x * 5 + 1),
    ("constant_last", c(1) + x * 4 + y, {}, x * 4 + y + 1),
    ("coefficient_after", op.mul(4, x) + y + 1, {}, x * 4 + y + 1),
    ("negative_leading", op.sub(0, x) + y, {}, y - x),
    ("negative_constant", x + (-5), {}, x - 5),
    ("all_negative", op.sub(0, x) - y + 3, {}, Sub(c(3), x) - y),
    ("distribute", (x + y) * 4, {}, x * 4 + y * 4),
    ("flatten", i0 * 128 + (i1 * 128 + i2), {}, i0 * 128 + i1 * 128 + i2),
    ("nested_sub", x - (y - x), {}, x * 2 - y),
    ("product_of_terms", (x * 2) * (y * 3), {}, x * y * 6),
    # floordiv / floormod by constants
    ("split_div", (i0 * 128 + i1) // 128, B128, i0),
    ("split_mod", (i0 * 128 + i1) % 128, B128, i1),
    ("pull_out_div", (x * 8 + y) // 8, {}, x + y // 8),
    ("pull_out_keeps_order", (y + x * 8) // 8, {}, y // 8 + x),
    ("pull_out_constant", (x * 8 + 9) // 8, {}, x + 1),
    ("mod_drops_multiple", (x * 8 + y) % 8, {}, y % 8),
    ("mod_reduces_constant", (x + 9) % 8, {}, (x + 1) % 8),
    ("mod_one", x % 1, {}, c(0)),
    ("div_one", x // 1, {}, x),
    ("div_minus_one", op.floordiv(x, -1), {}, Sub(c(0), x)),
    ("nested_div", (x // 4) // 8, {}, x // 32),
    ("nested_mod", (x % 16) % 4, {}, x % 4),
    ("mod_of_smaller_mod", (x % 4) % 16, {}, x % 4),
    ("div_mod_merge", (x // 8) * 8 + x % 8, {}, x),
    ("div_mod_merge_scaled", (x // 8) * 16 + x % 8 * 2, {}, x * 2),
    ("div_mod_merge_expr", (x + y) // 4 * 4 + (x + y) % 4, {}, x + y),
    ("sub_to_mod", x - x // 8 * 8, {}, x % 8),
    ("common_factor_div", (x * 4) // 8, {}, x // 2),
    ("common_factor_mod", (x * 4) % 8, {}, x % 2 * 4),
    ("div_in_bucket", i1 // 128, B128, c(0)),
    ("div_of_bounded", (i1 + 128) // 128, B128, c(1)),
    ("mod_of_bounded", (i1 + 256) % 128, B128, i1),
    ("div_negative_divisor_kept", op.floordiv(x, -3), {}, op.floordiv(x, -3)),
    ("floordiv_negative_operand", (i1 - 128) // 128, B128, c(-1)),
    # truncating division on non-negative values behaves like floor division
    ("truncdiv_nonneg", op.truncdiv(i0 * 128 + i1, 128), {**B128, i0: R(0, 8)}, i0),
    ("truncmod_nonneg", op.truncmod(i0 * 128 + i1, 128), {**B128, i0: R(0, 8)}, i1),
    ("truncdiv_kept", op.truncdiv(x, 4), {}, Div(x, c(4))),
    ("truncmod_kept", op.truncmod(x + 8, 4), {}, Mod(x + 8, c(4))),
    ("truncdiv_small", op.truncdiv(y, 8), {y: R(-7, 15)}, c(0)),
    ("truncmod_small", op.truncmod(y, 8), {y: R(-7, 15)}, y),
    ("truncmod_one", op.truncmod(x, 1), {}, c(0)),
    # min / max with provable order
    ("min_bounds", op.min_value(i1, 200), B128, i1),
    ("max_bounds", op.max_value(i1, 200), B128, c(200)),
    ("min_offset", op.min_value(x + 1, x), {}, x),
    ("max_offset", op.max_value(x + 1, x), {}, x + 1),
    ("min_same", op.min_value(x, x), {}, x),
    ("min_kept", op.min_value(x, y), {}, Min(x, y)),
    # comparisons decided by bounds
    ("lt_true", op.lt(i1, 1024), {i1: R(0, 1024)}, c(1, bool_)),
    ("lt_false", op.lt(i1, 0), {i1: R(0, 1024)}, c(0, bool_)),
    ("ge_true", op.ge(i1, 0), B128, c(1, bool_)),
    ("eq_true", op.eq(x + 1, 1 + x), {}, c(1, bool_)),
    ("ne_true", op.ne(x, x + 1), {}, c(1, bool_)),
    ("cmp_linear", op.lt(i0 * 128 + i1, 1024), {**B128, i0: R(0, 8)}, c(1, bool_)),
    ("cmp_where", op.lt(i0 * 128 + i1, 130), {**B128, i0: R(0, 2)}, op.lt(i0 * 128 + i1, 130)),
    ("cmp_symbolic", op.lt(x, n), {x: R(0, n)}, c(1, bool_)),
    ("cmp_kept", op.lt(x, y), {}, op.lt(x, y)),
    ("cmp_cancel_constants", op.lt(x + 1, y + 1), {}, op.lt(x, y)),
    ("cmp_cancel_terms", op.le(x + y, x * 2 + 3), {}, op.le(y, x + 3)),
    ("cmp_constant_right", op.lt(x + 1, c(5)), {}, op.lt(x, c(4))),
    ("cmp_constant_left", op.lt(x + 5, y + 1), {}, op.lt(x + 4, y)),
    ("cmp_common_factor_lt", op.lt(x * 4 + y * 4, c(99)), {}, op.lt(x + y, c(25))),
    ("cmp_common_factor_le", op.le(x * 4, c(99)), {}, op.le(x, c(24))),
    ("cmp_common_factor_gt", op.gt(x * 4, c(-9)), {}, op.gt(x, c(-3))),
    ("cmp_common_factor_ge", op.ge(x * 4, c(-9)), {}, op.ge(x, c(-2))),
    ("cmp_common_factor_eq", op.eq(x * 4, c(8)), {}, op.eq(x, c(2))),
    ("cmp_eq_not_divisible", op.eq(x * 4, c(9)), {}, c(0, bool_)),
    ("cmp_ne_not_divisible", op.ne(x * 4, c(9)), {}, c(1, bool_)),
    # select and logic
    ("select_true", op.select(op.lt(i1, 128), x, y), B128, x),
    ("select_false", op.select(op.ge(i1, 128), x, y), B128, y),
    ("select_same", op.select(op.lt(x, y), z, z), {}, z),
    ("select_branch", Select(op.lt(x, 4), op.min_value(x, 4), y), {}, Select(op.lt(x, 4), x, y)),
    ("and_true", op.logical_and(op.lt(i1, 128), op.lt(x, y)), B128, op.lt(x, y)),
    ("and_false", op.logical_and(op.lt(x, y), op.lt(i1, 0)), B128, c(0, bool_)),
    ("or_true", op.logical_or(op.lt(x, y), op.lt(i1, 128)), B128, c(1, bool_)),
    ("and_implied", op.logical_and(op.lt(x, 4), op.lt(x, 8)), {}, op.lt(x, 4)),
    ("and_contradiction", op.logical_and(op.lt(x, 4), op.gt(x, 8)), {}, c(0, bool_)),
    ("or_duplicate", op.logical_or(op.lt(x, y), op.lt(x, y)), {}, op.lt(x, y)),
    ("not_not", Not(Not(op.lt(x, y))), {}, op.lt(x, y)),
    ("not_lt", Not(op.lt(x, y)), {}, op.ge(x, y)),
    ("not_eq", Not(op.eq(x, y)), {}, op.ne(x, y)),
    # casts
    ("cast_const", Cast(int64, c(5)), {}, c(5, int64)),
    ("cast_wraps", Cast(dtype("int8"), c(300)), {}, c(44, dtype("int8"))),
    ("cast_float_const", Cast(int32, FloatImm(-2.7, float32)), {}, c(-2)),
    ("cast_same_type", Cast(int32, x), {}, x),
    ("cast_kept", Cast(int64, x + 0), {}, Cast(int64, x)),
    # floats: folding and trivial identities only
    ("float_fold", FloatImm(1.5, float32) * FloatImm(2.0, float32), {}, FloatImm(3.0, float32)),
    ("float_mul_one", f * 1.0, {}, f),
    ("float_add_zero", f + 0.0, {}, f),
    ("float_no_reassoc", (f + 1.0) - f, {}, (f + 1.0) - f),
    ("float_mul_zero_kept", f * 0.0, {}, f * 0.0),
    # let and loads
    ("let_unused", Let(z, x + 1, y * 2), {}, y * 2),
    ("let_bounds", Let(z, op.floormod(x, 8), op.lt(z, 8)), {}, c(1, bool_)),
]


@pytest.mark.parametrize(("name", "expr", "bounds", "want"), CASES, ids=[c[0] for c in CASES])
def test_simplify_table(name, expr, bounds, want):
    check(simplify(expr, bounds), want)


@pytest.mark.parametrize(
    ("expr", "bounds"),
    [
        (i0 * 128 + i1, B128),
        (i0 * 64 + fused // 8 * 8 + i2, {fused: R(0, 64)}),
        (i0 * 64 + fused % 8 * 8 + i2, {fused: R(0, 64)}),
        (x * 4 + y + 1, {}),
        (x - y - 5, {}),
        (op.floordiv(x + 9, 8), {}),
        (op.truncdiv(i1, 4), B128),
        (op.lt(i0 * 128 + i1, 130), {**B128, i0: R(0, 2)}),
        (op.select(op.lt(x, y), x, y * 2), {}),
        (f * 2.0 + 1.0, {}),
    ],
)
def test_simple_expression_comes_back_unchanged(expr, bounds):
    assert simplify(expr, bounds) is expr


def test_bound_value_replaces_variable():
    ana = Analyzer()
    ana.bind(x, y * 2)
    check(ana.simplify(x + y), y * 3)


def test_constraint_scope_decides_comparisons():
    ana = Analyzer()
    with ana.constraint_scope(op.lt(x, 10)):
        assert ana.can_prove(op.lt(x, 20))
        check(ana.simplify(op.min_value(x, 10)), x)
    assert not ana.can_prove(op.lt(x, 20))


def test_can_prove_equal():
    ana = Analyzer()
    assert ana.can_prove_equal(x // 8 * 8 + x % 8, x)
    assert ana.can_prove_equal((x + y) * 2, x * 2 + y * 2)
    assert not ana.can_prove_equal(x, y)
    assert ana.can_prove_equal(f * 1.0, f)


def test_division_by_zero_is_left_alone():
    check(simplify(op.floordiv(x, c(0))), FloorDiv(x, c(0)))
    check(simplify(FloorMod(c(4), c(0))), FloorMod(c(4), c(0)))


def test_max_with_symbolic_bound():
    check(simplify(Max(x, c(0)), {x: R(0, n)}), x)


A = decl_buffer((1024,), "float32", "A")


def test_simplify_stmt_uses_loop_ranges():
    i = Var("i", int32)
    body = BufferStore(A, FloatImm(0.0, float32), (op.floordiv(i0 * 128 + i, 128),))
    loop = For(i0, c(0), c(8), ForKind.SERIAL, For(i, c(0), c(128), ForKind.SERIAL, body))
    got = simplify_stmt(loop)
    want = For(
        i0,
        c(0),
        c(8),
        ForKind.SERIAL,
        For(i, c(0), c(128), ForKind.SERIAL, BufferStore(A, FloatImm(0.0, float32), (i0,))),
    )
    check(got, want)


def test_simplify_stmt_returns_same_object_when_simple():
    i = Var("i", int32)
    store = BufferStore(A, FloatImm(0.0, float32), (i0 * 128 + i,))
    loop = For(i0, c(0), c(8), ForKind.SERIAL, For(i, c(0), c(128), ForKind.SERIAL, store))
    assert simplify_stmt(loop) is loop


def test_simplify_stmt_block_domains_and_bindings():
    vi = Var("vi", int32)
    store = BufferStore(A, FloatImm(1.0, float32), (op.floormod(vi, 1024),))
    block = Block(
        "B",
        (IterVar(vi, R(0, 1024), IterKind.SPATIAL),),
        (),
        (A[vi : vi + 1],),
        store,
    )
    realize = BlockRealize((i0 * 128 + i1 + 0,), c(1, bool_), block)
    loop = For(i0, c(0), c(8), ForKind.SERIAL, For(i1, c(0), c(128), ForKind.SERIAL, realize))
    got = simplify_stmt(loop)
    inner = got.body.body
    check(inner.iter_values[0], i0 * 128 + i1)
    check(inner.block.body.indices[0], vi)
    assert inner.block.writes is block.writes


def test_simplify_stmt_if_and_let():
    i = Var("i", int32)
    t = Var("t", int32)
    then = BufferStore(A, FloatImm(1.0, float32), (op.min_value(i, 100),))
    guarded = IfThenElse(op.lt(i, 100), then)
    store = BufferStore(A, FloatImm(2.0, float32), (op.min_value(t, 3),))
    let = LetStmt(t, op.floormod(i, 4), store)
    loop = For(i, c(0), c(1024), ForKind.SERIAL, IfThenElse(op.lt(i, 2048), guarded, let))
    got = simplify_stmt(loop)
    # the outer if is always true; inside the inner if, i < 100 makes min(i, 100) == i
    assert isinstance(got.body, IfThenElse)
    check(got.body.then_case.indices[0], i)
    check(simplify_stmt(For(i, c(0), c(64), ForKind.SERIAL, let)).body.body.indices[0], t)


def test_lazy_submodules_and_unknown_names():
    import tilewright.arith as arith

    assert arith.region.__name__ == "tilewright.arith.region"
    assert arith.iter_map_simplify is arith.iter_map.iter_map_simplify
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = arith.no_such_name


def test_rebinding_a_range_replaces_the_old_one():
    ana = Analyzer()
    ana.bind(x, R(0, 4))
    assert ana.can_prove(op.lt(x, 4))
    ana.bind(x, R(0, 64))
    assert not ana.can_prove(op.lt(x, 4))
    ana.bind(x, y + 1)
    check(ana.simplify(x - y), c(1))


def test_simplify_stmt_false_condition_takes_else():
    i = Var("i", int32)
    then = BufferStore(A, FloatImm(1.0, float32), (i,))
    other = BufferStore(A, FloatImm(2.0, float32), (i + 0,))
    loop = For(i, c(0), c(8), ForKind.SERIAL, IfThenElse(op.ge(i, 8), then, other))
    got = simplify_stmt(loop)
    check(got.body, BufferStore(A, FloatImm(2.0, float32), (i,)))


def test_bad_inputs_name_the_problem():
    ana = Analyzer()
    with pytest.raises(TypeError, match=r"Analyzer\.bind expects a Var to bind, got IntImm"):
        ana.bind(c(1), R(0, 4))
    with pytest.raises(TypeError, match=r"Analyzer.bind\(x, ...\) expects a Range or an expr"):
        ana.bind(x, "0:4")
    store = BufferStore(A, FloatImm(0.0, float32), (x,))
    with pytest.raises(TypeError, match="simplify expects an expression, got BufferStore; use"):
        simplify(store)
    with pytest.raises(TypeError, match="can_prove expects an expression, got str"):
        ana.can_prove("x < 4")


def test_let_rebinding_hides_an_outer_value():
    ana = Analyzer()
    ana.bind(x, c(5))
    check(ana.simplify(Let(x, y, x + 1)), Let(x, y, x + 1))
    check(ana.simplify(x + 1), c(6))


def test_if_then_else_call():
    cond_true = op.if_then_else(op.lt(i1, 128), x, y)
    check(simplify(cond_true, B128), x)
    guarded = op.if_then_else(op.lt(x, 4), op.min_value(x, 8), y)
    check(simplify(guarded), op.if_then_else(op.lt(x, 4), x, y))
