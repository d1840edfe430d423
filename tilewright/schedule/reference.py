"""Block and loop references (random variables, in TVM's words) handed out by a ``Schedule``."""

from __future__ import annotations

import ast
import itertools
import operator
from collections.abc import Mapping

from tilewright.arith.simplify import simplify
from tilewright.ir.dtype import DataType, int32
from tilewright.ir.expr import IntImm, PrimExpr, Var
from tilewright.ir.functor import post_order_visit, substitute

_ids = itertools.count()


class _Ref:
    """A handle compared by identity; the schedule maps it to the IR node it stands for."""

    __slots__ = ("_id",)
    prefix = "?"

    def __init__(self) -> None:
        self._id = next(_ids)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(#{self._id})"


class BlockRV(_Ref):
    """A reference to a block; stays valid while the block exists (by its name)."""

    __slots__ = ()
    prefix = "b"


class LoopRV(_Ref):
    """A reference to a loop; stays valid while the loop (its loop variable) exists."""

    __slots__ = ()
    prefix = "l"


class ExprRV(Var):
    """An integer chosen by a sampling instruction: as in TVM, an ``int32`` variable, so a
    ``PrimExpr`` wherever one is accepted (``v0 * v1``, ``v0 < 4``, inside an index map);
    ``Schedule.get`` gives its value, or the value of an expression of several.

    Example::

        >>> v0, v1 = sch.sample_perfect_tile(i, n=2)
        >>> sch.get(v0 * v1) == sch.get(v0) * sch.get(v1)
        True
    """

    __slots__ = ()
    prefix = "v"

    def __init__(self, name: str = "", dtype: DataType = int32) -> None:
        # Compared by identity like every variable; the name is a printing hint only.
        Var.__init__(self, name or f"v{next(_ids)}", dtype)

    def __repr__(self) -> str:
        return f"ExprRV({self.name})"


def rvs_in(value: object) -> list[ExprRV]:
    """The ``ExprRV``s an expression (or a list of them) uses, in order of first use.

    Example::

        >>> rvs_in(v0 * v1 + v0)
        [ExprRV(v0), ExprRV(v1)]
    """
    found: dict[ExprRV, None] = {}
    if isinstance(value, PrimExpr | list | tuple):
        post_order_visit(value, lambda n: found.setdefault(n) if isinstance(n, ExprRV) else None)
    return list(found)


def rv_value(expr: PrimExpr, values: Mapping[ExprRV, int]) -> int | None:
    """The integer ``expr`` takes with each ``ExprRV`` at its value in ``values`` (as TVM's
    ``Schedule.get`` of an expression); None when it does not fold to an integer.

    Example::

        >>> rv_value(v0 * v1 + 1, {v0: 4, v1: 8})
        33
    """
    folded = simplify(substitute(expr, {rv: values[rv] for rv in rvs_in(expr) if rv in values}))
    return folded.value if isinstance(folded, IntImm) else None


def rv_expr_text(expr: PrimExpr, names: Mapping[ExprRV, str]) -> str:
    """``expr`` as Python text with each ``ExprRV`` spelled by its trace name.

    Example::

        >>> rv_expr_text(v0 * v1 + 1, {v0: "v3", v1: "v4"})
        'v3 * v4 + 1'
    """
    renamed: dict[Var, PrimExpr | int] = {
        rv: Var(names.get(rv, rv.name), rv.dtype) for rv in rvs_in(expr)
    }
    return substitute(expr, renamed).script()


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def parse_rv_expr(text: str, refs: Mapping[str, object]) -> PrimExpr:
    """The expression ``rv_expr_text`` wrote, its names looked up in ``refs``: integers,
    names, ``+ - * // %`` and negation (what the arithmetic of sampled values needs).

    Example::

        >>> parse_rv_expr("v3 * v4 + 1", {"v3": v0, "v4": v1})
        v0 * v1 + 1
    """

    def build(node: ast.expr) -> object:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in refs:
            return refs[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](build(node.left), build(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -build(node.operand)  # type: ignore[operator]
        raise ValueError(f"cannot read the expression {text!r}: {ast.dump(node)}")

    value = build(ast.parse(text, mode="eval").body)
    if not isinstance(value, PrimExpr):
        raise ValueError(f"{text!r} uses no ExprRV")
    return value
