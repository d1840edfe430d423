"""Lowered PrimFunc → itself, or ``LoweredFormError`` naming the first broken rule."""

from __future__ import annotations

from tilewright.ir import (
    Allocate,
    AttrStmt,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    IterVar,
    Let,
    LetStmt,
    Node,
    PrimFunc,
    Var,
    Visitor,
    collect_vars,
    pre_order_visit,
)


class LoweredFormError(ValueError):
    """A function handed to code generation is not in lowered form."""


def verify_lowered(func: PrimFunc) -> PrimFunc:
    """Check that ``func`` is in lowered form and return it unchanged.

    Rules (one ``check_*`` function each): no blocks remain; every load and store has one
    index into a 1-D buffer; every ``Allocate`` holds a 1-D buffer; every variable is defined
    (a parameter, a loop or let variable, a buffer's data or a symbolic shape of ``buffer_map``).

    Args:
        func: the lowered function.

    Example::

        >>> verify_lowered(flatten_buffers(lower_blocks(lower_init_block(f))))
    """
    check_no_blocks(func)
    check_flat_accesses(func)
    check_vars_defined(func)
    return func


def check_no_blocks(func: PrimFunc) -> None:
    """Raise if a ``Block`` or ``BlockRealize`` is left in the body."""

    def visit(node: Node) -> bool:
        if isinstance(node, Block | BlockRealize):
            name = node.name if isinstance(node, Block) else node.block.name
            raise LoweredFormError(f"block {name!r} is still present after lowering")
        return True

    pre_order_visit(func.body, visit)


def check_flat_accesses(func: PrimFunc) -> None:
    """Raise if a load, store or allocation is not on a 1-D buffer with one index."""

    def visit(node: Node) -> bool:
        if isinstance(node, BufferLoad | BufferStore):
            kind = "load from" if isinstance(node, BufferLoad) else "store to"
            if len(node.indices) != 1 or node.buffer.ndim != 1:
                raise LoweredFormError(
                    f"{kind} buffer {node.buffer.name} has {len(node.indices)} indices on a "
                    f"{node.buffer.ndim}-d buffer; lowered form needs one index into a 1-d buffer"
                )
        if isinstance(node, Allocate) and node.buffer.ndim != 1:
            raise LoweredFormError(
                f"allocation of buffer {node.buffer.name} is {node.buffer.ndim}-d, not flat"
            )
        return True

    pre_order_visit(func.body, visit)


def check_vars_defined(func: PrimFunc) -> None:
    """Raise naming the first variable used outside the scope that defines it."""
    defined: set[Var] = set(func.params)
    for _, buffer in func.buffer_map:
        defined.add(buffer.data)
        defined.update(collect_vars((buffer.shape, buffer.strides, buffer.elem_offset)))
    _ScopeChecker(defined).visit(func.body)


class _ScopeChecker(Visitor):
    def __init__(self, defined: set[Var]) -> None:
        self.defined = defined

    def scoped(self, var: Var, inner: object) -> None:
        fresh = var not in self.defined
        self.defined.add(var)
        self.visit(inner)
        if fresh:
            self.defined.discard(var)

    def visit_Var(self, var: Var) -> None:
        if var not in self.defined:
            raise LoweredFormError(f"variable {var.name!r} is used but not defined in scope")

    def visit_Buffer(self, buffer: Buffer) -> None:
        # A buffer's fields describe it; only the data variable of a used buffer must exist.
        self.visit_Var(buffer.data)

    def visit_For(self, loop: For) -> None:
        self.visit((loop.min, loop.extent))
        self.scoped(loop.loop_var, loop.body)

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.visit(stmt.value)
        self.scoped(stmt.var, stmt.body)

    def visit_Let(self, expr: Let) -> None:
        self.visit(expr.value)
        self.scoped(expr.var, expr.body)

    def visit_Allocate(self, alloc: Allocate) -> None:
        self.visit(alloc.buffer.shape)
        self.scoped(alloc.buffer.data, alloc.body)

    def visit_AttrStmt(self, stmt: AttrStmt) -> None:
        # The node is what the attribute talks about; an IterVar there defines its variable.
        self.visit(stmt.value)
        if isinstance(stmt.node, IterVar):
            self.scoped(stmt.node.var, stmt.body)
        else:
            self.visit(stmt.body)
