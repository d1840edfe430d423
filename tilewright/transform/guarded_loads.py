"""An expression → the buffer loads it evaluates, in order, each with the condition it runs under.

``if_then_else(c, t, f)`` evaluates ``t`` only when ``c`` holds and ``f`` only when it does
not; ``a && b`` evaluates ``b`` only when ``a`` holds, ``a || b`` only when it does not. A
load on such a branch is *guarded*: an index that is out of range while the guard is false
is never used. ``Select`` is treated like ``if_then_else`` because every code generator
prints it as a conditional (``c ? t : f``). Both bounds passes (``verify_bounds``,
``instrument_bounds``) read accesses through this one function so that they agree on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.ir import (
    And,
    BufferLoad,
    Call,
    Let,
    Or,
    PrimExpr,
    Select,
    intrinsics,
    op,
    substitute,
)


@dataclass(frozen=True)
class GuardedLoad:
    """A load and the condition under which the expression evaluates it (``None``: always).

    ``address`` is true for the operand of ``tw.address_of``: the element whose address is
    taken rather than read.
    """

    load: BufferLoad
    guard: PrimExpr | None
    address: bool = False


def guarded_loads(expr: PrimExpr, guard: PrimExpr | None = None) -> list[GuardedLoad]:
    """The loads of ``expr`` in evaluation order: a load's index loads come before it.

    Example::

        >>> loads = guarded_loads(T.if_then_else(i < n, A[idx[i]], 0))
        >>> [(g.load.buffer.name, g.guard) for g in loads]
        [('idx', i < n), ('A', i < n)]
    """
    found: list[GuardedLoad] = []
    _walk(expr, guard, found, address=False)
    return found


def _both(guard: PrimExpr | None, cond: PrimExpr) -> PrimExpr | None:
    if cond.dtype.lanes != 1:
        # A lane-wise condition cannot guard a scalar check: the loads count as unguarded.
        return guard
    return cond if guard is None else op.logical_and(guard, cond)


def _walk(expr: PrimExpr, guard: PrimExpr | None, found: list[GuardedLoad], address: bool) -> None:
    if isinstance(expr, BufferLoad):
        for index in expr.indices:
            _walk(index, guard, found, address=False)
        found.append(GuardedLoad(expr, guard, address))
        return
    branches: tuple[PrimExpr, PrimExpr, PrimExpr] | None = None
    if isinstance(expr, Call) and intrinsics.IF_THEN_ELSE.matches(expr):
        branches = (expr.args[0], expr.args[1], expr.args[2])
    elif isinstance(expr, Select):
        branches = (expr.condition, expr.true_value, expr.false_value)
    if branches is not None:
        cond, then, other = branches
        _walk(cond, guard, found, address=False)
        _walk(then, _both(guard, cond), found, address=False)
        _walk(other, _both(guard, op.logical_not(cond)), found, address=False)
        return
    if isinstance(expr, And | Or):
        _walk(expr.a, guard, found, address=False)
        second = expr.a if isinstance(expr, And) else op.logical_not(expr.a)
        _walk(expr.b, _both(guard, second), found, address=False)
        return
    if isinstance(expr, Let):
        # The checks are written outside the expression, where the let variable is unbound.
        _walk(expr.value, guard, found, address=False)
        _walk(substitute(expr.body, {expr.var: expr.value}), guard, found, address=False)
        return
    taking_address = isinstance(expr, Call) and intrinsics.ADDRESS_OF.matches(expr)
    for child in expr.children():
        if isinstance(child, PrimExpr):
            _walk(child, guard, found, address=taking_address)
