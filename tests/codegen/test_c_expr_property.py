"""Random integer expressions printed to C, compiled once, and evaluated against Python:
checks precedence, parenthesization, floor division and min/max on many shapes at once."""

from __future__ import annotations

import random

import numpy as np
from c_kernels import func, i32, module

from tilewright.driver import build_lowered
from tilewright.ir import BufferStore, IntImm, Var, decl_buffer, dtype, op, seq

I64 = dtype("int64")
VARS = [Var(name, I64) for name in "xyz"]
BINARY = [
    (op.add, lambda a, b: a + b),
    (op.sub, lambda a, b: a - b),
    (op.mul, lambda a, b: a * b),
    (op.min_value, min),
    (op.max_value, max),
]


def random_expr(rng: random.Random, depth: int):
    """An expression and a Python function computing it from (x, y, z)."""
    if depth == 0 or rng.random() < 0.2:
        if rng.random() < 0.6:
            k = rng.randrange(3)
            return VARS[k], lambda env, k=k: env[k]
        c = rng.randint(-9, 9)
        return IntImm(c, I64), lambda env, c=c: c
    a, fa = random_expr(rng, depth - 1)
    choice = rng.random()
    if choice < 0.2:  # floor division by a non-zero constant, which may be negative
        d = rng.choice([-7, -3, -2, 2, 3, 5])
        if rng.random() < 0.5:
            return op.floordiv(a, IntImm(d, I64)), lambda env: fa(env) // d
        return op.floormod(a, IntImm(d, I64)), lambda env: fa(env) % d
    b, fb = random_expr(rng, depth - 1)
    if choice < 0.3:
        return op.select(
            op.lt(a, b), a, op.neg(b)
        ), lambda env: fa(env) if fa(env) < fb(env) else -fb(env)
    make, ref = rng.choice(BINARY)
    return make(a, b), lambda env: ref(fa(env), fb(env))


def test_random_expressions_match_python():
    rng = random.Random(2026)
    exprs = [random_expr(rng, 4) for _ in range(60)]
    out = decl_buffer((len(exprs),), "int64", "out")
    body = seq(*(BufferStore(out, e, (i32(k),)) for k, (e, _) in enumerate(exprs)))
    rt = build_lowered(module(func([out], body, tuple(VARS))), "c")
    for _ in range(25):
        env = [rng.randint(-50, 50) for _ in VARS]
        result = np.zeros(len(exprs), "int64")
        rt["main"](result, *env)
        assert result.tolist() == [ref(env) for _, ref in exprs], env
