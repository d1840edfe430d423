"""Vector expression + lane variable → the scalar expression computing that one lane.

Printers without (or not choosing) native vector types write a vector statement as a loop
over its lanes; this rewrite gives the loop body. ``Ramp(b, s, n)`` becomes ``b + lane * s``,
``Broadcast(v, n)`` becomes ``v``, ``Shuffle`` a choice among its vectors' lanes, and every
other vector node takes its scalar form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar, overload

from tilewright.ir import (
    Broadcast,
    Buffer,
    BufferLoad,
    Call,
    Cast,
    IntImm,
    Let,
    Mutator,
    Node,
    PrimExpr,
    Ramp,
    Shuffle,
    Stmt,
    Var,
    op,
)

_N = TypeVar("_N", bound=Node)


def lane_of(expr: PrimExpr, lane: Var, arrays: Mapping[Var, Buffer] | None = None) -> PrimExpr:
    """The scalar expression for lane ``lane`` of the vector expression ``expr``.

    Arguments:
        expr: a vector (or scalar) expression; scalar subexpressions are kept as they are.
        lane: an int32 variable running over the lanes.
        arrays: vector variables bound by a vector ``LetStmt``, each stored in a local array
            of its lanes; lane ``lane`` of such a variable is a load from its array.

    Example::

        >>> lane_of(A.load([Ramp(i * 4, 1, 4)]) + Broadcast(x, 4), l)   # A[i * 4 + l] + x
    """
    return _Lane(lane, arrays or {}).visit(expr)


class _Lane(Mutator):
    def __init__(self, lane: PrimExpr, arrays: Mapping[Var, Buffer]) -> None:
        super().__init__()
        self.lane = lane
        self.arrays = arrays
        self.scalars: dict[Var, Var] = {}

    @overload
    def visit(self, value: PrimExpr) -> PrimExpr: ...
    @overload
    def visit(self, value: Stmt) -> Stmt: ...
    @overload
    def visit(self, value: _N) -> _N: ...
    @overload
    def visit(self, value: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]: ...
    @overload
    def visit(self, value: tuple[Stmt, ...]) -> tuple[Stmt, ...]: ...
    @overload
    def visit(self, value: tuple[_N, ...]) -> tuple[_N, ...]: ...
    @overload
    def visit(self, value: object) -> object: ...
    def visit(self, value: object) -> object:
        # Scalar subtrees are loop invariant: leave them untouched (and unvisited).
        if isinstance(value, PrimExpr) and not isinstance(value, Var) and value.dtype.lanes == 1:
            return value
        return super().visit(value)

    def visit_Var(self, var: Var) -> PrimExpr:
        if var in self.arrays:
            return BufferLoad(self.arrays[var], (self.lane,))
        return self.scalars.get(var, var)

    def visit_Ramp(self, ramp: Ramp) -> PrimExpr:
        lane = op.cast(self.lane, ramp.base.dtype)
        step = lane if _is_const(ramp.stride, 1) else op.mul(lane, ramp.stride)
        return step if _is_const(ramp.base, 0) else op.add(ramp.base, step)

    def visit_Broadcast(self, node: Broadcast) -> PrimExpr:
        return node.value

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        return BufferLoad(load.buffer, tuple(self.visit(i) for i in load.indices))

    def visit_Cast(self, node: Cast) -> PrimExpr:
        return Cast(node.dtype.element, self.visit(node.value))

    def visit_Call(self, node: Call) -> PrimExpr:
        args = tuple(self.visit(a) for a in node.args)
        return Call(node.dtype.element, node.op, args)

    def visit_Shuffle(self, node: Shuffle) -> PrimExpr:
        # Lane k is element indices[k] of the concatenated vectors: a choice on the lane.
        elements = [(v, j) for v in node.vectors for j in range(v.dtype.lanes)]
        result: PrimExpr | None = None
        for k in reversed(range(len(node.indices))):
            index = node.indices[k]
            if not isinstance(index, IntImm) or not 0 <= index.value < len(elements):
                raise ValueError(f"shuffle index {index!r} is not a lane of its vectors")
            vector, j = elements[index.value]
            picked = _Lane(IntImm(j, self.lane.dtype), self.arrays).visit(vector)
            result = picked if result is None else op.select(op.eq(self.lane, k), picked, result)
        assert result is not None
        return result

    def visit_Let(self, node: Let) -> PrimExpr:
        value = self.visit(node.value)
        if node.var.dtype.lanes == 1:
            return Let(node.var, value, self.visit(node.body))
        scalar = Var(node.var.name, node.var.dtype.element)
        self.scalars[node.var] = scalar
        return Let(scalar, value, self.visit(node.body))


def _is_const(e: PrimExpr, value: int) -> bool:
    return isinstance(e, IntImm) and e.value == value
