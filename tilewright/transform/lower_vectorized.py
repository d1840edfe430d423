"""Flat loop nest with ``T.vectorized`` loops → vector stores of ``Ramp``/``Broadcast`` expressions.

A vectorized loop whose body is one store, with every index either unchanged by the loop
variable or moving by exactly one element per lane, becomes that store on ``lanes`` lanes:
``A[Ramp(base, 1, n)] = B[Ramp(base', 1, n)] + Broadcast(x, n)``; a guard around the store
stays a scalar ``if`` when it holds for all lanes or none. Anything else (a nest, a condition
that splits the lanes, a gather, a store that does not move with the lane) becomes a serial
loop with the same body. ``is_aligned_ramp`` tells code generation whether the ramp's first
element sits on a multiple of the lane count, so a native vector type (``float4``) is safe.
"""

from __future__ import annotations

from math import gcd

from tilewright.arith import Analyzer, to_form
from tilewright.ir import (
    GE,
    LT,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    BufferStore,
    Call,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    Mul,
    Mutator,
    PrimExpr,
    PrimFunc,
    Ramp,
    Stmt,
    StringImm,
    Sub,
    Var,
    collect_vars,
    intrinsics,
    op,
    substitute,
)

# Elementwise intrinsics that take vector operands lane by lane.
_LANEWISE_CALLS = frozenset(intrinsics.UNARY_MATH + intrinsics.BINARY_MATH)


def lower_vectorized(func: PrimFunc, *, keep_loops: bool = False) -> PrimFunc:
    """Turn each ``T.vectorized`` loop into one vector store, or a serial loop when it cannot be.

    Args:
        func: a function after ``flatten_buffers`` (one index per access) and ``simplify``.
        keep_loops: leave a loop that cannot become one store vectorized rather than serial
            (the C target prints it for the C compiler to vectorize).

    Example::

        # before                                   # after
        for v in T.vectorized(4):                  A_shared[T.Ramp(t * 4, 1, 4)] =
            A_shared[t * 4 + v] = A[b * 256 + t * 4 + v]     A[T.Ramp(b * 256 + t * 4, 1, 4)]
    """
    return func.with_body(_Vectorizer(keep_loops).visit(func.body))


def known_divisor(expr: PrimExpr) -> int:
    """The largest integer that provably divides ``expr`` whatever its variables' values.

    Example::

        >>> known_divisor(f0 * 256 + (f1 * 4) % 8)   # 4
    """
    if isinstance(expr, IntImm):
        return abs(expr.value)
    if isinstance(expr, Add | Sub):
        return gcd(known_divisor(expr.a), known_divisor(expr.b))
    if isinstance(expr, Mul):
        return known_divisor(expr.a) * known_divisor(expr.b)
    if isinstance(expr, FloorMod) and isinstance(expr.b, IntImm):
        return gcd(known_divisor(expr.a), expr.b.value)
    if isinstance(expr, FloorDiv) and isinstance(expr.b, IntImm) and expr.b.value > 0:
        inner = known_divisor(expr.a)
        return inner // expr.b.value if inner % expr.b.value == 0 else 1
    return 1


def is_aligned_ramp(index: PrimExpr) -> bool:
    """True for ``Ramp(base, 1, n)`` whose ``base`` is provably a multiple of ``n``.

    Such an access reads or writes ``n`` consecutive elements starting on an ``n``-element
    boundary of the buffer, so a vector type of ``n`` lanes is aligned whenever the buffer's
    storage is (device allocations and shared arrays are aligned to 16 bytes).

    Example::

        >>> is_aligned_ramp(Ramp(t * 4, 1, 4))      # True
        >>> is_aligned_ramp(Ramp(t * 4 + 1, 1, 4))  # False
    """
    if not isinstance(index, Ramp) or not (isinstance(index.stride, IntImm)):
        return False
    if index.stride.value != 1:
        return False
    return known_divisor(index.base) % index.lanes == 0


class _NotVectorizable(Exception):
    pass


def _uniform_condition(cond: PrimExpr, lane: Var, lanes: int) -> PrimExpr | None:
    """``cond`` with the lane set to 0, when it holds for all lanes or for none; else None.

    ``x + lane < c`` (and ``>=``) is all-or-nothing when ``x - c`` is a multiple of the lane
    count: the predicate of a cooperative fetch whose tail is a whole number of vectors.
    """
    parts = [cond]
    while parts:
        part = parts.pop()
        if isinstance(part, And):
            parts += [part.a, part.b]
            continue
        if lane in collect_vars(part):
            if not isinstance(part, LT | GE):
                return None
            try:
                base, stride = _lane_linear(op.sub(part.a, part.b), lane, lanes)
            except _NotVectorizable:
                return None
            if stride != 1 or known_divisor(base) % lanes != 0:
                return None
    return substitute(cond, {lane: IntImm(0, lane.dtype)})


def _lane_linear(expr: PrimExpr, lane: Var, lanes: int) -> tuple[PrimExpr, int]:
    """``expr`` as ``base + stride * lane`` for ``lane`` in ``[0, lanes)``, else raise."""
    if lane not in collect_vars(expr):
        return expr, 0
    if expr is lane:
        return IntImm(0, lane.dtype), 1
    if isinstance(expr, Add | Sub):
        a, sa = _lane_linear(expr.a, lane, lanes)
        b, sb = _lane_linear(expr.b, lane, lanes)
        if isinstance(expr, Add):
            return op.add(a, b), sa + sb
        return op.sub(a, b), sa - sb
    if isinstance(expr, Mul):
        for x, y in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(y, IntImm):
                base, stride = _lane_linear(x, lane, lanes)
                return op.mul(base, y), stride * y.value
    if isinstance(expr, FloorDiv | FloorMod) and isinstance(expr.b, IntImm) and expr.b.value > 0:
        base, stride = _lane_linear(expr.a, lane, lanes)
        divisor = expr.b.value
        if stride % divisor == 0:
            if isinstance(expr, FloorDiv):
                return op.floordiv(base, divisor), stride // divisor
            return op.floormod(base, divisor), 0
        # base is a multiple of g (which divides the divisor) and the lane adds less than g:
        # the lanes stay inside one block of `divisor` elements.
        form = to_form(base)
        g = divisor
        for _, _, coef in form.items():
            g = gcd(g, coef)
        g = gcd(g, form.const)
        if 0 <= stride * (lanes - 1) < g:
            if isinstance(expr, FloorDiv):
                return op.floordiv(base, divisor), 0
            return op.floormod(base, divisor), stride
    raise _NotVectorizable


class _Vectorizer(Mutator):
    def __init__(self, keep_loops: bool) -> None:
        super().__init__()
        self.analyzer = Analyzer()
        self.keep_loops = keep_loops

    def visit_For(self, loop: For) -> Stmt:
        body: Stmt = self.visit(loop.body)
        if loop.kind is not ForKind.VECTORIZED:
            return loop.replace(body=body)
        serial = loop.replace(body=body, kind=loop.kind if self.keep_loops else ForKind.SERIAL)
        if not isinstance(loop.extent, IntImm) or loop.extent.value < 2:
            return serial
        lanes = loop.extent.value
        if not (isinstance(loop.min, IntImm) and loop.min.value == 0):
            # The lane runs over [0, lanes): shift a loop starting elsewhere.
            body = substitute(body, {loop.loop_var: loop.min + loop.loop_var})
        guard = None
        if isinstance(body, IfThenElse) and body.else_case is None:
            guard = _uniform_condition(body.condition, loop.loop_var, lanes)
            if guard is None:
                return serial
            body = body.then_case
        if not isinstance(body, BufferStore):
            return serial
        try:
            store = self.vector_store(body, loop.loop_var, lanes)
        except _NotVectorizable:
            return serial
        return store if guard is None else IfThenElse(self.analyzer.simplify(guard), store)

    def vector_store(self, store: BufferStore, lane: Var, lanes: int) -> Stmt:
        if len(store.indices) != 1:
            raise _NotVectorizable
        base, stride = _lane_linear(store.indices[0], lane, lanes)
        if stride != 1:
            raise _NotVectorizable
        value = self.vector_value(store.value, lane, lanes)
        return BufferStore(store.buffer, value, (self.ramp(base, lanes),))

    def ramp(self, base: PrimExpr, lanes: int) -> Ramp:
        return Ramp(self.analyzer.simplify(base), IntImm(1, base.dtype), lanes)

    def vector_value(self, expr: PrimExpr, lane: Var, lanes: int) -> PrimExpr:
        if lane not in collect_vars(expr):
            return Broadcast(expr, lanes)
        if isinstance(expr, BufferLoad):
            if len(expr.indices) != 1 or any(lane in collect_vars(i) for i in expr.buffer.shape):
                raise _NotVectorizable
            base, stride = _lane_linear(expr.indices[0], lane, lanes)
            if stride == 0:
                return Broadcast(BufferLoad(expr.buffer, (self.analyzer.simplify(base),)), lanes)
            if stride != 1:
                raise _NotVectorizable
            return BufferLoad(expr.buffer, (self.ramp(base, lanes),))
        if expr is lane:
            return Ramp(IntImm(0, lane.dtype), IntImm(1, lane.dtype), lanes)
        if isinstance(expr, BinaryOp):
            a = self.vector_value(expr.a, lane, lanes)
            b = self.vector_value(expr.b, lane, lanes)
            return type(expr)(a, b)
        if isinstance(expr, Cast):
            inner = self.vector_value(expr.value, lane, lanes)
            return Cast(expr.dtype.with_lanes(lanes), inner)
        if isinstance(expr, Call) and expr.op in _LANEWISE_CALLS:
            args = tuple(
                a if isinstance(a, StringImm) else self.vector_value(a, lane, lanes)
                for a in expr.args
            )
            return Call(expr.dtype.with_lanes(lanes), expr.op, args)
        if isinstance(expr, FloatImm | IntImm):
            return Broadcast(expr, lanes)
        raise _NotVectorizable
