"""Linear forms in, quotients and remainders by constants out: the division rewrite rules."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from tilewright.arith.const_int_bound import NEG_INF, POS_INF, Bounds
from tilewright.arith.linear_form import Key, LinearForm, build, is_linear_dtype, to_form
from tilewright.ir.expr import BinaryOp, Div, FloorDiv, FloorMod, IntImm, Mod, PrimExpr


def pos_const(e: PrimExpr) -> int | None:
    """The value of a positive integer constant, else None."""
    return e.value if isinstance(e, IntImm) and e.value > 0 else None


def _finite(b: Bounds) -> bool:
    return b[0] > NEG_INF and b[1] < POS_INF


class DivModRules:
    """Rules for ``//``, ``%`` and their truncating forms by positive constants.

    A mixin of ``Rewriter``, which provides ``__call__`` (simplify a subexpression),
    ``bound``, ``_operands`` and ``_nonlinear``. Every rule holds for all integer values
    within the known bounds: floor division of ``c * q + r`` by ``c`` is ``q + r // c``
    whatever the signs, and bounds decide when ``r // c`` is a constant.
    """

    if TYPE_CHECKING:  # provided by Rewriter, the class this one is mixed into

        def __call__(self, expr: PrimExpr) -> PrimExpr: ...

        def bound(self, expr: PrimExpr) -> Bounds: ...

        def _operands(self, e: BinaryOp) -> tuple[PrimExpr, PrimExpr, PrimExpr | None]: ...

        def _nonlinear(self, e: BinaryOp, a: PrimExpr, b: PrimExpr) -> PrimExpr: ...

    def finish(self, form: LinearForm) -> PrimExpr:
        """Build ``form`` after merging ``x // c * c + x % c`` pairs back into ``x``."""
        while self._merge_div_mod(form):
            pass
        return build(form)

    def _merge_div_mod(self, form: LinearForm) -> bool:
        for key, term, coef in list(form.items()):
            if not isinstance(term, FloorDiv):
                continue
            c = pos_const(term.b)
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
        return self._by_const_divisor(e, self.floordiv_const)

    def _FloorMod(self, e: FloorMod) -> PrimExpr:
        return self._by_const_divisor(e, self.floormod_const)

    def _by_const_divisor(
        self, e: BinaryOp, by_const: Callable[[PrimExpr, int], PrimExpr]
    ) -> PrimExpr:
        """``by_const(a, c)`` when ``e``'s simplified divisor is a positive constant ``c``."""
        a, b, folded = self._operands(e)
        if folded is not None:
            return folded
        c = pos_const(b)
        if c is None or not is_linear_dtype(e.dtype):
            return self._nonlinear(e, a, b)
        return by_const(a, c)

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
            for key, pulled_term, coef in pulled:
                if pulled_term is None:
                    result.add_form(quotient.terms_only())
                else:
                    result.add_term(pulled_term, coef, key)
            return self.finish(result)
        single = form.single_term()
        if single is not None and single[1] == 1 and isinstance(single[0], FloorDiv):
            inner_c = pos_const(single[0].b)
            if inner_c is not None:
                return self.floordiv_const(single[0].a, inner_c * c)
        if single is not None and single[1] == 1 and isinstance(single[0], FloorMod):
            # TVM's canonical form: x % (c * m) // c is x // c % m.
            inner_c = pos_const(single[0].b)
            if inner_c is not None and inner_c % c == 0:
                return self.floormod_const(self.floordiv_const(single[0].a, c), inner_c // c)
        g = _content(form, c)
        if form.const == 0 and g > 1:
            return self.floordiv_const(build(form.scaled_down(g)), c // g)
        return FloorDiv(a, IntImm(c, dt))

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
            inner_c = pos_const(single[0].b)
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
        c = pos_const(b)
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
