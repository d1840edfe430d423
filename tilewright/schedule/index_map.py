"""``IndexMap``: a buffer layout as a function of the old indices, ``lambda i, j: (j, i)``.

``transform_layout`` takes one (TVM's ``tir.IndexMap``, or a plain Python function). It is
kept as the variables and the result expressions, prints as the ``lambda`` that makes it
(which is how traces store it: printed traces stay runnable Python, JSON traces hold the
text) and parses back from that text. The expressions are integer arithmetic over the
variables: ``+ - * // %``, constants and the bit operations ``^ & | << >>`` (XOR swizzles
such as ``lambda i, j: (i, j ^ (i % 8))``; in a map's text ``&`` and ``|`` are bitwise, as the
map's values are integers).
"""

from __future__ import annotations

import ast
import inspect
import json
from collections.abc import Callable, Mapping, Sequence

from tilewright.ir import intrinsics, op
from tilewright.ir.dtype import DataType, int32
from tilewright.ir.expr import Add, Call, FloorDiv, FloorMod, IntImm, Mul, PrimExpr, Sub, Var
from tilewright.ir.functor import collect_vars, substitute

# Python's precedences, loosest first: | ^ & (<< >>) (+ -) (* // %).
_SYMBOLS: dict[type, tuple[str, int]] = {
    Add: ("+", 5),
    Sub: ("-", 5),
    Mul: ("*", 6),
    FloorDiv: ("//", 6),
    FloorMod: ("%", 6),
}
_BIT_SYMBOLS: dict[str, tuple[str, int]] = {
    "bitwise_or": ("|", 1),
    "bitwise_xor": ("^", 2),
    "bitwise_and": ("&", 3),
    "shift_left": ("<<", 4),
    "shift_right": (">>", 4),
}


def _bit(name: str) -> Callable[[PrimExpr, PrimExpr], PrimExpr]:
    return lambda a, b: intrinsics.lookup(name).call(a, b)


_OPERATORS: dict[type, Callable[[PrimExpr, PrimExpr], PrimExpr]] = {
    ast.Add: op.add,
    ast.Sub: op.sub,
    ast.Mult: op.mul,
    ast.FloorDiv: op.floordiv,
    ast.Mod: op.floormod,
    ast.BitOr: _bit("bitwise_or"),
    ast.BitXor: _bit("bitwise_xor"),
    ast.BitAnd: _bit("bitwise_and"),
    ast.LShift: _bit("shift_left"),
    ast.RShift: _bit("shift_right"),
}


class IndexMap:
    """``final_indices`` as functions of ``initial_indices``.

    Example::

        >>> m = IndexMap.from_func(lambda i, k: (k, i))
        >>> str(m)
        'lambda i, k: (k, i)'
        >>> IndexMap.parse(str(m)) == m
        True
    """

    def __init__(self, initial_indices: Sequence[Var], final_indices: Sequence[PrimExpr]) -> None:
        self.initial_indices = tuple(initial_indices)
        self.final_indices = tuple(final_indices)
        self._text = _lambda_text(self.initial_indices, self.final_indices)

    @staticmethod
    def from_func(
        func: Callable[..., object], ndim: int | None = None, dtype: DataType = int32
    ) -> IndexMap:
        """The map ``func`` computes, called on one variable per index (of the buffer's index
        ``dtype``, ``int32`` by default). As in TVM,
        a ``*args`` parameter takes the indices the named ones leave (``ndim`` in all), named
        ``<args>_0``, ``<args>_1``, ...; keyword-only parameters after it take the last ones:
        ``lambda *idx, k: (k, *idx)`` moves the last dimension first."""
        params = list(inspect.signature(func).parameters.values())
        positional = [
            p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        keyword = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
        star = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
        if star is not None:
            if ndim is None:
                raise ValueError("an index map taking *args needs ndim")
            # Too many named indices: none for *args; the caller refuses the count.
            count = max(ndim - len(positional) - len(keyword), 0)
            names = [*positional, *(f"{star}_{k}" for k in range(count)), *keyword]
        else:
            names = [*positional, *keyword]
        variables = [Var(name, dtype) for name in names]
        first = len(names) - len(keyword)
        result = func(*variables[:first], **{n: v for n, v in zip(keyword, variables[first:])})
        items = result if isinstance(result, list | tuple) else (result,)
        final = [op.convert(x, dtype) if isinstance(x, int) else x for x in items]
        if not all(isinstance(x, PrimExpr) for x in final):
            raise TypeError(f"index map {func!r} must return integer expressions, got {result!r}")
        if any(x.dtype.is_bool for x in final):
            raise TypeError(
                f"index map {func!r} returns a condition: on expressions `&`, `|` and `~` are "
                "logical; write j % 8 or T.bitwise_and(j, 7), or give the map as text"
            )
        return IndexMap(variables, final)

    @staticmethod
    def parse(
        text: str, symbols: Mapping[str, Var] | None = None, dtype: DataType = int32
    ) -> IndexMap:
        """The map ``str(index_map)`` printed: ``"lambda i, j: (j, i)"``; other names are
        the function's ``symbols`` (``"lambda i, j: (i * n + j,)"``)."""
        try:
            tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as err:
            raise ValueError(f"index map {text!r} is not a Python lambda: {err.msg}") from None
        if not isinstance(tree, ast.Lambda):
            raise ValueError(f"index map {text!r} is not a lambda")
        variables = {a.arg: Var(a.arg, dtype) for a in tree.args.args}
        names = {**(symbols or {}), **variables}
        body = tree.body
        items = body.elts if isinstance(body, ast.Tuple | ast.List) else [body]
        final = [_expr(item, names, text, dtype) for item in items]
        return IndexMap(list(variables.values()), final)

    def map_indices(self, indices: Sequence[PrimExpr]) -> list[PrimExpr]:
        """The new indices of the element at ``indices``."""
        if len(indices) != len(self.initial_indices):
            raise ValueError(
                f"index map {self} takes {len(self.initial_indices)} indices, got {len(indices)}"
            )
        table = dict(zip(self.initial_indices, indices))
        return [substitute(e, table) for e in self.final_indices]

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        # A map naming the function's symbols prints as its quoted text (a printed trace
        # stays runnable: transform_layout parses it with the function's symbols).
        free = set(collect_vars(self.final_indices)) - set(self.initial_indices)
        return json.dumps(self._text) if free else self._text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IndexMap) and str(other) == self._text

    def __hash__(self) -> int:
        return hash(self._text)


def as_index_map(
    value: IndexMap | str | Callable[..., object],
    ndim: int,
    symbols: Mapping[str, Var] | None = None,
    dtype: DataType = int32,
) -> IndexMap:
    """``value`` as an ``IndexMap``: itself, parsed from its text (naming ``symbols`` too),
    or made from a function."""
    if isinstance(value, IndexMap):
        return value
    if isinstance(value, str):
        return IndexMap.parse(value, symbols, dtype)
    if callable(value):
        return IndexMap.from_func(value, ndim, dtype)
    raise TypeError(f"an index map must be an IndexMap or a function, got {type(value).__name__}")


def _lambda_text(variables: Sequence[Var], final: Sequence[PrimExpr]) -> str:
    items = [_text(e) for e in final]
    body = f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    return f"lambda {', '.join(v.name for v in variables)}: {body}"


def _text(e: PrimExpr, outer: int = 0, right: bool = False) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, IntImm):
        return str(e.value) if e.value >= 0 or outer == 0 else f"({e.value})"
    operands: tuple[PrimExpr, ...] = ()
    entry = None
    if isinstance(e, Call) and len(e.args) == 2:
        entry, operands = _BIT_SYMBOLS.get(e.op.removeprefix("tir.")), e.args
    elif isinstance(e, Add | Sub | Mul | FloorDiv | FloorMod):
        entry, operands = _SYMBOLS[type(e)], (e.a, e.b)
    if entry is None:
        raise ValueError(f"an index map holds only + - * // % ^ & | << >> and constants, not {e!r}")
    symbol, prec = entry
    a, b = operands
    text = f"{_text(a, prec)} {symbol} {_text(b, prec, right=True)}"
    return f"({text})" if prec < outer or (right and prec == outer) else text


def _expr(node: ast.expr, variables: dict[str, Var], text: str, dtype: DataType) -> PrimExpr:
    if isinstance(node, ast.Name) and node.id in variables:
        return variables[node.id]
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return IntImm(node.value, dtype)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return op.sub(IntImm(0, dtype), _expr(node.operand, variables, text, dtype))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left = _expr(node.left, variables, text, dtype)
        right = _expr(node.right, variables, text, dtype)
        return _OPERATORS[type(node.op)](left, right)
    raise ValueError(
        f"index map {text!r}: {ast.unparse(node)!r} is not integer arithmetic over "
        f"{', '.join(variables) or 'no variables'} (+ - * // % ^ & | << >> and constants)"
    )
