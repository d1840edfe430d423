"""Integer expressions to and from canonical linear forms: sum of coefficient * term + constant."""

from __future__ import annotations

from collections.abc import Iterator

from tilewright.ir.buffer import Buffer
from tilewright.ir.dtype import DataType
from tilewright.ir.expr import Add, IntImm, Mul, PrimExpr, Sub, Var
from tilewright.ir.node import Node

Key = object

# Keys of recently seen nodes: simplification compares subtrees again and again.
_KEYS: dict[int, tuple[Node, Key]] = {}
_KEYS_LIMIT = 50_000


def expr_key(value: object) -> Key:
    """A hashable key equal for trees with the same structure and the very same variables.

    Unlike ``structural_equal``, free variables are compared by identity, so ``x`` and ``y``
    get different keys even when they have the same dtype.
    """
    if isinstance(value, Var | Buffer):
        return ("@", id(value))
    if isinstance(value, Node):
        cached = _KEYS.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1]
        key = (type(value).__name__, *(expr_key(v) for _, v in value.field_items()))
        if len(_KEYS) >= _KEYS_LIMIT:
            _KEYS.clear()
        # The node is kept alive with its key so that its id cannot be reused meanwhile.
        _KEYS[id(value)] = (value, key)
        return key
    if isinstance(value, tuple):
        return ("()", *(expr_key(v) for v in value))
    if isinstance(value, float) and value != value:
        return ("nan",)
    return (type(value).__name__, value)


def same(a: object, b: object) -> bool:
    """True when ``a`` and ``b`` are the same tree (free variables by identity)."""
    return a is b or expr_key(a) == expr_key(b)


def is_linear_dtype(dt: DataType) -> bool:
    """Linear forms are used for scalar signed integers, where ``-`` never wraps in practice."""
    return dt.is_int and dt.lanes == 1


class LinearForm:
    """``sum(coef * term) + const`` with terms kept in order of first appearance.

    Terms are non-linear atoms (variables, divisions, loads, products of atoms); two terms are
    alike when their ``expr_key`` is equal.
    """

    __slots__ = ("const", "dtype", "terms")

    def __init__(self, dtype: DataType, const: int = 0) -> None:
        self.dtype = dtype
        self.const = const
        self.terms: dict[Key, list] = {}  # key -> [term, coefficient]

    def copy(self) -> LinearForm:
        form = LinearForm(self.dtype, self.const)
        form.terms = {k: [t, c] for k, (t, c) in self.terms.items()}
        return form

    def add_term(self, term: PrimExpr, coef: int, key: Key | None = None) -> None:
        key = expr_key(term) if key is None else key
        entry = self.terms.get(key)
        if entry is None:
            self.terms[key] = [term, coef]
        else:
            entry[1] += coef

    def add_form(self, other: LinearForm, scale: int = 1) -> None:
        for key, (term, coef) in other.terms.items():
            self.add_term(term, coef * scale, key)
        self.const += other.const * scale

    def scaled(self, scale: int) -> LinearForm:
        form = LinearForm(self.dtype)
        form.add_form(self, scale)
        return form

    def scaled_down(self, g: int) -> LinearForm:
        """The form divided by ``g``, which divides every coefficient and the constant."""
        form = LinearForm(self.dtype, self.const // g)
        for key, term, coef in self.items():
            form.add_term(term, coef // g, key)
        return form

    def terms_only(self) -> LinearForm:
        """The form without its constant."""
        form = self.copy()
        form.const = 0
        return form

    def items(self) -> Iterator[tuple[Key, PrimExpr, int]]:
        for key, (term, coef) in self.terms.items():
            if coef != 0:
                yield key, term, coef

    @property
    def is_const(self) -> bool:
        return not any(True for _ in self.items())

    def single_term(self) -> tuple[PrimExpr, int] | None:
        """``(term, coef)`` when the form is exactly ``coef * term``."""
        items = list(self.items())
        if len(items) == 1 and self.const == 0:
            return items[0][1], items[0][2]
        return None


def to_form(expr: PrimExpr) -> LinearForm:
    """The linear form of ``expr``, distributing ``+``, ``-`` and products with constants."""
    form = LinearForm(expr.dtype)
    _accumulate(expr, 1, form)
    return form


def _accumulate(expr: PrimExpr, scale: int, form: LinearForm) -> None:
    if isinstance(expr, IntImm):
        form.const += expr.value * scale
    elif isinstance(expr, Add):
        _accumulate(expr.a, scale, form)
        _accumulate(expr.b, scale, form)
    elif isinstance(expr, Sub):
        _accumulate(expr.a, scale, form)
        _accumulate(expr.b, -scale, form)
    elif isinstance(expr, Mul) and isinstance(expr.b, IntImm):
        _accumulate(expr.a, scale * expr.b.value, form)
    elif isinstance(expr, Mul) and isinstance(expr.a, IntImm):
        _accumulate(expr.b, scale * expr.a.value, form)
    else:
        form.add_term(expr, scale)


def _scaled_term(term: PrimExpr, coef: int, dt: DataType) -> PrimExpr:
    return term if coef == 1 else Mul(term, IntImm(coef, dt))


def build(form: LinearForm) -> PrimExpr:
    """The expression of ``form``: terms in order, coefficient after its term, constant last.

    A leading negative term is preceded by the first positive one (``n - i`` rather than
    ``i * -1 + n``); with no positive term the expression starts from the constant.
    """
    dt = form.dtype
    items = [(term, coef) for _, term, coef in form.items()]
    if not items:
        return IntImm(form.const, dt)
    if items[0][1] < 0:
        first_pos = next((i for i, (_, c) in enumerate(items) if c > 0), None)
        if first_pos is not None:
            items.insert(0, items.pop(first_pos))
    const = form.const
    if items[0][1] > 0:
        term, coef = items.pop(0)
        result = _scaled_term(term, coef, dt)
    else:
        result = IntImm(const, dt)
        const = 0
    for term, coef in items:
        if coef > 0:
            result = Add(result, _scaled_term(term, coef, dt))
        else:
            result = Sub(result, _scaled_term(term, -coef, dt))
    if const > 0:
        result = Add(result, IntImm(const, dt))
    elif const < 0:
        result = Sub(result, IntImm(-const, dt))
    return result
