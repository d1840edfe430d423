"""Properties: simplification, bounds and interval sets agree with direct evaluation."""

from __future__ import annotations

import math
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilewright.arith import Analyzer, eval_set
from tilewright.ir import op
from tilewright.ir.dtype import bool_, int32, int64
from tilewright.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Range,
    Select,
    Sub,
    Var,
)

VARS = (Var("x", int32), Var("y", int32), Var("z", int32))
LET_VAR = Var("w", int32)  # bound by Let nodes only; nested lets shadow it
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def evaluate(e: PrimExpr, env: dict[Var, int]) -> int:
    """Python reference semantics: floor ops as Python, Div/Mod truncating as in C."""
    if isinstance(e, Var):
        return env[e]
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Cast):
        v = evaluate(e.value, env)
        return int(bool(v)) if e.dtype.is_bool else v  # values stay far from overflow
    if isinstance(e, Not):
        return int(not evaluate(e.a, env))
    if isinstance(e, Let):
        return evaluate(e.body, {**env, e.var: evaluate(e.value, env)})
    if isinstance(e, Select):
        c = evaluate(e.condition, env)
        return evaluate(e.true_value if c else e.false_value, env)
    a, b = evaluate(e.a, env), evaluate(e.b, env)  # type: ignore[attr-defined]
    table = {
        Add: lambda: a + b,
        Sub: lambda: a - b,
        Mul: lambda: a * b,
        FloorDiv: lambda: a // b,
        FloorMod: lambda: a % b,
        Div: lambda: int(a / b) if abs(a) < 2**52 else _trunc_div(a, b),
        Mod: lambda: a - b * _trunc_div(a, b),
        Min: lambda: min(a, b),
        Max: lambda: max(a, b),
        EQ: lambda: int(a == b),
        NE: lambda: int(a != b),
        LT: lambda: int(a < b),
        LE: lambda: int(a <= b),
        GT: lambda: int(a > b),
        GE: lambda: int(a >= b),
        And: lambda: int(bool(a) and bool(b)),
        Or: lambda: int(bool(a) or bool(b)),
    }
    return table[type(e)]()


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _const(draw) -> PrimExpr:
    return IntImm(draw(st.integers(-9, 9)), int32)


def _divisor(draw) -> PrimExpr:
    value = draw(st.sampled_from([1, 2, 3, 4, 8, 16, -1, -2, -4, -3]))
    return IntImm(value, int32)


@st.composite
def int_exprs(draw, depth: int = 4) -> PrimExpr:
    if depth == 0 or draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from(VARS)) if draw(st.booleans()) else _const(draw)
    kinds = ["add", "sub", "mul", "div", "mod", "minmax", "select", "lin", "cast", "let"]
    kind = draw(st.sampled_from(kinds))
    sub = int_exprs(depth - 1)
    if kind == "add":
        return Add(draw(sub), draw(sub))
    if kind == "sub":
        return Sub(draw(sub), draw(sub))
    if kind == "mul":
        if draw(st.integers(0, 3)) == 0:
            return Mul(draw(sub), draw(sub))
        return Mul(draw(sub), _const(draw))
    if kind == "lin":
        # Index-like shapes: v * c + e, the forms the simplifier exists for.
        v = draw(st.sampled_from(VARS))
        return Add(Mul(v, IntImm(draw(st.sampled_from([2, 4, 8, 16])), int32)), draw(sub))
    if kind == "div":
        cls = draw(st.sampled_from([FloorDiv, Div]))
        return cls(draw(sub), _divisor(draw))
    if kind == "mod":
        cls = draw(st.sampled_from([FloorMod, Mod]))
        return cls(draw(sub), _divisor(draw))
    if kind == "minmax":
        return draw(st.sampled_from([Min, Max]))(draw(sub), draw(sub))
    if kind == "cast":
        return Cast(int32, Cast(int64, draw(sub)) * IntImm(draw(st.integers(-3, 3)), int64))
    if kind == "let":
        return Let(LET_VAR, draw(sub), Add(Mul(LET_VAR, _const(draw)), draw(sub)))
    return Select(draw(bool_exprs(depth - 1)), draw(sub), draw(sub))


@st.composite
def bool_exprs(draw, depth: int = 3) -> PrimExpr:
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "and", "or", "not"]))
    if kind == "cmp" or depth <= 0:
        cls = draw(st.sampled_from([EQ, NE, LT, LE, GT, GE]))
        return cls(draw(int_exprs(max(depth - 1, 0))), draw(int_exprs(max(depth - 1, 0))))
    if kind == "not":
        return Not(draw(bool_exprs(depth - 1)))
    cls = And if kind == "and" else Or
    return cls(draw(bool_exprs(depth - 1)), draw(bool_exprs(depth - 1)))


@st.composite
def domains(draw) -> dict[Var, Range]:
    dom = {}
    for v in VARS:
        if draw(st.integers(0, 4)) == 0:
            continue  # unbounded: sampled from a wide range below
        lo = draw(st.integers(-20, 20))
        extent = draw(st.integers(1, 40))
        dom[v] = Range(IntImm(lo, int32), IntImm(extent, int32))
    return dom


def _points(dom: dict[Var, Range], rng: random.Random, count: int = 12) -> list[dict[Var, int]]:
    points = []
    for _ in range(count):
        env = {}
        for v in VARS:
            if v in dom:
                lo, ext = dom[v].min.value, dom[v].extent.value  # type: ignore[attr-defined]
                env[v] = rng.choice([lo, lo + ext - 1, rng.randrange(lo, lo + ext)])
            else:
                env[v] = rng.randint(-60, 60)
        points.append(env)
    return points


def _analyzer(dom: dict[Var, Range]) -> Analyzer:
    ana = Analyzer()
    for v, r in dom.items():
        ana.bind(v, r)
    return ana


@SETTINGS
@given(expr=int_exprs(), dom=domains(), rng=st.randoms(use_true_random=False))
def test_simplify_preserves_integer_values(expr, dom, rng):
    simplified = _analyzer(dom).simplify(expr)
    for env in _points(dom, rng):
        assert evaluate(simplified, env) == evaluate(expr, env), (expr, simplified, env)


@st.composite
def index_exprs(draw, depth: int = 3) -> PrimExpr:
    """Split and fuse shapes: ``a * E + b``, then ``// E``, ``% E`` and nested divisions."""
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(VARS))
    kind = draw(st.sampled_from(["fuse", "div", "mod", "split", "shift"]))
    factor = IntImm(draw(st.sampled_from([2, 3, 4, 8, 16, 32])), int32)
    a = draw(index_exprs(depth - 1))
    if kind == "fuse":
        return Add(Mul(a, factor), draw(index_exprs(depth - 1)))
    if kind == "div":
        return FloorDiv(a, factor)
    if kind == "mod":
        return FloorMod(a, factor)
    if kind == "split":
        return Add(Mul(FloorDiv(a, factor), factor), FloorMod(a, factor))
    return Add(a, IntImm(draw(st.integers(-20, 20)), int32))


@st.composite
def index_domains(draw) -> dict[Var, Range]:
    return {
        v: Range(IntImm(0, int32), IntImm(draw(st.sampled_from([1, 2, 4, 7, 8, 16, 64])), int32))
        for v in VARS
    }


@SETTINGS
@given(expr=index_exprs(), dom=index_domains(), rng=st.randoms(use_true_random=False))
def test_simplify_preserves_index_expressions(expr, dom, rng):
    simplified = _analyzer(dom).simplify(expr)
    for env in _points(dom, rng):
        assert evaluate(simplified, env) == evaluate(expr, env), (expr, simplified, env)


@SETTINGS
@given(cond=bool_exprs(), dom=domains(), rng=st.randoms(use_true_random=False))
def test_simplify_preserves_conditions(cond, dom, rng):
    ana = _analyzer(dom)
    simplified = ana.simplify(cond)
    assert simplified.dtype == bool_
    proved = ana.can_prove(cond)
    for env in _points(dom, rng):
        value = evaluate(cond, env)
        assert bool(evaluate(simplified, env)) == bool(value), (cond, simplified, env)
        if proved:
            assert value, (cond, env)


@SETTINGS
@given(expr=int_exprs(), dom=domains(), rng=st.randoms(use_true_random=False))
def test_const_int_bound_contains_every_value(expr, dom, rng):
    bound = _analyzer(dom).const_int_bound(expr)
    for env in _points(dom, rng):
        assert bound.min_value <= evaluate(expr, env) <= bound.max_value, (expr, bound, env)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=int_exprs(3), dom=domains(), rng=st.randoms(use_true_random=False))
def test_eval_set_contains_every_value(expr, dom, rng):
    relaxed = {v: r for v, r in dom.items() if v is not VARS[2]}
    found = eval_set(expr, relaxed)
    for env in _points(dom, rng):
        value = evaluate(expr, env)
        if found.min_value is not None:
            assert evaluate(found.min_value, env) <= value, (expr, found, env)
        if found.max_value is not None:
            assert value <= evaluate(found.max_value, env), (expr, found, env)


@SETTINGS
@given(expr=int_exprs(), dom=domains(), limit=st.integers(-10, 10))
def test_constraint_scope_assumption_is_respected(expr, dom, limit):
    x = VARS[0]
    ana = _analyzer(dom)
    with ana.constraint_scope(op.lt(x, limit)):
        simplified = ana.simplify(expr)
    rng = random.Random(limit)
    for env in _points(dom, rng):
        if env[x] < limit:
            assert evaluate(simplified, env) == evaluate(expr, env), (expr, simplified, env)


def test_reference_evaluator_truncates_like_c():
    a, b = Var("a", int32), Var("b", int32)
    assert evaluate(Div(a, b), {a: -7, b: 2}) == -3
    assert evaluate(Mod(a, b), {a: -7, b: 2}) == -1
    assert evaluate(FloorDiv(a, b), {a: -7, b: 2}) == -4
    assert evaluate(FloorMod(a, b), {a: -7, b: 2}) == 1
    assert math.isclose(evaluate(Div(a, b), {a: 7, b: -2}), -3)
