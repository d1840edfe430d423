"""Expressions and statements in, simplified ones out, with loop and block domains as bounds."""

from __future__ import annotations

from collections.abc import Mapping

from tilewright.arith.analyzer import Analyzer
from tilewright.ir import op
from tilewright.ir.expr import IntImm, PrimExpr, Range, Var
from tilewright.ir.functor import Mutator
from tilewright.ir.stmt import Block, For, IfThenElse, LetStmt, Stmt


def simplify(expr: PrimExpr | int, bounds: Mapping[Var, Range] | None = None) -> PrimExpr:
    """``expr`` simplified, each variable of ``bounds`` assumed to lie in its range.

    Args:
        expr: the expression to simplify.
        bounds: the domain of each variable; others may take any value of their dtype.

    Example::

        >>> simplify((i_0 * 128 + i_1) // 128, {i_1: Range.from_min_extent(0, 128)})
        i_0
    """
    analyzer = Analyzer()
    for var, rng in (bounds or {}).items():
        analyzer.bind(var, rng)
    return analyzer.simplify(expr)


class _StmtSimplifier(Mutator):
    """Simplifies every expression of a statement with the domains of the enclosing loops."""

    def __init__(self, analyzer: Analyzer) -> None:
        super().__init__()
        self.analyzer = analyzer

    def visit_PrimExpr(self, expr: PrimExpr) -> PrimExpr:
        return self.analyzer.simplify(expr)

    def visit_For(self, loop: For) -> Stmt:
        lo, extent = self.visit(loop.min), self.visit(loop.extent)
        with self.analyzer._scope():
            self.analyzer.bind(loop.loop_var, Range(lo, extent))
            body = self.visit(loop.body)
            annotations = self.visit(loop.annotations)
        return loop.replace(min=lo, extent=extent, body=body, annotations=annotations)

    def visit_Block(self, block: Block) -> Stmt:
        iter_vars = self.visit(block.iter_vars)
        with self.analyzer._scope():
            for iv in iter_vars:
                self.analyzer.bind(iv.var, iv.dom)
            changes = {
                name: self.visit(value)
                for name, value in block.field_items()
                if name not in ("name", "iter_vars")
            }
        return block.replace(iter_vars=iter_vars, **changes)

    def visit_LetStmt(self, stmt: LetStmt) -> Stmt:
        value = self.visit(stmt.value)
        with self.analyzer._scope():
            # The variable keeps its name in the output; only its bounds are used.
            self.analyzer._bind_bounds(stmt.var, self.analyzer._bound(value))
            body = self.visit(stmt.body)
        return stmt.replace(value=value, body=body)

    def visit_IfThenElse(self, stmt: IfThenElse) -> Stmt:
        cond = self.visit(stmt.condition)
        assert isinstance(cond, PrimExpr)
        if isinstance(cond, IntImm) and cond.value:
            return self.visit(stmt.then_case)
        if isinstance(cond, IntImm) and stmt.else_case is not None:
            return self.visit(stmt.else_case)
        with self.analyzer.constraint_scope(cond):
            then_case = self.visit(stmt.then_case)
        else_case: object = stmt.else_case
        if else_case is not None:
            with self.analyzer.constraint_scope(op.logical_not(cond)):
                else_case = self.visit(else_case)
        return stmt.replace(condition=cond, then_case=then_case, else_case=else_case)


def simplify_stmt(stmt: Stmt, analyzer: Analyzer | None = None) -> Stmt:
    """``stmt`` with every expression simplified; the same object when nothing changes.

    For loop variables take their loop's range, block iterators their domain, and LetStmt
    variables the bounds of their value; an ``if`` with a provable condition is replaced by
    the branch taken.

    Args:
        stmt: the statement to simplify.
        analyzer: known bounds of free variables (a fresh analyzer when omitted).

    Example::

        >>> simplify_stmt(For(i, 0, 8, ForKind.SERIAL, BufferStore(A, 0.0, (i // 8,))))
        # the store's index becomes 0
    """
    return _StmtSimplifier(analyzer or Analyzer()).visit(stmt)
