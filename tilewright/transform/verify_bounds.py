"""Scheduled PrimFunc → itself, or ``OutOfBoundsError`` for an access proven outside its buffer.

This is the first lowering stage, so it reads the program as scheduled: blocks with their
names, iterator bindings, ``T.where`` predicates, ``T.init()`` and ``match_buffer`` views.
Each access index, with the block iterators replaced by their bindings, is bounded by
interval arithmetic over the loop ranges (``tilewright.arith``). An index whose interval
leaves the buffer's shape is only a *candidate*: intervals over-approximate, and an ``if``
or a ``T.where`` may keep it in range. It is refused only when a concrete iteration proves
it: loop values inside their (constant, non-empty) ranges at which every enclosing condition
holds and the index is outside the shape. Accesses under symbolic loop extents, through
loaded (data-dependent) indices or under conditions that cannot be evaluated are never
refused; ``tw.build(..., bounds_check=True)`` checks those at run time
(``instrument_bounds``).

A message names the block, the access, the loops around it and the iteration that goes out
of range, and the script line when the parser recorded one (the ``span`` of the innermost
store, block or loop around the access).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tilewright.arith.const_int_bound import BoundEvaluator
from tilewright.ir import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    Call,
    Cast,
    CmpOp,
    Div,
    FloorDiv,
    FloorMod,
    For,
    IfThenElse,
    IntImm,
    IterKind,
    LetStmt,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    PrimFunc,
    Ramp,
    Select,
    Span,
    Sub,
    Var,
    Visitor,
    collect_vars,
    intrinsics,
    op,
    substitute,
)
from tilewright.transform.guarded_loads import guarded_loads

# At most this many violations are listed in one error.
_LISTED = 8


class OutOfBoundsError(IndexError):
    """An access that some iteration of its loops proves outside its buffer's shape.

    Raised by ``verify_bounds`` (the first lowering stage) before any code is generated; the
    message names the block, the buffer, the index, the range it takes and the allowed one.
    """


@dataclass(frozen=True)
class _Violation:
    block: str | None
    loops: tuple[str, ...]
    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    dim: int
    index: PrimExpr  # the index written over the loop variables
    values: tuple[int, int]  # the interval the index takes
    witness: tuple[tuple[str, int], ...]
    value: int
    write: bool
    view: Buffer | None  # the match_buffer view the access was written through
    span: Span | None  # the script line of the innermost statement around the access

    def describe(self) -> str:
        access = f"{self.buffer.name}[{', '.join(str(i) for i in self.indices)}]"
        where = f'block "{self.block}"' if self.block else "a statement"
        original = str(self.indices[self.dim])
        loop_form = str(self.index)
        index = original if original == loop_form else f"{original} = {loop_form}"
        shape = ", ".join(str(s) for s in self.buffer.shape)
        extent = self.buffer.shape[self.dim]
        assert isinstance(extent, IntImm)  # only constant extents are checked
        at = ", ".join(f"{name} = {value}" for name, value in self.witness)
        loops = f" in loops {', '.join(self.loops)}" if self.loops else ""
        if self.view is not None:
            access += f" (through match_buffer {self.view.name})"
        return (
            f"{where} {'writes' if self.write else 'reads'} {access} out of bounds{loops}: "
            f"index {self.dim} ({index}) takes values in [{self.values[0]}, {self.values[1]}] "
            f"but dimension {self.dim} of {self.buffer.name} (shape ({shape})) allows "
            f"[0, {extent.value - 1}]; at {at} it is {self.value}"
            + (f" ({self.span})" if self.span is not None else "")
        )


def verify_bounds(func: PrimFunc) -> PrimFunc:
    """Refuse ``func`` if an access is proven out of its buffer's bounds; else return it.

    Args:
        func: a function as written or scheduled (blocks allowed), or already lowered.

    Raises:
        OutOfBoundsError: naming, for each proven violation, the block, the access, the index,
            the range it takes, the range the buffer allows and an iteration that leaves it.

    Example::

        # A: T.Buffer((1024, 1024)); for i, j, k in T.grid(1024, 1024, 2048): block "C" ...
        >>> verify_bounds(func)
        OutOfBoundsError: function main: block "C" reads A[vi, vk] out of bounds in loops
        i, j, k: index 1 (vk = k) takes values in [0, 2047] but dimension 1 of A (shape
        (1024, 1024)) allows [0, 1023]; at i = 0, j = 0, k = 2047 it is 2047 (kernel.py,
        line 7: C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj])
    """
    checker = _Checker()
    checker.visit(func.body)
    found = checker.violations
    if not found:
        return func
    name = func.attr("global_symbol", "main")
    if len(found) == 1:
        raise OutOfBoundsError(f"function {name}: {found[0].describe()}")
    lines = [f"  - {v.describe()}" for v in found[:_LISTED]]
    if len(found) > _LISTED:
        lines.append(f"  ... and {len(found) - _LISTED} more")
    raise OutOfBoundsError(
        f"function {name}: {len(found)} accesses are out of bounds:\n" + "\n".join(lines)
    )


class _Checker(Visitor):
    def __init__(self) -> None:
        self.loops: list[Var] = []
        self.ranges: dict[Var, tuple[int, int]] = {}  # loops with a constant, non-empty range
        self.unproven = 0  # enclosing loops that may run zero times
        self.bindings: dict[Var, PrimExpr] = {}  # block iterator → its binding over loops
        self.guards: list[PrimExpr] = []
        self.block: str | None = None
        self.span: Span | None = None  # of the innermost statement that has one
        self.views: dict[Buffer, BufferRegion] = {}
        self.violations: list[_Violation] = []
        self.seen: set[tuple[object, ...]] = set()

    # -- statements ---------------------------------------------------------------------------

    def visit_For(self, loop: For) -> None:
        self.expr(loop.min)
        self.expr(loop.extent)
        low = self.resolve(loop.min)
        extent = self.resolve(loop.extent)
        known = isinstance(low, IntImm) and isinstance(extent, IntImm) and extent.value > 0
        if known:
            assert isinstance(low, IntImm) and isinstance(extent, IntImm)
            self.ranges[loop.loop_var] = (low.value, low.value + extent.value - 1)
        else:
            self.unproven += 1
        self.loops.append(loop.loop_var)
        saved, self.span = self.span, loop.span or self.span
        self.visit(loop.body)
        self.span = saved
        self.loops.pop()
        if known:
            del self.ranges[loop.loop_var]
        else:
            self.unproven -= 1

    def visit_BlockRealize(self, realize: BlockRealize) -> None:
        for value in realize.iter_values:
            self.expr(value)
        self.expr(realize.predicate)
        values = [self.resolve(v) for v in realize.iter_values]
        self.enter_block(realize.block, values, self.resolve(realize.predicate))

    def visit_Block(self, block: Block) -> None:
        # A block without BlockRealize (the root block): no iterators to bind.
        self.enter_block(block, [], None)

    def enter_block(self, block: Block, values: list[PrimExpr], predicate: PrimExpr | None) -> None:
        saved = (self.block, self.span, dict(self.bindings), len(self.guards), dict(self.views))
        self.block = block.name
        self.span = block.span or self.span
        for iv, value in zip(block.iter_vars, values):
            self.bindings[iv.var] = value
        if predicate is not None and not _is_true(predicate):
            self.guards.append(predicate)
        for match in block.match_buffers:
            source = match.source
            region = tuple(r.replace(min=self.resolve(r.min)) for r in source.region)
            self.views[match.buffer] = source.replace(region=region)
        if block.init is not None:
            first = [
                op.eq(self.resolve(iv.var), self.resolve(iv.dom.min))
                for iv in block.iter_vars
                if iv.kind is IterKind.REDUCE
            ]
            self.guards.extend(first)
            self.visit(block.init)
            del self.guards[len(self.guards) - len(first) :]
        self.visit(block.body)
        self.block, self.span, self.bindings, depth, self.views = saved
        del self.guards[depth:]

    def visit_IfThenElse(self, stmt: IfThenElse) -> None:
        self.expr(stmt.condition)
        cond = self.resolve(stmt.condition)
        self.guards.append(cond)
        self.visit(stmt.then_case)
        self.guards[-1] = op.logical_not(cond)
        if stmt.else_case is not None:
            self.visit(stmt.else_case)
        self.guards.pop()

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.expr(stmt.value)
        value = self.resolve(stmt.value)
        if not guarded_loads(value):
            self.bindings[stmt.var] = value
        self.visit(stmt.body)
        self.bindings.pop(stmt.var, None)

    def visit_BufferStore(self, store: BufferStore) -> None:
        saved, self.span = self.span, store.span or self.span
        for index in store.indices:
            self.expr(index)
        self.expr(store.value)
        self.access(store.buffer, store.indices, None, write=True)
        self.span = saved

    def visit_PrimExpr(self, expr: PrimExpr) -> None:
        # Expressions held by other statements (T.evaluate, attribute values).
        self.expr(expr)

    # -- accesses -----------------------------------------------------------------------------

    def resolve(self, expr: PrimExpr) -> PrimExpr:
        """``expr`` over loop variables: block iterators and let variables replaced."""
        return substitute(expr, self.bindings)

    def expr(self, expr: PrimExpr) -> None:
        for item in guarded_loads(expr):
            guard = None if item.guard is None else self.resolve(item.guard)
            self.access(item.load.buffer, item.load.indices, guard, write=False)

    def access(
        self,
        buffer: Buffer,
        indices: tuple[PrimExpr, ...],
        guard: PrimExpr | None,
        write: bool,
    ) -> None:
        if self.unproven:
            return
        guards = self.guards if guard is None else [*self.guards, guard]
        self.check(buffer, indices, guards, write)
        source = self.views.get(buffer)
        if source is not None and len(indices) <= len(source.region):
            # The same access in the coordinates of the buffer the view is a region of.
            lead = len(source.region) - len(indices)
            outer = [r.min for r in source.region[:lead]]
            inner = [op.add(r.min, i) for r, i in zip(source.region[lead:], indices)]
            self.check(source.buffer, (*outer, *inner), guards, write, view=buffer)

    def check(
        self,
        buffer: Buffer,
        indices: tuple[PrimExpr, ...],
        guards: list[PrimExpr],
        write: bool,
        view: Buffer | None = None,
    ) -> None:
        for dim, (index, extent) in enumerate(zip(indices, buffer.shape)):
            if not isinstance(extent, IntImm):
                continue
            ends = [index]
            if isinstance(index, Ramp):
                ends = [index.base, op.add(index.base, op.mul(index.stride, index.lanes - 1))]
            elif index.dtype.lanes != 1:
                continue
            for end in ends:
                loop_form = self.resolve(end)
                found = self.prove(loop_form, extent.value, guards)
                if found is None:
                    continue
                key = (self.block, buffer.name, dim, str(indices))
                if key not in self.seen:
                    self.seen.add(key)
                    values, witness, value = found
                    loops = tuple(v.name for v in self.loops)
                    self.violations.append(
                        _Violation(
                            self.block,
                            loops,
                            buffer,
                            indices,
                            dim,
                            loop_form,
                            values,
                            witness,
                            value,
                            write,
                            view,
                            self.span,
                        )
                    )
                return

    def prove(
        self, index: PrimExpr, extent: int, guards: list[PrimExpr]
    ) -> tuple[tuple[int, int], tuple[tuple[str, int], ...], int] | None:
        """The index's interval, an iteration where it leaves ``[0, extent)`` and its value
        there, when one exists that satisfies ``guards``; None otherwise."""
        used = collect_vars(index)
        if any(v not in self.ranges for v in used):
            return None  # data-dependent, symbolic or let-bound beyond our knowledge
        low, high = BoundEvaluator(self.ranges)(index)
        sides = [upward for upward, out in ((True, high >= extent), (False, low < 0)) if out]
        for upward in sides:
            env = _extreme(index, used, self.ranges, upward)
            value = None if env is None else evaluate(index, env)
            if env is None or value is None or 0 <= value < extent:
                continue
            if all(evaluate(g, env) for g in guards):
                witness = tuple((v.name, env[v]) for v in self.loops if v in env)
                return (low, high), witness, value
        return None


def _extreme(
    index: PrimExpr, used: list[Var], ranges: dict[Var, tuple[int, int]], upward: bool
) -> dict[Var, int] | None:
    """Loop values at which ``index`` is largest (``upward``) or smallest, found corner by
    corner (exact for affine indices); loops the index does not use stay at their minimum,
    which lets a guard such as ``k == 0`` (a reduction's init) hold."""
    env = {v: lo for v, (lo, _) in ranges.items()}
    for _ in range(2):
        for var in used:
            best: tuple[int, int] | None = None
            for candidate in ranges[var]:
                env[var] = candidate
                value = evaluate(index, env)
                if value is None:
                    return None
                if best is None or (value > best[0] if upward else value < best[0]):
                    best = (value, candidate)
            assert best is not None
            env[var] = best[1]
    return env


def _trunc_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


# Integer semantics of the binary nodes (C's truncating Div/Mod, TVM's floor FloorDiv/FloorMod).
_ARITH: dict[type, Callable[[int, int], int | None]] = {
    Add: lambda a, b: a + b,
    Sub: lambda a, b: a - b,
    Mul: lambda a, b: a * b,
    FloorDiv: lambda a, b: a // b if b else None,
    FloorMod: lambda a, b: a % b if b else None,
    Div: lambda a, b: _trunc_div(a, b) if b else None,
    Mod: lambda a, b: a - b * _trunc_div(a, b) if b else None,
    Min: min,
    Max: max,
    LT: lambda a, b: int(a < b),
    LE: lambda a, b: int(a <= b),
    GT: lambda a, b: int(a > b),
    GE: lambda a, b: int(a >= b),
    EQ: lambda a, b: int(a == b),
    NE: lambda a, b: int(a != b),
}


def evaluate(expr: PrimExpr, env: dict[Var, int]) -> int | None:
    """The integer value of ``expr`` with its variables set by ``env``; None when it depends
    on anything else (a load, an unbound variable, a float).

    Example: ``evaluate(i * 4 + 1, {i: 2})`` is 9.
    """
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return env.get(expr)
    rule = _ARITH.get(type(expr))
    if rule is not None and isinstance(expr, BinaryOp | CmpOp):
        a, b = evaluate(expr.a, env), evaluate(expr.b, env)
        return None if a is None or b is None else rule(a, b)
    if isinstance(expr, And | Or):
        a = evaluate(expr.a, env)
        if a is None or (isinstance(expr, And) and not a) or (isinstance(expr, Or) and a):
            return a if a is None else int(bool(a))
        b = evaluate(expr.b, env)
        return None if b is None else int(bool(b))
    if isinstance(expr, Not):
        a = evaluate(expr.a, env)
        return None if a is None else int(not a)
    if isinstance(expr, Select):
        cond = evaluate(expr.condition, env)
        if cond is None:
            return None
        return evaluate(expr.true_value if cond else expr.false_value, env)
    if isinstance(expr, Call) and intrinsics.IF_THEN_ELSE.matches(expr):
        cond = evaluate(expr.args[0], env)
        return None if cond is None else evaluate(expr.args[1 if cond else 2], env)
    if isinstance(expr, Cast) and (expr.dtype.is_int or expr.dtype.is_bool):
        return evaluate(expr.value, env)
    return None


def _is_true(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.value != 0


__all__ = ["OutOfBoundsError", "evaluate", "verify_bounds"]
