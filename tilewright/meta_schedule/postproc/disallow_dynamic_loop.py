"""``DisallowDynamicLoop``: rejects a schedule in which some loop has a non-constant extent."""

from __future__ import annotations

from tilewright.ir import For, IntImm, pre_order_visit
from tilewright.meta_schedule.postproc.postproc import Postproc
from tilewright.schedule import Schedule


class DisallowDynamicLoop(Postproc):
    """Rejects candidates with a loop whose extent is not a constant (TVM's
    ``DisallowDynamicLoop``): the tuner compares only programs of known trip counts.

    Example::

        ok = DisallowDynamicLoop().apply(sch)   # False if some loop runs `n` times
    """

    def apply(self, sch: Schedule) -> bool:
        return not any(has_dynamic_loop(func.body) for _, func in sch.mod.items())


def has_dynamic_loop(tree: object) -> bool:
    """Some loop in ``tree`` has an extent that is not an integer constant."""
    found = False

    def visit(node: object) -> bool:
        nonlocal found
        if isinstance(node, For) and not isinstance(node.extent, IntImm):
            found = True
        return not found

    pre_order_visit(tree, visit)
    return found
