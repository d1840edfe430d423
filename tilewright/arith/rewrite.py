"""Expressions in, simplified expressions out: the rewrite rules the ``Analyzer`` applies."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypeGuard

from tilewright.arith.const_int_bound import Bounds
from tilewright.arith.div_mod import DivModRules
from tilewright.arith.linear_form import (
    Key,
    LinearForm,
    build,
    expr_key,
    is_linear_dtype,
    same,
    to_form,
)
from tilewright.ir import intrinsics, op
from tilewright.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
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
    Select,
    Sub,
    Var,
)
from tilewright.ir.functor import collect_vars

if TYPE_CHECKING:
    from tilewright.arith.analyzer import Analyzer

_NEGATE = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}
_FOLD = {
    Add: op.add,
    Sub: op.sub,
    Mul: op.mul,
    Div: op.truncdiv,
    Mod: op.truncmod,
    FloorDiv: op.floordiv,
    FloorMod: op.floormod,
    Min: op.min_value,
    Max: op.max_value,
    EQ: op.eq,
    NE: op.ne,
    LT: op.lt,
    LE: op.le,
    GT: op.gt,
    GE: op.ge,
}


def _is_const(e: PrimExpr) -> TypeGuard[IntImm | FloatImm]:
    return isinstance(e, IntImm | FloatImm)


def _const_value(e: PrimExpr, value: int | float) -> bool:
    return _is_const(e) and e.value == value


def _true(dt) -> IntImm:
    return IntImm(1, dt)


def _false(dt) -> IntImm:
    return IntImm(0, dt)


class Rewriter(DivModRules):
    """Simplifies one expression bottom-up using the analyzer's bounds and assumptions."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer

    def __call__(self, expr: PrimExpr) -> PrimExpr:
        method = getattr(self, f"_{type(expr).__name__}", None)
        result = self._generic(expr) if method is None else method(expr)
        if result is not expr and same(result, expr):
            return expr
        return result

    def bound(self, expr: PrimExpr) -> Bounds:
        return self.analyzer._bound(expr)

    # -- leaves and generic nodes -------------------------------------------------------------

    def _Var(self, v: Var) -> PrimExpr:
        return self.analyzer._values.get(v, v)

    def _Call(self, call: Call) -> PrimExpr:
        if not intrinsics.IF_THEN_ELSE.matches(call) or len(call.args) != 3:
            return self._generic(call)
        cond = self(call.args[0])
        if isinstance(cond, IntImm):
            return self(call.args[1] if cond.value else call.args[2])
        # Only the branch taken is evaluated, so each may assume its condition.
        with self.analyzer.assume(cond):
            t = self(call.args[1])
        with self.analyzer.assume(op.logical_not(cond)):
            f = self(call.args[2])
        return Call(call.dtype, call.op, (cond, t, f))

    def _generic(self, expr: PrimExpr) -> PrimExpr:
        changes: dict[str, object] = {}
        for name, value in expr.field_items():
            new: object
            if isinstance(value, PrimExpr):
                new = self(value)
            elif isinstance(value, tuple) and all(isinstance(v, PrimExpr) for v in value):
                items = tuple(self(v) for v in value)
                new = value if all(a is b for a, b in zip(items, value)) else items
            else:
                continue
            if new is not value:
                changes[name] = new
        return expr.replace(**changes) if changes else expr

    def _operands(self, e: BinaryOp | CmpOp) -> tuple[PrimExpr, PrimExpr, PrimExpr | None]:
        """Simplified operands, and the folded result when both are constants."""
        a, b = self(e.a), self(e.b)
        if _is_const(a) and _is_const(b):
            folded = _FOLD[type(e)](a, b)
            if _is_const(folded):
                return a, b, folded
        return a, b, None

    # -- arithmetic ---------------------------------------------------------------------------

    def _nonlinear(self, e: BinaryOp, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        """Identities valid for every dtype (floats included)."""
        is_int = e.dtype.is_integer
        if isinstance(e, Add):
            if _const_value(b, 0):
                return a
            if _const_value(a, 0):
                return b
        elif isinstance(e, Sub):
            if _const_value(b, 0):
                return a
        elif isinstance(e, Mul):
            if _const_value(b, 1):
                return a
            if _const_value(a, 1):
                return b
            if is_int and (_const_value(a, 0) or _const_value(b, 0)):
                return IntImm(0, e.dtype)
        elif isinstance(e, Div | FloorDiv) and _const_value(b, 1):
            return a
        elif (
            isinstance(e, Mod | FloorMod) and is_int and (_const_value(b, 1) or _const_value(b, -1))
        ):
            return IntImm(0, e.dtype)
        elif isinstance(e, Div | FloorDiv) and is_int and _const_value(b, -1):
            return self(Sub(IntImm(0, e.dtype), a))
        elif isinstance(e, Min | Max) and same(a, b):
            return a
        return type(e)(a, b)

    def _Add(self, e: Add) -> PrimExpr:
        return self._linear(e)

    _Sub = _Add

    def _linear(self, e: BinaryOp) -> PrimExpr:
        a, b, folded = self._operands(e)
        if folded is not None:
            return folded
        if not is_linear_dtype(e.dtype):
            return self._nonlinear(e, a, b)
        form = to_form(a)
        form.add_form(to_form(b), 1 if isinstance(e, Add) else -1)
        return self.finish(form)

    def _Mul(self, e: Mul) -> PrimExpr:
        a, b, folded = self._operands(e)
        if folded is not None:
            return folded
        if not is_linear_dtype(e.dtype):
            return self._nonlinear(e, a, b)
        fa, fb = to_form(a), to_form(b)
        if fb.is_const:
            return self.finish(fa.scaled(fb.const))
        if fa.is_const:
            return self.finish(fb.scaled(fa.const))
        form = LinearForm(e.dtype)
        sa, sb = fa.single_term(), fb.single_term()
        if sa is not None and sb is not None:
            form.add_term(Mul(sa[0], sb[0]), sa[1] * sb[1])
        else:
            form.add_term(Mul(a, b), 1)
        return self.finish(form)

    def _Min(self, e: Min) -> PrimExpr:
        return self._min_max(e)

    _Max = _Min

    def _min_max(self, e: Min | Max) -> PrimExpr:
        a, b, folded = self._operands(e)
        if folded is not None:
            return folded
        if is_linear_dtype(e.dtype):
            lo, hi = self.diff_bounds(a, b)
            a_smaller, b_smaller = hi <= 0, lo >= 0
            if a_smaller or b_smaller:
                return a if a_smaller == isinstance(e, Min) else b
        return self._nonlinear(e, a, b)

    # -- comparisons and logic ----------------------------------------------------------------

    def diff_bounds(self, a: PrimExpr, b: PrimExpr) -> Bounds:
        form = to_form(a)
        form.add_form(to_form(b), -1)
        if form.is_const:
            return (form.const, form.const)
        return self.analyzer._diff_bound(build(form))

    def _compare(self, e: CmpOp) -> PrimExpr:
        a, b, folded = self._operands(e)
        if folded is not None:
            return folded
        dt = e.dtype
        node = type(e)(a, b)
        facts = self.analyzer._facts
        if expr_key(node) in facts:
            return _true(dt)
        if _negated_key(node) in facts:
            return _false(dt)
        if not is_linear_dtype(a.dtype):
            return node
        lo, hi = self.diff_bounds(a, b)
        verdict = _decide(type(e), lo, hi)
        if verdict is not None:
            return _true(dt) if verdict else _false(dt)
        balanced = _rebalance(node)
        if isinstance(balanced, CmpOp) and balanced is not node:
            key = expr_key(balanced)
            if key in facts:
                return _true(dt)
            if _negated_key(balanced) in facts:
                return _false(dt)
        return balanced

    _EQ = _NE = _LT = _LE = _GT = _GE = _compare

    def _And(self, e: And) -> PrimExpr:
        return self._logic(e)

    _Or = _And

    def _logic(self, e: And | Or) -> PrimExpr:
        is_and = isinstance(e, And)
        a = self(e.a)
        if isinstance(a, IntImm):
            if bool(a.value) == is_and:
                return self(e.b)
            return a
        # b only matters when a is true (for and) or false (for or).
        with self.analyzer.assume(a if is_and else op.logical_not(a)):
            b = self(e.b)
        if isinstance(b, IntImm):
            return a if bool(b.value) == is_and else b
        if same(a, b):
            return a
        return type(e)(a, b)

    def _Not(self, e: Not) -> PrimExpr:
        a = self(e.a)
        if isinstance(a, IntImm):
            return IntImm(int(not a.value), e.dtype)
        if isinstance(a, Not):
            return a.a
        if isinstance(a, CmpOp) and (
            type(a) in (EQ, NE) or (type(a) in _NEGATE and a.a.dtype.is_integer)
        ):
            return _NEGATE[type(a)](a.a, a.b)
        return Not(a)

    def _Select(self, e: Select) -> PrimExpr:
        cond = self(e.condition)
        if isinstance(cond, IntImm):
            return self(e.true_value if cond.value else e.false_value)
        # Each side is only used when the condition has the matching value.
        with self.analyzer.assume(cond):
            t = self(e.true_value)
        with self.analyzer.assume(op.logical_not(cond)):
            f = self(e.false_value)
        if same(t, f):
            return t
        return Select(cond, t, f)

    def _Cast(self, e: Cast) -> PrimExpr:
        v = self(e.value)
        if v.dtype == e.dtype:
            return v
        if isinstance(v, IntImm | FloatImm) and e.dtype.lanes == 1:
            return _cast_const(v, e)
        return Cast(e.dtype, v)

    def _Let(self, e: Let) -> PrimExpr:
        value = self(e.value)
        with self.analyzer._scope():
            self.analyzer._bind_bounds(e.var, self.bound(value))
            body = self(e.body)
        if e.var not in collect_vars(body):
            return body
        return Let(e.var, value, body)


def _rebalance(node: CmpOp) -> PrimExpr:
    """Cancel terms and constants present on both sides; divide out a common factor.

    ``x + 1 < y + 1`` becomes ``x < y`` and ``i * 4 + j * 4 < 100`` becomes ``i + j < 25``;
    a comparison with nothing to cancel is returned as it is.
    """
    fa, fb = to_form(node.a), to_form(node.b)
    common = [k for k, _, _ in fa.items() if k in fb.terms and fb.terms[k][1] != 0]
    changed = bool(common) or (fa.const != 0 and fb.const != 0)
    for key in common:
        net = fa.terms[key][1] - fb.terms[key][1]
        on_left = net == 0 or (net > 0) == (fa.terms[key][1] > 0)
        fa.terms[key][1] = net if on_left else 0
        fb.terms[key][1] = 0 if on_left else -net
    if changed:
        net = fa.const - fb.const
        fa.const, fb.const = max(net, 0), max(-net, 0)
    cls = type(node)
    if fb.is_const and not fa.is_const and cls is not And and cls is not Or:
        g = 0
        for _, _, coef in fa.items():
            g = math.gcd(g, coef)
        if g > 1 and fa.const == 0:
            k = fb.const
            if cls in (EQ, NE) and k % g != 0:
                return IntImm(int(cls is NE), node.dtype)
            # g * L < k  <=>  L < ceil(k / g); the other orders follow the same way.
            k = -(-k // g) if cls in (LT, GE) else k // g
            fa, fb = fa.scaled_down(g), LinearForm(fb.dtype, k)
            changed = True
    if not changed:
        return node
    return cls(build(fa), build(fb))


def _decide(cls: type, lo: int, hi: int) -> bool | None:
    """The truth of ``d <cls> 0`` for every ``d`` in ``[lo, hi]``, or None when it varies."""
    if cls is LT:
        return True if hi < 0 else False if lo >= 0 else None
    if cls is LE:
        return True if hi <= 0 else False if lo > 0 else None
    if cls is GT:
        return True if lo > 0 else False if hi <= 0 else None
    if cls is GE:
        return True if lo >= 0 else False if hi < 0 else None
    if cls is EQ:
        return True if lo == hi == 0 else False if lo > 0 or hi < 0 else None
    if cls is NE:
        return False if lo == hi == 0 else True if lo > 0 or hi < 0 else None
    return None


def _negated_key(node: CmpOp) -> Key | None:
    neg = _NEGATE.get(type(node))
    if neg is None or not (node.a.dtype.is_integer or type(node) in (EQ, NE)):
        return None
    return expr_key(neg(node.a, node.b))


def _cast_const(v: IntImm | FloatImm, e: Cast) -> PrimExpr:
    dt = e.dtype
    if dt.is_float:
        return FloatImm(float(v.value), dt)
    if dt.is_bool:
        return IntImm(int(bool(v.value)), dt)
    if isinstance(v, FloatImm) and not math.isfinite(v.value):
        return Cast(dt, v)
    value = int(v.value)  # float to int truncates toward zero, as in C
    if dt.is_int:
        value = (value + 2 ** (dt.bits - 1)) % 2**dt.bits - 2 ** (dt.bits - 1)
    elif dt.is_uint:
        value %= 2**dt.bits
    else:
        return Cast(dt, v)
    return IntImm(value, dt)
