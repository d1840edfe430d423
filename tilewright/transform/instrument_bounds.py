"""Lowered PrimFunc → the same function with its buffer accesses checked at run time.

``tw.build(..., bounds_check=True)`` adds this stage. Every load and store whose index the
analyzer cannot prove inside ``[0, extent)`` of its (flat) buffer gets a check; a statement
with checks runs only when they pass::

    # before                        # after
    B[i] = A[idx[i]]                if idx[i] >= 0 and idx[i] < 1024:
                                        B[i] = A[idx[i]]
                                    else:
                                        bounds_errors[0] = T.int64(1)
                                        bounds_errors[1] = T.Cast("int64", idx[i])

A failing check skips its statement (so nothing is read or written out of bounds) and
records the offending index in a hidden ``int64`` buffer, the function's last parameter:
two elements per check, ``errors[2c]`` set to 1 and ``errors[2c + 1]`` to the index. Threads
that race on a record store whole 64-bit values, so the record always holds one of their
indices. The runtime allocates the buffer, zeroes it, and raises ``BoundsError`` after the
call when a record is set (``tilewright.runtime.bounds``).

Checks run in evaluation order, nested so that a check's own loads (``idx[i]`` above) were
checked first; a load guarded by ``if_then_else``/``&&``/``||`` is checked under its guard
(``guarded_loads``). A statement containing a barrier-like call (every thread must reach
it), or a loop, ``if`` or ``let`` around one, is not skipped: its loads read element 0
instead of an out-of-range one, and only a store is skipped.

The function's ``tw.bounds_checks`` attribute lists the checks, in record order, as tuples
``(buffer, kernel, index, extent, shape)``: the buffer's name, the kernel it runs in (empty
on the CPU: the function itself), the index expression and the element count as text, and
the buffer's N-d shape as integers when it is a compact parameter (for messages). Code
generation copies it into the ``FuncSignature``.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from tilewright.arith import Analyzer
from tilewright.ir import (
    Broadcast,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    LetStmt,
    Mutator,
    Node,
    PrimExpr,
    PrimFunc,
    Ramp,
    Range,
    Stmt,
    Var,
    decl_buffer,
    intrinsics,
    op,
    post_order_visit,
    seq,
)
from tilewright.ir.dtype import handle, int32, int64
from tilewright.ir.intrinsics import Effect
from tilewright.transform.device_kernels import function_name, kernel_name
from tilewright.transform.guarded_loads import guarded_loads

CHECKS_ATTR = "tw.bounds_checks"
ERRORS_NAME = "bounds_errors"

# (buffer, kernel, index text, extent text, N-d shape or ()) — see the module docstring.
CheckRecord = tuple[str, str, str, str, tuple[int, ...]]


def instrument_bounds(func: PrimFunc, *, elide_proven: bool = True) -> PrimFunc:
    """Check every access of ``func`` that is not proven in range, at run time.

    Args:
        func: a lowered function (flat buffers, one index per access), before the GPU
            host/device split: checks in kernels are named after the kernel they will be in.
        elide_proven: skip checks the analyzer proves always pass (loop ranges and enclosing
            conditions); ``False`` checks every access (to measure what checks cost).

    Returns:
        ``func`` unchanged when nothing needs a check; else ``func`` with the checks, the
        hidden error buffer as its last parameter and the ``tw.bounds_checks`` attribute.

    Example::

        >>> checked = instrument_bounds(tw.lower(gather, "c")["main"])
        >>> checked.attr("tw.bounds_checks")
        (('A', '', 'idx[i]', '1024', (1024,)),)
    """
    nd_shapes = {buf.data: _compact_shape(buf) for _, buf in func.buffer_map}
    placeholder = decl_buffer((0,), int64, ERRORS_NAME)
    writer = _Instrumenter(function_name(func, ""), elide_proven, placeholder, nd_shapes)
    body = writer.visit(func.body)
    if not writer.records:
        return func
    errors = placeholder.replace(shape=(IntImm(2 * len(writer.records), int32),))
    swap = Mutator()
    swap.buffer_map[placeholder] = errors
    body = swap.visit(body)
    param = Var(ERRORS_NAME, handle)
    return func.replace(
        body=body,
        params=(*func.params, param),
        buffer_map=(*func.buffer_map, (param, errors)),
    ).with_attr(CHECKS_ATTR, tuple(writer.records))


@dataclass(frozen=True)
class _Check:
    number: int
    passes: PrimExpr  # true when the access is in range (or its guard is false)
    index: PrimExpr  # the value recorded when it fails


def _compact_shape(buffer: Buffer) -> tuple[int, ...]:
    if buffer.strides or not all(isinstance(d, IntImm) for d in buffer.shape):
        return ()
    offset = buffer.elem_offset
    if not (isinstance(offset, IntImm) and offset.value == 0):
        return ()
    return tuple(d.value for d in buffer.shape if isinstance(d, IntImm))


def _has_barrier(tree: Node) -> bool:
    found = False

    def visit(node: object) -> None:
        nonlocal found
        if isinstance(node, Call):
            intrinsic = intrinsics.lookup_or_none(node.op)
            found = found or (intrinsic is not None and intrinsic.effect is Effect.BARRIER)

    post_order_visit(tree, visit)
    return found


def _int(value: int, like: PrimExpr) -> PrimExpr:
    return IntImm(value, like.dtype.element)


class _Instrumenter(Mutator):
    def __init__(
        self,
        function: str,
        elide_proven: bool,
        errors: Buffer,
        nd_shapes: dict[Var, tuple[int, ...]],
    ) -> None:
        super().__init__()
        self.function = function
        self.elide_proven = elide_proven
        self.errors = errors
        self.nd_shapes = nd_shapes
        self.analyzer = Analyzer()
        self.kernel = ""
        self.kernels = 0
        self.records: list[CheckRecord] = []

    # -- statements ---------------------------------------------------------------------------

    def visit_For(self, loop: For) -> Stmt:
        checks = self.checks_of((loop.min, loop.extent))
        outer = self.kernel
        if loop.kind is ForKind.THREAD_BINDING and not self.kernel:
            # The same numbering as split_host_device: kernels in execution order.
            self.kernel = kernel_name(self.function, self.kernels)
            self.kernels += 1
        self.analyzer.bind(loop.loop_var, Range(loop.min, loop.extent))
        body = self.visit(loop.body)
        self.kernel = outer
        if checks and _has_barrier(body):
            clamp = _Clamp(self)
            kept = loop.replace(min=clamp.visit(loop.min), extent=clamp.visit(loop.extent))
            return self.recorded(checks, kept.replace(body=body))
        return self.guarded(loop.replace(body=body), checks)

    def visit_IfThenElse(self, stmt: IfThenElse) -> Stmt:
        checks = self.checks_of((stmt.condition,))
        with self.analyzer.constraint_scope(stmt.condition):
            then = self.visit(stmt.then_case)
        other = None
        if stmt.else_case is not None:
            with self.analyzer.constraint_scope(op.logical_not(stmt.condition)):
                other = self.visit(stmt.else_case)
        kept = stmt.replace(then_case=then, else_case=other)
        if checks and _has_barrier(kept):
            return self.recorded(checks, kept.replace(condition=_Clamp(self).visit(stmt.condition)))
        return self.guarded(kept, checks)

    def visit_LetStmt(self, stmt: LetStmt) -> Stmt:
        checks = self.checks_of((stmt.value,))
        if not guarded_loads(stmt.value):
            self.analyzer.bind(stmt.var, stmt.value)
        body = self.visit(stmt.body)
        if checks and _has_barrier(body):
            value = _Clamp(self).visit(stmt.value)
            return self.recorded(checks, stmt.replace(value=value, body=body))
        return self.guarded(stmt.replace(body=body), checks)

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        checks = self.checks_of(store.indices)
        checks += self.checks_of((store.value,))
        own = None
        if len(store.indices) == 1:  # else not lowered form: verify_lowered reports it
            own = self.check(store.buffer, store.indices[0], None, 1)
        if _has_barrier(store.value):
            return self.clamped(store, checks, own)
        return self.guarded(store, [*checks, *([own] if own else [])])

    def visit_Evaluate(self, stmt: Evaluate) -> Stmt:
        width = 1
        value = stmt.value
        if intrinsics.COPY_BYTES.matches(value) and isinstance(value, Call):
            nbytes = value.args[2]
            width = nbytes.value if isinstance(nbytes, IntImm) else 1  # bytes; scaled per buffer
        checks = self.checks_of((value,), copy_bytes=width)
        if _has_barrier(value):
            return self.clamped(stmt, checks, None)
        return self.guarded(stmt, checks)

    # -- checks -------------------------------------------------------------------------------

    def checks_of(self, exprs: tuple[PrimExpr, ...], copy_bytes: int = 1) -> list[_Check]:
        found = []
        for expr in exprs:
            for item in guarded_loads(expr):
                load = item.load
                if len(load.indices) != 1:
                    continue  # not in lowered form; verify_lowered reports it
                width = 1
                if item.address and copy_bytes > 1:
                    width = max(1, -(-copy_bytes // max(1, load.buffer.dtype.bytes)))
                check = self.check(load.buffer, load.indices[0], item.guard, width)
                if check is not None:
                    found.append(check)
        return found

    def span(self, index: PrimExpr, width: int) -> tuple[PrimExpr, PrimExpr] | None:
        """The lowest and highest element ``index`` touches (``width`` elements from it)."""
        if isinstance(index, Ramp):
            last = op.add(index.base, op.mul(index.stride, index.lanes - 1))
            stride = index.stride
            if isinstance(stride, IntImm):
                return (index.base, last) if stride.value >= 0 else (last, index.base)
            return op.min_value(index.base, last), op.max_value(index.base, last)
        if isinstance(index, Broadcast):
            index = index.value
        if index.dtype.lanes != 1:
            return None  # a gather index: no statement of the lowered form makes one
        return index, (index if width == 1 else op.add(index, width - 1))

    def in_range(
        self, buffer: Buffer, index: PrimExpr, guard: PrimExpr | None, width: int
    ) -> tuple[PrimExpr, PrimExpr] | None:
        """(the condition that ``index`` is in range, the value to record when not); None
        when it is proven in range."""
        ends = self.span(index, width)
        if ends is None:
            return None
        low, high = ends
        extent = op.convert(buffer.shape[0]) if buffer.shape else op.convert(1)
        sides = [op.ge(low, _int(0, low)), op.lt(high, op.cast(extent, high.dtype))]
        if self.elide_proven:
            with self.analyzer.constraint_scope(guard) if guard is not None else nullcontext():
                sides = [s for s in sides if not self.analyzer.can_prove(s)]
        if not sides:
            return None
        condition = sides[0] if len(sides) == 1 else op.logical_and(sides[0], sides[1])
        bad = low if low is high else op.select(op.lt(low, _int(0, low)), low, high)
        return condition, bad

    def check(
        self, buffer: Buffer, index: PrimExpr, guard: PrimExpr | None, width: int
    ) -> _Check | None:
        found = self.in_range(buffer, index, guard, width)
        if found is None:
            return None
        condition, bad = found
        passes = condition if guard is None else op.logical_or(op.logical_not(guard), condition)
        number = len(self.records)
        extent = buffer.shape[0] if buffer.shape else op.convert(1)
        self.records.append(
            (buffer.name, self.kernel, str(index), str(extent), self.nd_shapes.get(buffer.data, ()))
        )
        return _Check(number, passes, bad)

    def report(self, check: _Check) -> Stmt:
        slot = IntImm(2 * check.number, int32)
        return seq(
            BufferStore(self.errors, IntImm(1, int64), (slot,)),
            BufferStore(self.errors, op.cast(check.index, int64), (IntImm(slot.value + 1, int32),)),
        )

    def guarded(self, stmt: Stmt, checks: list[_Check]) -> Stmt:
        """``stmt`` run only when every check passes; the first failing one is recorded."""
        for check in reversed(checks):
            stmt = IfThenElse(check.passes, stmt, self.report(check))
        return stmt

    def recorded(self, checks: list[_Check], stmt: Stmt) -> Stmt:
        """The first failing check recorded, then ``stmt`` whatever happened: for statements
        that every thread must run because they hold a barrier (their loads are clamped)."""
        record: Stmt | None = None
        for check in reversed(checks):
            record = IfThenElse(op.logical_not(check.passes), self.report(check), record)
        return seq(record, stmt)

    def clamped(self, stmt: Stmt, checks: list[_Check], own: _Check | None) -> Stmt:
        """``stmt`` run by every thread (it holds a barrier): failures are recorded first,
        out-of-range loads read element 0 instead and only the store itself is skipped."""
        clamp = _Clamp(self)
        if isinstance(stmt, BufferStore):
            value = clamp.visit(stmt.value)
            index = clamp.visit(stmt.indices[0])
            kept = Var("checked_value", value.dtype)
            store: Stmt = BufferStore(stmt.buffer, kept, (index,))
            if own is not None:
                found = self.in_range(stmt.buffer, index, None, 1)
                if found is not None:
                    store = IfThenElse(found[0], store, self.report(_Check(own.number, *found)))
            body: Stmt = LetStmt(kept, value, store)
        else:
            body = clamp.visit(stmt)
        return self.recorded(checks, body)


class _Clamp(Mutator):
    """Loads whose index may be out of range read element 0 instead (barrier statements)."""

    def __init__(self, owner: _Instrumenter) -> None:
        super().__init__()
        self.owner = owner

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        load = self.generic_visit(load)
        if len(load.indices) != 1:
            return load
        index = load.indices[0]
        found = self.owner.in_range(load.buffer, index, None, 1)
        if found is None:
            return load
        if isinstance(index, Ramp):
            base = op.select(found[0], index.base, _int(0, index.base))
            return BufferLoad(load.buffer, (index.replace(base=base),))
        return BufferLoad(load.buffer, (op.select(found[0], index, _int(0, index)),))


__all__ = ["CHECKS_ATTR", "ERRORS_NAME", "CheckRecord", "instrument_bounds"]
