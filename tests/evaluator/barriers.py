"""Kernels with chosen barriers removed: the race detector must then object (tests show that
each barrier a pass placed is needed)."""

from __future__ import annotations

from tilewright.ir import Evaluate, IRModule, Mutator, Stmt
from tilewright.transform.inject_thread_sync import is_sync
from tilewright.transform.remove_no_op import no_op


class _DropBarriers(Mutator):
    """Replaces the barriers chosen by position (0 = first met in pre-order) by no-ops."""

    def __init__(self, which: set[int]) -> None:
        super().__init__()
        self.which = which
        self.seen = 0

    def visit_Evaluate(self, stmt: Evaluate) -> Stmt:
        if not is_sync(stmt):
            return stmt
        self.seen += 1
        return no_op() if self.seen - 1 in self.which else stmt


def without_barriers(lowered: IRModule, which: set[int], kernel: str = "main_kernel") -> IRModule:
    """``lowered`` with the barriers of ``kernel`` at positions ``which`` removed."""
    func = lowered[kernel]
    body = _DropBarriers(which).visit(func.body)
    return lowered.with_function(kernel, func.with_body(body))  # type: ignore[arg-type]
