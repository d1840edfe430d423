"""Loop nest with ``vthread``-bound loops → each one an ordinary loop pushed as deep as it may go.

A virtual thread (``sch.bind(loop, "vthread.x")``) is a loop whose iterations are independent,
like threads, and which each real thread runs in turn. Kept where it is, it would repeat the
whole nest below it (shared fetches, barriers, the reduction loop) once per iteration; pushed
down to the statements that use its variable, it interleaves the iterations' work and, once
``unroll_loops`` writes it out, gives each its own registers with constant indices.

The reference meaning is the plain serial loop in place, so every move is checked: the loop
goes through ``threadIdx`` loops (each thread runs the iterations in turn either way, and
``inject_thread_sync`` later places barriers for the order it sees), and through serial loops,
sequences, ``if``, ``let`` and allocations only when the iterations touch disjoint elements of
every buffer one of them writes (an index ``c * v + r`` with ``r`` spanning less than ``|c|``).
A statement that does not use the variable and only copies runs once. Local or shared buffers
allocated inside the loop, whose iterations would otherwise share them, get one slice per
iteration (a new leading dimension), as TVM's virtual-thread injection does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tilewright.arith import Analyzer, IntervalSet, eval_set, to_form
from tilewright.arith.linear_form import build, is_linear_dtype
from tilewright.ir import (
    Allocate,
    AttrStmt,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    Let,
    LetStmt,
    Mutator,
    PrimExpr,
    PrimFunc,
    Range,
    SeqStmt,
    Stmt,
    Var,
    Visitor,
    collect_vars,
    intrinsics,
    op,
    pre_order_visit,
    seq,
    substitute,
)
from tilewright.ir.intrinsics import Effect, lookup_or_none

Domain = Range | IntervalSet
_UNBOUNDED = IntervalSet.everything()
_RELAX_ROUNDS = 4  # loops whose bounds use outer relaxed loops, nested this deep


def is_vthread(tag: str) -> bool:
    """Whether a thread tag names a virtual thread (``vthread``, ``vthread.x``, ...).

    Example::

        >>> is_vthread("vthread.y"), is_vthread("threadIdx.x")
        (True, False)
    """
    return tag == "vthread" or tag.startswith("vthread.")


def lower_vthread(func: PrimFunc) -> PrimFunc:
    """Turn every ``vthread``-bound loop into ``T.unroll`` loops as deep as legality allows.

    Inner virtual threads are lowered first. A loop stops (and becomes ``T.unroll``) at a
    statement that uses its variable and cannot be entered: a store, a vectorized or parallel
    loop, a loop whose bounds use it, or a sequence, loop or allocation whose iterations could
    touch one element. Raises ``ValueError`` naming a ``vthread`` loop of non-constant extent.

    Args:
        func: a function after ``compact_buffer_allocation``, buffers still N-d.

    Example::

        # before                                        # after
        for v in T.thread_binding(2, "vthread.x"):      for t in T.thread_binding(8, "threadIdx.x"):
            for t in T.thread_binding(8, "threadIdx.x"):    acc = T.decl_buffer((2, 1), "local")
                acc = T.decl_buffer((1,), "local")          for k in range(64):
                for k in range(64):                              for v in T.unroll(2):
                    acc[0] = acc[0] + A[v * 8 + t, k]                acc[v, 0] = acc[v, 0] + A[..]
                C[v * 8 + t] = acc[0]                        for v in T.unroll(2):
                                                                 C[v * 8 + t] = acc[v, 0]
    """
    return func.with_body(_Lowerer().visit(func.body))


class _Lowerer(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.threads: dict[Var, Domain] = {}  # threadIdx loops around the current statement

    def visit_For(self, loop: For) -> Stmt:
        thread = loop.kind is ForKind.THREAD_BINDING and loop.thread_tag.startswith("threadIdx")
        if thread:
            self.threads[loop.loop_var] = Range(loop.min, loop.extent)
        body: Stmt = self.visit(loop.body)
        if thread:
            del self.threads[loop.loop_var]
        loop = loop.replace(body=body)
        if loop.kind is not ForKind.THREAD_BINDING or not is_vthread(loop.thread_tag):
            return loop
        if not isinstance(loop.extent, IntImm):
            raise ValueError(
                f"loop {loop.loop_var.name} is bound to {loop.thread_tag} with extent "
                f"{loop.extent}; a virtual thread needs a constant extent"
            )
        pusher = _Pusher(loop, _varying(loop.loop_var, loop.body))
        # Threads around the loop: another thread's iterations are other instances too.
        return pusher.push(loop.body, dict(self.threads))


# -- what a statement touches ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Access:
    data: Var  # the buffer's data variable
    indices: tuple[PrimExpr, ...]
    write: bool
    inner: dict[Var, Domain]  # loops (ranges) and lets (unbounded) inside the statement


class _Summary(Visitor):
    """The accesses of one statement, each with the loops and lets inside it around it."""

    def __init__(self, stmt: Stmt) -> None:
        self.inner: dict[Var, Domain] = {}
        self.accesses: list[_Access] = []
        self.allocated: set[Var] = set()
        self.opaque = False  # a call with effects, or an attribute scope: never moved
        self.visit(stmt)
        self.writes = {a.data for a in self.accesses if a.write}
        self.reads = {a.data for a in self.accesses if not a.write}

    def bind(self, var: Var, dom: Domain, inner: object) -> None:
        self.inner[var] = dom
        self.visit(inner)
        del self.inner[var]

    def visit_For(self, loop: For) -> None:
        self.visit((loop.min, loop.extent))
        self.bind(loop.loop_var, Range(loop.min, loop.extent), loop.body)

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.visit(stmt.value)
        self.bind(stmt.var, _UNBOUNDED, stmt.body)

    def visit_Let(self, expr: Let) -> None:
        self.visit(expr.value)
        self.bind(expr.var, _UNBOUNDED, expr.body)

    def visit_Allocate(self, alloc: Allocate) -> None:
        self.allocated.add(alloc.buffer.data)
        self.visit(alloc.body)

    def visit_AttrStmt(self, stmt: AttrStmt) -> None:
        self.opaque = True
        self.visit(stmt.body)

    def visit_Evaluate(self, stmt: Evaluate) -> None:
        if not intrinsics.SYNC_THREADS.matches(stmt):  # a barrier touches no element
            self.visit(stmt.value)

    def visit_Call(self, call: Call) -> None:
        found = lookup_or_none(call.op)
        if found is None or found.effect is not Effect.PURE:
            self.opaque = True
        self.visit(call.args)

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self.accesses.append(_Access(load.buffer.data, load.indices, False, dict(self.inner)))
        self.visit(load.indices)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self.accesses.append(_Access(store.buffer.data, store.indices, True, dict(self.inner)))
        self.visit((store.value, store.indices))


def _varying(v: Var, body: Stmt) -> set[Var]:
    """Buffers (data variables) some store of ``body`` fills differently for different ``v``:
    through its index, value or enclosing bounds and conditions, or from such a buffer."""
    stores: list[tuple[Var, set[Var], set[Var]]] = []

    class _Stores(Visitor):
        def __init__(self) -> None:
            self.context: list[object] = []

        def visit_For(self, loop: For) -> None:
            self.context.append((loop.min, loop.extent))
            self.visit(loop.body)
            self.context.pop()

        def visit_IfThenElse(self, stmt: IfThenElse) -> None:
            self.context.append(stmt.condition)
            self.visit((stmt.then_case, stmt.else_case))
            self.context.pop()

        def visit_LetStmt(self, stmt: LetStmt) -> None:
            self.context.append(stmt.value)
            self.visit(stmt.body)
            self.context.pop()

        def visit_BufferStore(self, store: BufferStore) -> None:
            used = (tuple(self.context), store.value, store.indices)
            loads: set[Var] = set()
            _collect_loads(used, loads)
            stores.append((store.buffer.data, set(collect_vars(used)), loads))

    _Stores().visit(body)
    varying: set[Var] = set()
    changed = True
    while changed:
        changed = False
        for data, used, loads in stores:
            if data not in varying and (v in used or loads & varying):
                varying.add(data)
                changed = True
    return varying


def _collect_loads(tree: object, into: set[Var]) -> None:
    class _Loads(Visitor):
        def visit_BufferLoad(self, load: BufferLoad) -> None:
            into.add(load.buffer.data)
            self.visit(load.indices)

    _Loads().visit(tree)


def _has_load_or_call(tree: object) -> bool:
    """Whether ``tree`` reads memory, calls, or binds a variable: not a plain integer formula."""
    found = False

    def visit(node: object) -> bool:
        nonlocal found
        found = found or isinstance(node, BufferLoad | Call | Let)
        return not found

    pre_order_visit(tree, visit)
    return found


# -- pushing one loop down --------------------------------------------------------------------


class _Pusher:
    def __init__(self, loop: For, varying: set[Var]) -> None:
        assert isinstance(loop.extent, IntImm)
        self.v = loop.loop_var
        self.min = loop.min
        self.extent = loop.extent
        self.varying = varying
        self.analyzer = Analyzer()

    def push(self, stmt: Stmt, free: dict[Var, Domain]) -> Stmt:
        """``for v in range(n): stmt`` with the loop moved inside ``stmt`` where legal;
        ``free`` holds the variables (loops passed, threads) that differ between instances."""
        if self.v not in collect_vars(stmt) and self.runs_once(stmt):
            return stmt
        if isinstance(stmt, For):
            return self.push_for(stmt, free)
        if isinstance(stmt, Allocate):
            return self.push_allocate(stmt, free)
        if isinstance(stmt, SeqStmt) and self.distributes(stmt.seq, free):
            return seq(*(self.push(s, free) for s in stmt.seq))
        if isinstance(stmt, IfThenElse) and self.invariant(stmt.condition):
            orelse = None if stmt.else_case is None else self.push(stmt.else_case, free)
            return stmt.replace(then_case=self.push(stmt.then_case, free), else_case=orelse)
        if isinstance(stmt, LetStmt) and self.invariant(stmt.value):
            return stmt.replace(body=self.push(stmt.body, {**free, stmt.var: _UNBOUNDED}))
        return self.wrap(stmt)

    def wrap(self, stmt: Stmt) -> Stmt:
        """The loop itself, around ``stmt``, as a ``T.unroll`` loop with a variable of its own
        (just ``stmt`` at the first iteration when there is one)."""
        if self.extent.value == 1:
            return substitute(stmt, {self.v: self.min})
        var = Var(self.v.name, self.v.dtype)
        return For(var, self.min, self.extent, ForKind.UNROLLED, substitute(stmt, {self.v: var}))

    def invariant(self, expr: PrimExpr | tuple[PrimExpr, ...]) -> bool:
        return self.v not in collect_vars(expr) and not _has_load_or_call(expr)

    def runs_once(self, stmt: Stmt) -> bool:
        """A statement free of ``v`` that reads nothing it writes leaves the same state when
        run again right after itself."""
        summary = _Summary(stmt)
        return not summary.opaque and not (summary.writes & summary.reads)

    def push_for(self, loop: For, free: dict[Var, Domain]) -> Stmt:
        if not self.invariant((loop.min, loop.extent)):
            return self.wrap(loop)
        inner = {**free, loop.loop_var: Range(loop.min, loop.extent)}
        through_thread = loop.kind is ForKind.THREAD_BINDING and loop.thread_tag.startswith(
            "threadIdx"
        )
        through_serial = loop.kind in (ForKind.SERIAL, ForKind.UNROLLED) or (
            loop.kind is ForKind.THREAD_BINDING and loop.thread_tag.startswith("blockIdx")
        )
        if through_thread or (through_serial and self.interchanges(loop.body, inner)):
            return loop.replace(body=self.push(loop.body, inner))
        return self.wrap(loop)

    def interchanges(self, body: Stmt, free: dict[Var, Domain]) -> bool:
        """``for v: for l: body`` may become ``for l: for v: body``: no element is touched by
        two different ``v`` (one writing), other than in buffers allocated inside."""
        summary = _Summary(body)
        if summary.opaque:
            return False
        accesses = [a for a in summary.accesses if a.data not in summary.allocated]
        return all(
            self.disjoint(a, b, free)
            for i, a in enumerate(accesses)
            for b in accesses[i:]
            if a.data is b.data and (a.write or b.write)
        )

    def distributes(self, stmts: tuple[Stmt, ...], free: dict[Var, Domain]) -> bool:
        """``for v: {s_1; ...; s_n}`` may become ``{for v: s_1; ...; for v: s_n}``: no later
        statement of an earlier iteration conflicts with an earlier statement of a later one.
        A copy that does not use ``v``, whose buffers nothing else writes, conflicts with
        nothing after it: running it again rewrites the same values."""
        summaries = [_Summary(s) for s in stmts]
        if any(s.opaque for s in summaries):
            return False
        for i, first in enumerate(summaries):
            touched = first.writes | first.reads
            if (
                self.v not in collect_vars(stmts[i])
                and not first.writes & first.reads
                and not any(k != i and s.writes & touched for k, s in enumerate(summaries))
            ):
                continue
            for later in summaries[i + 1 :]:
                private = first.allocated | later.allocated
                for a in first.accesses:
                    for b in later.accesses:
                        if a.data is not b.data or a.data in private or not (a.write or b.write):
                            continue
                        if not self.disjoint(a, b, free):
                            return False
        return True

    def disjoint(self, a: _Access, b: _Access, free: dict[Var, Domain]) -> bool:
        """Whether ``a`` at one ``v`` and ``b`` at another never touch one element: some
        dimension is ``c * v + r`` in both with the two ``r`` spanning less than ``|c|``."""
        if len(a.indices) != len(b.indices):
            return False
        for ia, ib in zip(a.indices, b.indices, strict=True):
            found = self.split(ia, {**free, **a.inner}), self.split(ib, {**free, **b.inner})
            (ca, ra), (cb, rb) = found
            if ca == 0 or ca != cb or ra is None or rb is None:
                continue
            span_ab = self.analyzer.simplify(ra.max_value - rb.min_value)  # type: ignore[operator]  # both ends checked bounded
            span_ba = self.analyzer.simplify(rb.max_value - ra.min_value)  # type: ignore[operator]  # both ends checked bounded
            if (
                isinstance(span_ab, IntImm)
                and isinstance(span_ba, IntImm)
                and max(span_ab.value, span_ba.value) < abs(ca)
            ):
                return True
        return False

    def split(self, index: PrimExpr, relax: Mapping[Var, Domain]) -> tuple[int, IntervalSet | None]:
        """``index`` as ``c * v + r``: ``c`` and the interval ``r`` covers over ``relax``
        (``None`` when ``r`` has no bounded interval or still depends on ``v``)."""
        if not is_linear_dtype(index.dtype) or _has_load_or_call(index):
            return 0, None
        form = to_form(index)
        coef = 0
        rest = form.copy()
        for key, term, c in form.items():
            if term is self.v:
                coef += c
                rest.terms.pop(key)
        remainder = build(rest)
        if self.v in collect_vars(remainder):
            return 0, None
        span = eval_set(remainder, relax, self.analyzer)
        # A domain over another relaxed variable leaves that variable in the ends: relax them
        # again, since an end over a variable that differs between instances must not cancel.
        for _ in range(_RELAX_ROUNDS):
            lo, hi = span.min_value, span.max_value
            if lo is None or hi is None or not _mentions((lo, hi), relax):
                break
            span = IntervalSet(
                eval_set(lo, relax, self.analyzer).min_value,
                eval_set(hi, relax, self.analyzer).max_value,
            )
        ends = (span.min_value, span.max_value)
        if not span.is_bounded or _mentions(ends, relax) or self.v in collect_vars(ends):
            return coef, None
        return coef, span

    def push_allocate(self, alloc: Allocate, free: dict[Var, Domain]) -> Stmt:
        buffer = alloc.buffer
        summary = _Summary(alloc.body)
        mine = [a for a in summary.accesses if a.data is buffer.data]
        shared_safely = buffer.data not in self.varying or all(
            self.disjoint(a, b, free)
            for i, a in enumerate(mine)
            for b in mine[i:]
            if a.write or b.write
        )
        if shared_safely:
            return alloc.replace(body=self.push(alloc.body, free))
        if buffer.strides or buffer.layout is not None or not _is_zero(buffer.elem_offset):
            return self.wrap(alloc)
        # One slice per iteration: a new leading dimension indexed by the iteration.
        dim = buffer.shape[0].dtype if buffer.shape else self.extent.dtype
        sliced = buffer.with_shape((IntImm(self.extent.value, dim), *buffer.shape))
        slot = self.v if _is_zero(self.min) else op.sub(self.v, self.min)
        body = _Slices(buffer, sliced, slot).visit(alloc.body)
        return Allocate(sliced, self.push(body, free))


def _mentions(tree: object, variables: Mapping[Var, Domain]) -> bool:
    return any(v in variables for v in collect_vars(tree))


def _is_zero(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.value == 0


class _Slices(Mutator):
    """Accesses of ``old`` become accesses of ``new`` with ``slot`` as the first index."""

    def __init__(self, old: Buffer, new: Buffer, slot: PrimExpr) -> None:
        super().__init__()
        self.old, self.new, self.slot = old, new, slot

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        load = self.generic_visit(load)
        if load.buffer is not self.old:
            return load
        return BufferLoad(self.new, (self.slot, *load.indices))

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        store = self.generic_visit(store)
        if store.buffer is not self.old:
            return store
        return store.replace(buffer=self.new, indices=(self.slot, *store.indices))
