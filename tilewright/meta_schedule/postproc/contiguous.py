"""How many of a block's innermost loops move through memory contiguously in every buffer
the block touches: the most loops vectorizing may fuse (TVM's stride analysis in
``RewriteParallelVectorizeUnroll``)."""

from __future__ import annotations

from tilewright.arith import Analyzer
from tilewright.ir import Add, BlockRealize, For, IntImm, Mul, PrimExpr, Var, substitute

UNLIMITED = 2**31 - 1


def stride(expr: PrimExpr, var: Var) -> int:
    """The coefficient of ``var`` in ``expr`` read through sums and constant products, the
    smallest where it appears several times; 0 when ``var`` is not reached that way.

    Example::

        >>> stride((x * 2 + 1) * 3 + 1, x)
        6
    """
    found = _stride(expr, var)
    return 0 if found is None else found


def _stride(expr: PrimExpr, var: Var) -> int | None:
    if expr is var:
        return 1
    if isinstance(expr, Mul):
        if isinstance(expr.a, IntImm):
            inner = _stride(expr.b, var)
            return None if inner is None else inner * expr.a.value
        if isinstance(expr.b, IntImm):
            inner = _stride(expr.a, var)
            return None if inner is None else inner * expr.b.value
        return None
    if isinstance(expr, Add):
        found = [s for s in (_stride(expr.a, var), _stride(expr.b, var)) if s is not None]
        return min(found) if found else None
    return None


def contiguous_loops(realize: BlockRealize, loops: list[For]) -> int:
    """The number of innermost ``loops`` (those enclosing the block, outermost first) that
    every read and write of the block walks contiguously: each used loop's stride in the
    flattened buffer is the inner used loop's stride times that loop's extent, the
    innermost used loop has stride 1, and loops an access does not use are free."""
    block = realize.block
    bindings = {iv.var: value for iv, value in zip(block.iter_vars, realize.iter_values)}
    analyzer = Analyzer()
    most = UNLIMITED
    for access in (*block.reads, *block.writes):
        indices = [analyzer.simplify(substitute(r.min, bindings)) for r in access.region]
        shape = access.buffer.shape
        strides = [_flat_stride(indices, shape, loop.loop_var) for loop in loops]
        most = min(most, _fusible(strides, loops))
    return most


def _flat_stride(indices: list[PrimExpr], shape: tuple[PrimExpr, ...], var: Var) -> int:
    """The stride of ``var`` in the flattened index: that of the innermost dimension using
    it, times the sizes of the dimensions inside (0: unused; -1: unknown size)."""
    inner_size = 1
    for index, size in zip(reversed(indices), reversed(shape)):
        coef = stride(index, var)
        if coef != 0:
            return coef * inner_size
        if not isinstance(size, IntImm):
            return -1  # a symbolic dimension inside: no constant stride to compare
        inner_size *= size.value
    return 0


def _fusible(strides: list[int], loops: list[For]) -> int:
    count = 0
    prev: int | None = None  # the innermost used loop seen so far
    for k in range(len(strides) - 1, -1, -1):
        s = strides[k]
        if s == 0:
            count += 1
            continue
        if prev is None:
            if s != 1 and count != 0:
                break
            count += 1
            prev = k
            continue
        extent = loops[prev].extent
        if isinstance(extent, IntImm) and s == strides[prev] * extent.value:
            count += 1
            prev = k
        else:
            break
    return count
