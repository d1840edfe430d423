"""Expressions in, simplified expressions out: the rewrite rules the ``Analyzer`` applies."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tilewright.arith.const_int_bound import NEG_INF, POS_INF, Bounds
from tilewright.arith.linear_form import (
    Key,
    LinearForm,
    build,
    expr_key,
    is_linear_dtype,
    same,
    to_form,
)
from tilewright.ir import op
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


def _is_const(e: PrimExpr) -> bool:
    return isinstance(e, IntImm | FloatImm)


def _const_value(e: PrimExpr, value: int | float) -> bool:
    return _is_const(e) and e.value == value  # type: ignore[attr-defined]


def _pos_const(e: PrimExpr) -> int | None:
    return e.value if isinstance(e, IntImm) and e.value > 0 else None


def _true(dt) -> IntImm:
    return IntImm(1, dt)


def _false(dt) -> IntImm:
    return IntImm(0, dt)


def _finite(b: Bounds) -> bool:
    return b[0] > NEG_INF and b[1] < POS_INF


class Rewriter:
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

    def _generic(self, expr: PrimExpr) -> PrimExpr:
        changes = {}
        for name, value in expr.field_items():
            if isinstance(value, PrimExpr):
                new = self(value)
            elif isinstance(value, tuple) and all(isinstance(v, PrimExpr) for v in value):
                items = tuple(self(v) for v in value)
                new = value if all(a is b for a, b in zip(items, value)) else items
            else:
                continue
            if new is not value:
                changes[name] = new
        return expr.replace(**changes) if changes else expr  # type: ignore[return-value]

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

    def finish(self, form: LinearForm) -> PrimExpr:
        """Build ``form`` after merging ``x // c * c + x % c`` pairs back into ``x``."""
        while self._merge_div_mod(form):
            pass
        return build(form)

    def _merge_div_mod(self, form: LinearForm) -> bool:
        for key, term, coef in list(form.items()):
            if not isinstance(term, FloorDiv):
                continue
            c = _pos_const(term.b)
            if c is None or coef % c != 0:
                continue
            k = coef // c
            inner = to_form(term.a)
            # The canonical form of e % c, as the simplifier writes it elsewhere in the form.
            rem = to_form(self.floormod_const(term.a, c))
            # k*c*(e // c) + k*(e % c) == k*e
            if _holds_terms(form, rem, k):
                removed = {key} | {rk for rk, _, _ in rem.items()}
                additions = [(t, k * a) for _, t, a in inner.items()]
                _splice(form, key, removed, additions, k * (inner.const - rem.const))
                return True
            # k*c*(e // c) - k*e == -k*(e % c)
            if not inner.is_const and _holds_terms(form, inner, -k):
                removed = {key} | {ik for ik, _, _ in inner.items()}
                additions = [(t, -k * a) for _, t, a in rem.items()]
                _splice(form, key, removed, additions, k * (inner.const - rem.const))
                return True
        return False

    def _FloorDiv(self, e: FloorDiv) -> PrimExpr:
        a, b, folded = self._operands(e)
        if folded is not None:
            return folded
        c = _pos_const(b)
        if c is None or not is_linear_dtype(e.dtype):
            return self._nonlinear(e, a, b)
        return self.floordiv_const(a, c)

    def floordiv_const(self, a: PrimExpr, c: int) -> PrimExpr:
        """``a // c`` for a positive constant ``c``; ``a`` is already simplified."""
        dt = a.dtype
        if c == 1:
            return a
        lo, hi = self.bound(a)
        if _finite((lo, hi)) and lo // c == hi // c:
            return IntImm(lo // c, dt)
        form = to_form(a)
        rest = LinearForm(dt, form.const)
        pulled: list[tuple[Key | None, PrimExpr | None, int]] = []
        for key, term, coef in form.items():
            if coef % c == 0:
                pulled.append((key, term, coef // c))
            else:
                if not rest.terms:
                    pulled.append((None, None, 0))  # where the remainder's quotient goes
                rest.add_term(term, coef, key)
        if any(term is not None for _, term, _ in pulled):
            quotient = to_form(self.floordiv_const(build(rest), c))
            result = LinearForm(dt, quotient.const)
            for key, term, coef in pulled:
                if term is None:
                    result.add_form(quotient.terms_only())
                else:
                    result.add_term(term, coef, key)
            return self.finish(result)
        single = form.single_term()
        if single is not None and single[1] == 1 and isinstance(single[0], FloorDiv):
            inner_c = _pos_const(single[0].b)
            if inner_c is not None:
                return self.floordiv_const(single[0].a, inner_c * c)
        g = _content(form, c)
        if form.const == 0 and g > 1:
            return self.floordiv_const(build(form.scaled_down(g)), c // g)
        return FloorDiv(a, IntImm(c, dt))

    def _FloorMod(self, e: FloorMod) -> PrimExpr:
        a, b, folded = self._operands(e)
        if folded is not None:
            return folded
        c = _pos_const(b)
        if c is None or not is_linear_dtype(e.dtype):
            return self._nonlinear(e, a, b)
        return self.floormod_const(a, c)

    def floormod_const(self, a: PrimExpr, c: int) -> PrimExpr:
        """``a % c`` (floor semantics) for a positive constant ``c``."""
        dt = a.dtype
        if c == 1:
            return IntImm(0, dt)
        form = to_form(a)
        lo, hi = self.bound(a)
        if _finite((lo, hi)) and lo // c == hi // c:
            form.const -= (lo // c) * c
            return self.finish(form)
        rest = LinearForm(dt, int(math.fmod(form.const, c)))
        for key, term, coef in form.items():
            if coef % c != 0:
                rest.add_term(term, coef, key)
        if len(rest.terms) != len(list(form.items())) or rest.const != form.const:
            return self.floormod_const(build(rest), c)
        single = form.single_term()
        if single is not None and single[1] == 1 and isinstance(single[0], FloorMod):
            inner_c = _pos_const(single[0].b)
            if inner_c is not None and inner_c % c == 0:
                return self.floormod_const(single[0].a, c)
        g = _content(form, c)
        if form.const == 0 and g > 1:
            inner = self.floormod_const(build(form.scaled_down(g)), c // g)
            return self.finish(to_form(inner).scaled(g))
        return FloorMod(a, IntImm(c, dt))

    def _Div(self, e: Div) -> PrimExpr:
        return self._trunc(e)

    _Mod = _Div

    def _trunc(self, e: Div | Mod) -> PrimExpr:
        a, b, folded = self._operands(e)
        if folded is not None:
            return folded
        c = _pos_const(b)
        if c is None or not is_linear_dtype(e.dtype):
            return self._nonlinear(e, a, b)
        is_div = isinstance(e, Div)
        lo, hi = self.bound(a)
        if lo >= 0:
            # Truncating and floor division agree on non-negative operands.
            r = self.floordiv_const(a, c) if is_div else self.floormod_const(a, c)
            floor_cls = FloorDiv if is_div else FloorMod
            if isinstance(r, floor_cls) and r.a is a:
                return type(e)(a, b)
            return r
        if -c < lo and hi < c:
            return IntImm(0, e.dtype) if is_div else a
        return self._nonlinear(e, a, b)

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
        if verdict is None:
            return node
        return _true(dt) if verdict else _false(dt)

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
        if type(a) in (EQ, NE) or (type(a) in _NEGATE and a.a.dtype.is_integer):
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
            self.analyzer._bounds[e.var] = self.bound(value)
            body = self(e.body)
        if e.var not in collect_vars(body):
            return body
        return Let(e.var, value, body)


def _splice(
    form: LinearForm, at: Key, removed: set, additions: list[tuple[PrimExpr, int]], const: int
) -> None:
    """Replace the terms ``removed`` by ``additions``, placed where term ``at`` was."""
    old = form.terms
    form.terms = {}
    for key, (term, coef) in old.items():
        if key == at:
            for t, c in additions:
                form.add_term(t, c)
        if key not in removed:
            form.add_term(term, coef, key)
    form.const += const


def _holds_terms(form: LinearForm, part: LinearForm, scale: int) -> bool:
    """True when every term of ``part``, times ``scale``, is in ``form`` with that coefficient."""
    return all(
        (entry := form.terms.get(pk)) is not None and entry[1] == scale * a
        for pk, _, a in part.items()
    )


def _content(form: LinearForm, c: int) -> int:
    g = c
    for _, _, coef in form.items():
        g = math.gcd(g, coef)
    return g


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
