"""After a loop rewrite: substitute the old loop variables and re-simplify block bindings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import cast

from tilewright.arith.iter_map import iter_map_simplify
from tilewright.ir import expr as ex
from tilewright.ir import op
from tilewright.ir.expr import PrimExpr, Range, Var
from tilewright.ir.functor import Mutator, collect_vars, substitute
from tilewright.ir.stmt import Block, BlockRealize, For, Stmt
from tilewright.schedule.tree import children, update, with_child


def rewrite_loops(
    body: Stmt,
    mapping: Mapping[Var, PrimExpr],
    outer: Mapping[Var, Range],
    *,
    drop_unit_iters: bool = False,
) -> Stmt:
    """``body`` with ``mapping`` substituted; the bindings of blocks that used a substituted
    variable are put in canonical iterator-map form (``i_0 * 128 + i_1``) when they are a
    clean iterator map of the loops around them, and left as substituted otherwise.

    Args:
        body: the statement to rewrite.
        mapping: old loop variable -> its expression in the new loops.
        outer: the ranges of the loops around ``body`` up to its enclosing block.
        drop_unit_iters: replace loops of extent 1 by their start in the bindings.
    """
    new = cast(Stmt, _Refold().visit(substitute(body, mapping)))
    changed = {v for e in mapping.values() for v in collect_vars(e)}
    return _simplify(new, dict(outer), changed, drop_unit_iters)


_FOLD: dict[type, Callable[[ex.PrimExpr, ex.PrimExpr], ex.PrimExpr]] = {
    ex.Add: op.add,
    ex.Sub: op.sub,
    ex.Mul: op.mul,
    ex.FloorDiv: op.floordiv,
    ex.FloorMod: op.floormod,
    ex.Div: op.truncdiv,
    ex.Mod: op.truncmod,
    ex.Min: op.min_value,
    ex.Max: op.max_value,
    ex.EQ: op.eq,
    ex.NE: op.ne,
    ex.LT: op.lt,
    ex.LE: op.le,
    ex.GT: op.gt,
    ex.GE: op.ge,
    ex.And: op.logical_and,
    ex.Or: op.logical_or,
}


class _Refold(Mutator):
    """Rebuilds operations on constants the way the expression constructors (and so the
    parser) would: substituting ``0`` for a unit loop leaves ``0 * 6``, which they fold."""

    def visit_BinaryOp(self, node: ex.BinaryOp) -> ex.PrimExpr:
        new = cast(ex.BinaryOp, self.generic_visit(node))
        constants = (ex.IntImm, ex.FloatImm)
        if isinstance(new.a, constants) and isinstance(new.b, constants):
            return _FOLD[type(new)](new.a, new.b)
        return new

    def visit_CmpOp(self, node: ex.CmpOp) -> ex.PrimExpr:
        new = cast(ex.CmpOp, self.generic_visit(node))
        a, b = new.a, new.b
        if isinstance(new, ex.And | ex.Or) and (
            isinstance(a, ex.IntImm) or isinstance(b, ex.IntImm)
        ):
            return _FOLD[type(new)](a, b)
        if isinstance(a, ex.IntImm | ex.FloatImm) and isinstance(b, ex.IntImm | ex.FloatImm):
            return _FOLD[type(new)](a, b)
        return new


def _simplify(stmt: Stmt, dom: dict[Var, Range], changed: set[Var], drop: bool) -> Stmt:
    if isinstance(stmt, For):
        inner = dict(dom)
        inner[stmt.loop_var] = Range(stmt.min, stmt.extent)
        return update(stmt, body=_simplify(stmt.body, inner, changed, drop))
    if isinstance(stmt, BlockRealize):
        realize = stmt
        used = {v for e in stmt.iter_values for v in collect_vars(e)}
        if used & changed:
            values = iter_map_simplify(stmt.iter_values, dom, stmt.predicate, drop_unit_iters=drop)
            realize = update(stmt, iter_values=tuple(values))
        block = realize.block
        # A block starts a new scope: the loops outside it are no iterators of its children.
        new_block = _simplify_children(block, {}, changed, drop)
        return update(realize, block=new_block)
    return _simplify_children(stmt, dom, changed, drop)


def _simplify_children(stmt: Stmt, dom: dict[Var, Range], changed: set[Var], drop: bool) -> Stmt:
    result = stmt
    for child in children(stmt):
        new = _simplify(child, dom, changed, drop)
        if new is not child:
            result = with_child(result, child, new)
    return result


def block_scope_domain(path: tuple[Stmt, ...]) -> dict[Var, Range]:
    """The ranges of the loops on ``path`` below its innermost block."""
    start = 0
    for k, stmt in enumerate(path):
        if isinstance(stmt, Block):
            start = k + 1
    return {s.loop_var: Range(s.min, s.extent) for s in path[start:] if isinstance(s, For)}
