"""Loop nest with ``T.unroll`` loops → each constant-extent one written out, iteration by iteration.

A ``#pragma unroll`` leaves the decision to the device compiler, which may keep a loop whose
body indexes a register array (``C_local[i_2 * 8 + j_2]``) and so move that array to slow
local memory. Writing the iterations out, as TVM does for loops marked ``unroll``, gives the
compiler constant indices to work with.
"""

from __future__ import annotations

from tilewright.ir import (
    Allocate,
    For,
    ForKind,
    IntImm,
    Let,
    LetStmt,
    Mutator,
    PrimExpr,
    PrimFunc,
    Stmt,
    Var,
    pre_order_visit,
    seq,
    substitute,
)

MAX_UNROLLED_ITERATIONS = 256  # past this a loop keeps its pragma: code size would explode


def unroll_loops(func: PrimFunc) -> PrimFunc:
    """Replace each ``unroll`` loop of constant extent by its body once per iteration.

    Loops with a symbolic extent, or more than ``MAX_UNROLLED_ITERATIONS`` iterations, stay
    ``unroll`` loops (code generation prints a ``#pragma unroll``).

    Args:
        func: the function to unroll (before ``simplify``, which folds the substituted indices).

    Example::

        # before                            # after
        for k_1 in T.unroll(2):             C[0] = C[0] + A[k_0 * 2 + 0]
            C[0] = C[0] + A[k_0 * 2 + k_1]  C[0] = C[0] + A[k_0 * 2 + 1]
    """
    return func.with_body(_Unroller().visit(func.body))


def write_out(loop: For, limit: int = MAX_UNROLLED_ITERATIONS) -> Stmt | None:
    """``loop``'s body once per iteration, or ``None`` when it cannot be written out: a
    symbolic bound, more than ``limit`` iterations, or an allocation inside (one per buffer).

    Its kind is not looked at: ``apply_unroll_pragmas`` writes out serial loops too.

    Example::

        >>> write_out(For(k_1, 0, 2, ForKind.SERIAL, C[0] = C[0] + A[k_1]))
        SeqStmt((C[0] = C[0] + A[0], C[0] = C[0] + A[1]))
    """
    low, count = loop.min, loop.extent
    if not (isinstance(low, IntImm) and isinstance(count, IntImm)):
        return None
    start, extent = low.value, count.value
    inner = _defined(loop.body)
    if extent > limit or inner is None:
        return None
    copies = []
    for i in range(extent):
        # Each copy defines its own loop and let variables: one name, one definition.
        mapping: dict[Var, PrimExpr] = {v: Var(v.name, v.dtype) for v in inner} if i else {}
        mapping[loop.loop_var] = IntImm(start + i, loop.loop_var.dtype)
        copies.append(substitute(loop.body, mapping))
    return seq(*copies)


class _Unroller(Mutator):
    def visit_For(self, loop: For) -> Stmt:
        loop = loop.replace(body=self.visit(loop.body))
        written = write_out(loop) if loop.kind is ForKind.UNROLLED else None
        return loop if written is None else written


def _defined(body: Stmt) -> list[Var] | None:
    """Variables bound inside ``body``; None when it allocates (one allocation per buffer)."""
    found: list[Var] = []
    allocates = False

    def visit(node: object) -> bool:
        nonlocal allocates
        if isinstance(node, For):
            found.append(node.loop_var)
        elif isinstance(node, LetStmt | Let):
            found.append(node.var)
        elif isinstance(node, Allocate):
            allocates = True
        return True

    pre_order_visit(body, visit)
    return None if allocates else found
