"""Integer offset expressions of the tile layer evaluated in the tests."""

from __future__ import annotations

from tilewright.ir import (
    Add,
    Call,
    FloorDiv,
    FloorMod,
    IntImm,
    Mul,
    PrimExpr,
    Sub,
    Var,
)


def evaluate(expr: object, env: dict[Var, int]) -> int:
    """The value of an int or integer expression with ``env`` giving the variables."""
    if isinstance(expr, int):
        return expr
    assert isinstance(expr, PrimExpr), expr
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return env[expr]
    if isinstance(expr, Call):
        assert expr.op == "bitwise_xor", expr.op
        a, b = (evaluate(arg, env) for arg in expr.args)
        return a ^ b
    a, b = evaluate(expr.a, env), evaluate(expr.b, env)  # type: ignore[attr-defined]
    ops = {Add: a + b, Sub: a - b, Mul: a * b}
    if isinstance(expr, FloorDiv):
        return a // b
    if isinstance(expr, FloorMod):
        return a % b
    return ops[type(expr)]
