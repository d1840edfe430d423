"""How many floating-point operations a workload performs, counted on its block-level TIR.

Each block computes its body once per point of its iterators' domains; the body's float
arithmetic (``+ - * /``, ``min``/``max``, math calls) counts one operation each. Loads,
stores, casts and integer index arithmetic count nothing. The tuner divides this by the
measured time for the GFLOP/s of its logs.

Example::

    >>> estimate_flops(matmul_module(1024))     # 2 * 1024**3
    2147483648
"""

from __future__ import annotations

from tilewright.ir import (
    Add,
    Block,
    Call,
    Div,
    IRModule,
    Max,
    Min,
    Mul,
    Node,
    PrimFunc,
    Sub,
    post_order_visit,
)

_ARITH = (Add, Sub, Mul, Div, Max, Min, Call)


def _float_ops(stmt: object) -> int:
    count = 0

    def visit(node: Node) -> None:
        nonlocal count
        if isinstance(node, _ARITH) and node.dtype.is_float:
            count += 1

    post_order_visit(stmt, visit)
    return count


def estimate_flops(mod: IRModule | PrimFunc) -> int:
    """Floating-point operations of every function of ``mod`` (see the module docstring)."""
    funcs = [mod] if isinstance(mod, PrimFunc) else [f for _, f in mod.items()]
    total = 0

    def visit(node: Node) -> None:
        nonlocal total
        if not isinstance(node, Block) or not node.iter_vars:
            return
        points = 1
        for iv in node.iter_vars:
            extent = getattr(iv.dom.extent, "value", None)
            if not isinstance(extent, int):
                return
            points *= extent
        total += points * _float_ops(node.body)

    for func in funcs:
        post_order_visit(func.body, visit)
    return total
