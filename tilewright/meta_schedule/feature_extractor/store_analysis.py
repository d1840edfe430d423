"""Scheduled TIR -> per-store records: the loops around each store, its arithmetic, its
buffer accesses, and the interval arithmetic that sizes the regions those accesses touch.

``per_store_feature`` turns the records into feature rows. The analysis reads the
scheduled program as it is (blocks, loops, annotations), without lowering it: a block
iterator stands for the expression it is bound to, so an index is a function of loop
variables only.

Example::

    >>> records = collect_stores(sch.mod["main"])
    >>> records[0].store.buffer.name, [loop.extent for loop in records[0].loops]
    ('C', [64, 64, 64])
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable

from tilewright.ir import intrinsics
from tilewright.ir.buffer import Buffer
from tilewright.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    Sub,
    Var,
)
from tilewright.ir.function import PrimFunc
from tilewright.ir.stmt import (
    Allocate,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)

Interval = tuple[int, int]

# Operation classes counted per store, for float and for integer operands.
OP_CLASSES = ("addsub", "mul", "divmod", "cmp", "math_func", "other_func")
_MATH = frozenset(intrinsics.UNARY_MATH + intrinsics.BINARY_MATH)
_CLASS_OF: dict[type, str] = {
    Add: "addsub",
    Sub: "addsub",
    Mul: "mul",
    Div: "divmod",
    Mod: "divmod",
    FloorDiv: "divmod",
    FloorMod: "divmod",
    Min: "cmp",
    Max: "cmp",
    EQ: "cmp",
    NE: "cmp",
    LT: "cmp",
    LE: "cmp",
    GT: "cmp",
    GE: "cmp",
}


@dataclasses.dataclass(frozen=True)
class LoopInfo:
    """One loop around a store: its variable, constant extent (1 when not constant), kind,
    thread tag and annotations."""

    var: Var
    extent: int
    kind: ForKind
    thread_tag: str
    annotations: dict[str, object]


@dataclasses.dataclass(frozen=True)
class Access:
    """One access of a store: a buffer, its indices, and whether it writes."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    is_write: bool


@dataclasses.dataclass
class StoreRecord:
    """A store with its surroundings: loops (outermost first), the enclosing blocks'
    annotations, the operation counts of one execution, and its accesses (the write
    first)."""

    store: BufferStore
    loops: tuple[LoopInfo, ...]
    block_annotations: dict[str, object]
    ops: Counter[str]
    accesses: list[Access]


@dataclasses.dataclass
class FunctionRecords:
    """What ``collect_stores`` found in one function: its stores, the buffers its blocks
    allocate, and the block-iterator bindings that indices refer to."""

    stores: list[StoreRecord]
    allocated: list[Buffer]
    bindings: dict[Var, PrimExpr]


def collect_stores(func: PrimFunc) -> FunctionRecords:
    """Every ``BufferStore`` of ``func`` (init bodies included) with its loops and accesses."""
    collector = _Collector()
    collector.visit(func.body)
    return FunctionRecords(collector.stores, collector.allocated, collector.bindings)


class _Collector:
    def __init__(self) -> None:
        self.loops: list[LoopInfo] = []
        self.block_annotations: list[dict[str, object]] = []
        self.bindings: dict[Var, PrimExpr] = {}
        # Index arithmetic of the enclosing blocks' bindings, executed with every store.
        self.binding_ops: list[Counter[str]] = []
        self.stores: list[StoreRecord] = []
        self.allocated: list[Buffer] = []

    def visit(self, stmt: Stmt | None) -> None:
        if stmt is None:
            return
        if isinstance(stmt, SeqStmt):
            for item in stmt.seq:
                self.visit(item)
        elif isinstance(stmt, For):
            extent = stmt.extent.value if isinstance(stmt.extent, IntImm) else 1
            info = LoopInfo(
                stmt.loop_var, extent, stmt.kind, stmt.thread_tag, dict(stmt.annotations)
            )
            # A loop bound to a thread axis that an outer loop already binds (a cooperative
            # fetch under threadIdx.x) runs on the same threads: below it, the outer loop
            # no longer multiplies the trip count.
            shadowed = [
                n
                for n, outer in enumerate(self.loops)
                if info.thread_tag and outer.thread_tag == info.thread_tag
            ]
            saved = [self.loops[n] for n in shadowed]
            for n in shadowed:
                self.loops[n] = dataclasses.replace(self.loops[n], extent=1)
            self.loops.append(info)
            self.visit(stmt.body)
            self.loops.pop()
            for n, outer in zip(shadowed, saved):
                self.loops[n] = outer
        elif isinstance(stmt, BlockRealize):
            self._visit_block(stmt)
        elif isinstance(stmt, BufferStore):
            self._record(stmt)
        elif isinstance(stmt, IfThenElse):
            self.visit(stmt.then_case)
            self.visit(stmt.else_case)
        elif isinstance(stmt, LetStmt):
            self.bindings[stmt.var] = stmt.value
            self.visit(stmt.body)
        elif isinstance(stmt, Allocate):
            self.allocated.append(stmt.buffer)
            self.visit(stmt.body)
        elif isinstance(stmt, AttrStmt):
            self.visit(stmt.body)
        elif isinstance(stmt, Block):
            self.allocated.extend(stmt.alloc_buffers)
            self.visit(stmt.init)
            self.visit(stmt.body)

    def _visit_block(self, realize: BlockRealize) -> None:
        block = realize.block
        ops: Counter[str] = Counter()
        for iv, value in zip(block.iter_vars, realize.iter_values):
            self.bindings[iv.var] = value
            count_ops(value, ops)
        self.allocated.extend(block.alloc_buffers)
        self.block_annotations.append(dict(block.annotations))
        self.binding_ops.append(ops)
        self.visit(block.init)
        self.visit(block.body)
        self.binding_ops.pop()
        self.block_annotations.pop()

    def _record(self, store: BufferStore) -> None:
        ops: Counter[str] = Counter()
        count_ops(store.value, ops)
        for index in store.indices:
            count_ops(index, ops)
        for block_ops in self.binding_ops:
            ops.update(block_ops)
        accesses = [Access(store.buffer, store.indices, True)]
        for load in _loads(store.value):
            accesses.append(Access(load.buffer, load.indices, False))
        annotations: dict[str, object] = {}
        for block_annotations in self.block_annotations:
            annotations.update(block_annotations)
        self.stores.append(StoreRecord(store, tuple(self.loops), annotations, ops, accesses))


def _loads(expr: PrimExpr) -> list[BufferLoad]:
    found: list[BufferLoad] = []

    def walk(node: object) -> None:
        if isinstance(node, BufferLoad):
            found.append(node)
        if isinstance(node, PrimExpr):
            for child in node.children():
                walk(child)

    walk(expr)
    return found


def count_ops(expr: PrimExpr, counts: Counter[str]) -> None:
    """Add the operations of ``expr`` to ``counts``, keyed ``float_<class>``,
    ``int_<class>``, ``bool_op`` or ``select_op``, each weighted by its lanes."""
    kind = type(expr)
    op_class = _CLASS_OF.get(kind)
    if op_class is not None:
        operand = expr.a.dtype  # type: ignore[attr-defined]
        prefix = "float_" if operand.is_float else "int_"
        counts[prefix + op_class] += operand.lanes
    elif kind in (And, Or, Not):
        counts["bool_op"] += expr.dtype.lanes
    elif kind is Select:
        counts["select_op"] += expr.dtype.lanes
    elif kind is Call:
        assert isinstance(expr, Call)
        name = expr.op.removeprefix("tir.")
        if name == "if_then_else":
            counts["select_op"] += expr.dtype.lanes
        else:
            prefix = "float_" if expr.dtype.is_float else "int_"
            counts[prefix + ("math_func" if name in _MATH else "other_func")] += expr.dtype.lanes
    for child in expr.children():
        if isinstance(child, PrimExpr):
            count_ops(child, counts)


class IntervalEvaluator:
    """Bounds of index expressions over boxes of loop-variable values.

    ``ranges`` maps each loop variable to its ``(low, high)`` (inclusive); a block
    iterator is replaced by the bounds of the expression it is bound to; any other
    variable counts as 0. Divisions and remainders by a positive constant are exact on
    intervals, which keeps fused-then-split indices (``f // 32``, ``f % 32``) tight.
    """

    def __init__(self, bindings: dict[Var, PrimExpr]) -> None:
        self.bindings = bindings
        self._vars_memo: dict[Var, frozenset[Var]] = {}

    def bounds(self, expr: PrimExpr, ranges: dict[Var, Interval]) -> Interval:
        memo: dict[Var, Interval] = {}
        return self._eval(expr, ranges, memo)

    def _eval(
        self, e: PrimExpr, ranges: dict[Var, Interval], memo: dict[Var, Interval]
    ) -> Interval:
        kind = type(e)
        if kind is Var:
            assert isinstance(e, Var)
            hit = ranges.get(e)
            if hit is not None:
                return hit
            bound = self.bindings.get(e)
            if bound is None:
                return (0, 0)
            if e not in memo:
                memo[e] = self._eval(bound, ranges, memo)
            return memo[e]
        if kind is IntImm:
            value = e.value  # type: ignore[attr-defined]
            return (value, value)
        handler = _HANDLERS.get(kind)
        if handler is None:
            return (0, 0)
        return handler(self, e, ranges, memo)

    def loop_vars(self, expr: PrimExpr) -> frozenset[Var]:
        """The variables ``expr`` depends on, through block-iterator bindings."""
        found: set[Var] = set()
        self._collect(expr, found)
        return frozenset(found)

    def _collect(self, e: object, found: set[Var]) -> None:
        if isinstance(e, Var):
            bound = self.bindings.get(e)
            if bound is None:
                found.add(e)
                return
            hit = self._vars_memo.get(e)
            if hit is None:
                inner: set[Var] = set()
                self._collect(bound, inner)
                hit = self._vars_memo[e] = frozenset(inner)
            found.update(hit)
        elif isinstance(e, PrimExpr):
            for child in e.children():
                self._collect(child, found)


_Ranges = dict[Var, Interval]
_Handler = Callable[[IntervalEvaluator, PrimExpr, _Ranges, _Ranges], Interval]


def _binary(fn: Callable[[Interval, Interval], Interval]) -> _Handler:
    def handle(
        ev: IntervalEvaluator, e: PrimExpr, ranges: dict[Var, Interval], memo: dict[Var, Interval]
    ) -> Interval:
        a = ev._eval(e.a, ranges, memo)  # type: ignore[attr-defined]
        b = ev._eval(e.b, ranges, memo)  # type: ignore[attr-defined]
        return fn(a, b)

    return handle


def _mul(a: Interval, b: Interval) -> Interval:
    products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return (min(products), max(products))


def _div(a: Interval, b: Interval) -> Interval:
    if b[0] == b[1] and b[0] > 0:
        return (a[0] // b[0], a[1] // b[0])
    return a


def _mod(a: Interval, b: Interval) -> Interval:
    if b[0] == b[1] and b[0] > 0:
        d = b[0]
        if a[0] // d == a[1] // d:
            return (a[0] % d, a[1] % d)
        return (0, d - 1)
    return (0, max(abs(b[0]), abs(b[1])))


def _unary_first(field: str) -> _Handler:
    def handle(
        ev: IntervalEvaluator, e: PrimExpr, ranges: dict[Var, Interval], memo: dict[Var, Interval]
    ) -> Interval:
        return ev._eval(getattr(e, field), ranges, memo)

    return handle


def _select(
    ev: IntervalEvaluator, e: PrimExpr, ranges: dict[Var, Interval], memo: dict[Var, Interval]
) -> Interval:
    a = ev._eval(e.true_value, ranges, memo)  # type: ignore[attr-defined]
    b = ev._eval(e.false_value, ranges, memo)  # type: ignore[attr-defined]
    return (min(a[0], b[0]), max(a[1], b[1]))


def _ramp(
    ev: IntervalEvaluator, e: PrimExpr, ranges: dict[Var, Interval], memo: dict[Var, Interval]
) -> Interval:
    assert isinstance(e, Ramp)
    base = ev._eval(e.base, ranges, memo)
    stride = ev._eval(e.stride, ranges, memo)
    return (base[0], base[1]) if stride == (0, 0) else _add(base, _mul(stride, (0, e.lanes - 1)))


def _call(
    ev: IntervalEvaluator, e: PrimExpr, ranges: dict[Var, Interval], memo: dict[Var, Interval]
) -> Interval:
    assert isinstance(e, Call)
    if e.op.removeprefix("tir.") == "if_then_else" and len(e.args) == 3:
        a = ev._eval(e.args[1], ranges, memo)
        b = ev._eval(e.args[2], ranges, memo)
        return (min(a[0], b[0]), max(a[1], b[1]))
    return (0, 0)


def _float(
    ev: IntervalEvaluator, e: PrimExpr, ranges: dict[Var, Interval], memo: dict[Var, Interval]
) -> Interval:
    value = int(e.value)  # type: ignore[attr-defined]
    return (value, value)


def _add(a: Interval, b: Interval) -> Interval:
    return (a[0] + b[0], a[1] + b[1])


_HANDLERS: dict[type, _Handler] = {
    Add: _binary(_add),
    Sub: _binary(lambda a, b: (a[0] - b[1], a[1] - b[0])),
    Mul: _binary(_mul),
    FloorDiv: _binary(_div),
    Div: _binary(_div),
    FloorMod: _binary(_mod),
    Mod: _binary(_mod),
    Min: _binary(lambda a, b: (min(a[0], b[0]), min(a[1], b[1]))),
    Max: _binary(lambda a, b: (max(a[0], b[0]), max(a[1], b[1]))),
    Cast: _unary_first("value"),
    Broadcast: _unary_first("value"),
    Let: _unary_first("body"),
    Select: _select,
    Ramp: _ramp,
    Call: _call,
    FloatImm: _float,
}
