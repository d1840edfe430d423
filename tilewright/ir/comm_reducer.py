"""Commutative reducers: a reduction's combiner and identity, and how a block's update shows one.

A ``CommReducer`` (TVM's ``comm_reducer``) combines two partial results of a reduction:
``result`` is written over the variables ``lhs`` (one partial) and ``rhs`` (the other), and
``identity`` is the value that changes nothing (0 for a sum, -inf for a max). A reducer of
several values (an argmax is a pair) has one variable of each side, one result and one
identity per value. ``match_update`` recognises the reducers of ``+``, ``*``, ``max`` and
``min`` in a reduction block's ``B[i] = B[i] + value`` and its init.

Example::

    >>> sum_f32 = standard_reducer("sum", float32)       # lambda x, y: x + y, [0.0]
    >>> sum_f32.combine((a,), (b,))                       # (a + b,)
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.ir import op
from tilewright.ir.dtype import DataType
from tilewright.ir.expr import Add, BinaryOp, BufferLoad, Max, Min, Mul, PrimExpr, Var
from tilewright.ir.functor import collect_vars, post_order_visit, substitute
from tilewright.ir.node import Node, node
from tilewright.ir.stmt import BufferStore, Stmt
from tilewright.ir.structural import structural_equal

# The operators a reduction block's update may combine with, by name.
OPERATORS: dict[str, type[BinaryOp]] = {"sum": Add, "prod": Mul, "max": Max, "min": Min}


@node
class CommReducer(Node):
    """``lambda *lhs, *rhs: result`` with ``identity``: a commutative, associative combiner."""

    lhs: tuple[Var, ...]
    rhs: tuple[Var, ...]
    result: tuple[PrimExpr, ...]
    identity: tuple[PrimExpr, ...]

    def combine(self, a: tuple[PrimExpr, ...], b: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        """The combined values of partials ``a`` and ``b`` (one expression per value)."""
        mapping: dict[Var, PrimExpr] = dict(zip(self.lhs, a, strict=True))
        mapping.update(zip(self.rhs, b, strict=True))
        return tuple(substitute(r, mapping) for r in self.result)

    @property
    def dtypes(self) -> tuple[DataType, ...]:
        return tuple(v.dtype for v in self.lhs)


def identity_of(kind: str, dt: DataType) -> PrimExpr:
    """The neutral element of ``kind`` (sum, prod, max, min) in ``dt``.

    Example: ``identity_of("max", float32)`` is ``-inf``; for ``int8`` it is ``-128``.
    """
    if kind == "sum":
        return op.const(0, dt)
    if kind == "prod":
        return op.const(1, dt)
    if dt.is_float8 and "fn" in dt.code:  # no infinities: the finite extremes
        return op.dtype_min(dt) if kind == "max" else op.dtype_max(dt)
    if dt.is_float:
        return op.const(float("-inf") if kind == "max" else float("inf"), dt)
    if dt.is_uint:
        return op.const(0 if kind == "max" else 2**dt.bits - 1, dt)
    if dt.is_int:
        low, high = -(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1
        return op.const(low if kind == "max" else high, dt)
    raise TypeError(f"no {kind} identity for {dt}")


def standard_reducer(kind: str, dt: DataType) -> CommReducer:
    """The reducer of ``kind`` (sum, prod, max, min) on one value of dtype ``dt``."""
    x, y = Var("x", dt), Var("y", dt)
    return CommReducer((x,), (y,), (OPERATORS[kind](x, y),), (identity_of(kind, dt),))


@dataclass(frozen=True)
class MatchedUpdate:
    """A reduction block's update seen as ``store.buffer[store.indices] = combine(it, value)``.

    ``kind`` names the operator, ``value`` is what each reduction step brings in, ``init``
    the value the block's init stores (not necessarily the identity).
    """

    kind: str
    reducer: CommReducer
    store: BufferStore
    value: PrimExpr
    init: PrimExpr


class ReducerMismatch(ValueError):
    """A reduction block's init and update are not one recognised reducer."""


def match_update(init: Stmt, body: Stmt) -> MatchedUpdate:
    """Recognise ``B[i] = B[i] op value`` (op one of ``+``, ``*``, ``max``, ``min``, either
    operand order) with init ``B[i] = v``, where ``value`` and ``v`` do not read ``B``.

    Raises ``ReducerMismatch`` saying which part does not fit.

    Example::

        >>> match_update(block.init, block.body).kind     # B[vi] = T.max(B[vi], A[vi, vk])
        'max'
    """
    if not isinstance(body, BufferStore):
        raise ReducerMismatch(
            f"the update must be one store `B[...] = B[...] op value`, found a "
            f"{type(body).__name__}"
        )
    if not isinstance(init, BufferStore):
        raise ReducerMismatch(
            f"the init must be one store to the updated element, found a {type(init).__name__}"
        )
    if init.buffer is not body.buffer or not _same_indices(init.indices, body.indices):
        raise ReducerMismatch(
            f"the init stores {init.buffer.name}{list(init.indices)} but the update stores "
            f"{body.buffer.name}{list(body.indices)}"
        )
    if _reads(init.value, body):
        raise ReducerMismatch(f"the init value reads {body.buffer.name}")
    kind, value = split_update(body)
    dt = body.value.dtype
    reducer = standard_reducer(kind, dt)
    return MatchedUpdate(kind, reducer, body, value, op.cast(init.value, dt))


def split_update(store: BufferStore) -> tuple[str, PrimExpr]:
    """``B[i] = B[i] op value`` (either operand order) → the op's name and ``value``;
    ``ReducerMismatch`` when the store is no such update (rfactor shares this recogniser).

    Example: ``split_update(C[i] = C[i] + A[i, k])`` is ``("sum", A[i, k])``.
    """
    e = store.value
    kinds = {cls: name for name, cls in OPERATORS.items()}
    if type(e) in kinds:
        assert isinstance(e, BinaryOp)
        for own, other in ((e.a, e.b), (e.b, e.a)):
            if _is_self(own, store) and not _reads(other, store):
                return kinds[type(e)], other
    raise ReducerMismatch(
        f"the update `{store.buffer.name}[...] = {store.value}` is not "
        f"`{store.buffer.name}[...] op value` with op one of +, *, max, min and a value that "
        f"does not read {store.buffer.name}"
    )


def _is_self(e: PrimExpr, store: BufferStore) -> bool:
    return (
        isinstance(e, BufferLoad)
        and e.buffer is store.buffer
        and _same_indices(e.indices, store.indices)
    )


def _same_indices(a: tuple[PrimExpr, ...], b: tuple[PrimExpr, ...]) -> bool:
    if not structural_equal(a, b):
        return False
    return all(x is y for x, y in zip(collect_vars(a), collect_vars(b), strict=True))


def _reads(e: PrimExpr, store: BufferStore) -> bool:
    found = [False]

    def visit(n: object) -> None:
        if isinstance(n, BufferLoad) and n.buffer.data is store.buffer.data:
            found[0] = True

    post_order_visit(e, visit)
    return found[0]
