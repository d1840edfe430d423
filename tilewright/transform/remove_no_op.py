"""PrimFunc → the same function without statements that do nothing (dead ifs, empty loops)."""

from __future__ import annotations

from tilewright.ir import (
    Allocate,
    AttrStmt,
    BufferLoad,
    BufferStore,
    Call,
    Evaluate,
    For,
    IfThenElse,
    IntImm,
    LetStmt,
    Mutator,
    PrimFunc,
    SeqStmt,
    Stmt,
    collect_vars,
    post_order_visit,
    seq,
    structural_equal,
)
from tilewright.ir.dtype import int32


def remove_no_op(func: PrimFunc) -> PrimFunc:
    """Drop statements without effect.

    Removed: ``if`` on a constant condition (the live branch is kept), loops whose extent is a
    constant ``<= 0`` or whose body does nothing, ``T.evaluate`` of an expression without a
    call, stores of a location's own value (``A[i] = A[i]``), and ``LetStmt`` / ``Allocate`` /
    ``AttrStmt`` / sequences left empty. A body that does nothing becomes ``T.evaluate(0)``.

    Args:
        func: the function to clean.

    Example::

        # before                          # after
        for k in range(4):                for k in range(4):
            if True:                          C[0] = C[0] + A[k]
                C[0] = C[0] + A[k]
            T.evaluate(0)
    """
    return func.with_body(_NoOpRemover().visit(func.body))


def no_op() -> Stmt:
    """The canonical statement that does nothing: ``T.evaluate(0)``."""
    return Evaluate(IntImm(0, int32))


def is_no_op(stmt: Stmt) -> bool:
    """True for ``T.evaluate`` of an expression that calls nothing, and empty sequences."""
    if isinstance(stmt, SeqStmt):
        return all(is_no_op(s) for s in stmt.seq)
    if isinstance(stmt, Evaluate):
        calls: list[Call] = []
        post_order_visit(stmt.value, lambda n: calls.append(n) if isinstance(n, Call) else None)
        return not calls
    return False


def _same(a: object, b: object) -> bool:
    # structural_equal maps variables by first appearance; A[i, j] = A[j, i] is no no-op, so
    # the variables must also be the very same objects.
    if not structural_equal(a, b):
        return False
    return all(x is y for x, y in zip(collect_vars(a), collect_vars(b), strict=True))


class _NoOpRemover(Mutator):
    def visit_SeqStmt(self, stmt: SeqStmt) -> Stmt:
        visited: list[Stmt] = [self.visit(s) for s in stmt.seq]
        kept = [s for s in visited if not is_no_op(s)]
        if not kept:
            return no_op()
        if len(kept) == len(stmt.seq) and all(a is b for a, b in zip(kept, stmt.seq)):
            return stmt
        return seq(*kept)

    def visit_IfThenElse(self, stmt: IfThenElse) -> Stmt:
        if isinstance(stmt.condition, IntImm):
            live = stmt.then_case if stmt.condition.value else stmt.else_case
            return no_op() if live is None else self.visit(live)
        then_case = self.visit(stmt.then_case)
        else_case = None if stmt.else_case is None else self.visit(stmt.else_case)
        if else_case is not None and is_no_op(else_case):
            else_case = None
        if is_no_op(then_case) and else_case is None:
            return no_op()
        return stmt.replace(then_case=then_case, else_case=else_case)

    def visit_For(self, loop: For) -> Stmt:
        if isinstance(loop.extent, IntImm) and loop.extent.value <= 0:
            return no_op()
        body = self.visit(loop.body)
        if is_no_op(body):
            return no_op()
        return loop.replace(body=body)

    def visit_Evaluate(self, stmt: Evaluate) -> Stmt:
        return no_op() if is_no_op(stmt) else stmt

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        store = self.generic_visit(store)
        value = store.value
        if (
            isinstance(value, BufferLoad)
            and value.buffer is store.buffer
            and _same(value.indices, store.indices)
        ):
            return no_op()
        return store

    def visit_LetStmt(self, stmt: LetStmt) -> Stmt:
        return self._scoped(stmt)

    def visit_Allocate(self, stmt: Allocate) -> Stmt:
        return self._scoped(stmt)

    def visit_AttrStmt(self, stmt: AttrStmt) -> Stmt:
        return self._scoped(stmt)

    def _scoped(self, stmt: LetStmt | Allocate | AttrStmt) -> Stmt:
        body = self.visit(stmt.body)
        if is_no_op(body):
            return no_op()
        return stmt.replace(body=body)
