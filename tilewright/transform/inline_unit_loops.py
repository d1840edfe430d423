"""PrimFunc → the same function with loops of extent one replaced by their body at ``min``."""

from __future__ import annotations

from tilewright.ir import For, ForKind, IntImm, Mutator, PrimFunc, Stmt, substitute


def inline_unit_loops(func: PrimFunc) -> PrimFunc:
    """Replace each loop that runs exactly once by its body, the loop variable set to ``min``.

    Loops bound to a thread axis stay (their extent sets the launch dimensions), and so do
    loops with annotations, which later passes may read.

    Args:
        func: the function to clean; typically after ``lower_blocks``, where splits by the
            full extent leave ``for i_1 in range(1)`` behind.

    Example::

        # before                         # after
        for i_0 in range(16):            for i_0 in range(16):
            for i_1 in range(1):             C[i_0] = A[i_0]
                C[i_0 + i_1] = A[i_0 + i_1]
    """
    return func.with_body(_UnitLoopInliner().visit(func.body))


class _UnitLoopInliner(Mutator):
    def visit_For(self, loop: For) -> Stmt:
        body: Stmt = self.visit(loop.body)
        runs_once = isinstance(loop.extent, IntImm) and loop.extent.value == 1
        if runs_once and loop.kind is not ForKind.THREAD_BINDING and not loop.annotations:
            return substitute(body, {loop.loop_var: loop.min})
        return loop.replace(body=body)
