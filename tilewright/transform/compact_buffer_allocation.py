"""Loop nest with placed ``Allocate`` → each shared/local buffer shrunk to the region it uses.

Run after ``plan_buffer_allocation``. For every allocation the accesses inside its body are
bounded with the loops inside the allocation relaxed over their ranges, and, by storage scope,
the thread indices: a ``shared`` buffer holds what the whole thread block touches (``threadIdx``
and ``vthread`` relaxed, ``blockIdx`` not), a ``local`` one what one thread touches (neither
relaxed, but a ``vthread`` loop inside the allocation is relaxed like a serial loop). The
buffer's shape becomes the extent of that region and every index is shifted by its minimum.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilewright.arith import Analyzer, eval_set, to_form
from tilewright.arith.linear_form import LinearForm, build
from tilewright.ir import (
    GE,
    GT,
    LE,
    LT,
    Allocate,
    AllocateConst,
    And,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    LetStmt,
    Mutator,
    PrimExpr,
    PrimFunc,
    Range,
    Stmt,
    Var,
    Visitor,
    collect_vars,
    intrinsics,
    op,
    substitute,
)


def compact_buffer_allocation(
    func: PrimFunc, *, scopes: tuple[str, ...] = ("shared", "local", "warp")
) -> PrimFunc:
    """Shrink each allocation of the given ``scopes`` (by prefix) to the region its accesses
    cover.

    Conditions around an access (a ``T.where`` lowered to ``if``) narrow its bound when they
    limit the same combination of relaxed loops as the index (``ax0_0 * 128 + ax0_1 < 130``).
    A dimension whose region has no constant extent, or is not smaller, keeps its full size.
    By default ``global`` buffers are left alone (GPU targets); CPU targets compact them too.

    Args:
        func: a function after ``plan_buffer_allocation``, buffers still N-d.
        scopes: the storage scopes (prefixes) whose allocations are compacted.

    Example::

        # before (window sum)                       # after
        A_shared = alloc((1027,), scope="shared")   A_shared = alloc((130,), scope="shared")
        A_shared[i_0 * 128 + ax0_0 * 128 + ax0_1]   A_shared[ax0_0 * 128 + ax0_1]
        ... A_shared[i_0 * 128 + i_1 + 2]           ... A_shared[i_1 + 2]
    """
    collector = _Collector(scopes)
    collector.visit(func.body)
    plans: dict[Var, _Plan] = {}
    for data, accesses in collector.accesses.items():
        alloc = collector.allocations[data]
        plan = _plan(alloc.buffer, accesses)
        if plan is not None:
            plans[data] = plan
    if not plans:
        return func
    return func.with_body(_Rewriter(plans).visit(func.body))


@dataclass
class _Loop:
    var: Var
    dom: Range
    tag: str
    inside: bool  # below the allocation being compacted


@dataclass
class _Access:
    indices: tuple[PrimExpr, ...]
    loops: list[_Loop]
    conditions: list[PrimExpr]
    inner_lets: frozenset[Var] = frozenset()  # let variables bound below the allocation
    address: bool = False  # the operand of tw.address_of: where an access of unknown size starts


@dataclass
class _Plan:
    buffer: Buffer  # the compacted buffer
    mins: tuple[PrimExpr, ...]  # region minima over canonical thread variables
    canonical: dict[str, Var] = field(default_factory=dict)  # thread tag → canonical variable


class _Collector(Visitor):
    """Finds the allocations of the given scopes and the context (loops, conditions) of each
    access."""

    def __init__(self, scopes: tuple[str, ...]) -> None:
        self.scopes = scopes
        self.loops: list[tuple[For, int]] = []  # (loop, number of allocations open above it)
        self.conditions: list[PrimExpr] = []
        self.lets: list[tuple[Var, int]] = []  # (let variable, allocations open above it)
        self.open: list[Var] = []
        self.allocations: dict[Var, Allocate] = {}
        self.accesses: dict[Var, list[_Access]] = {}
        self.depth: dict[Var, int] = {}  # allocation → how many allocations were open above it

    def visit_For(self, loop: For) -> None:
        self.loops.append((loop, len(self.open)))
        self.visit(loop.body)
        self.loops.pop()

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.visit(stmt.value)
        self.lets.append((stmt.var, len(self.open)))
        self.visit(stmt.body)
        self.lets.pop()

    def visit_IfThenElse(self, stmt: IfThenElse) -> None:
        self.visit(stmt.condition)
        self.conditions.append(stmt.condition)
        self.visit(stmt.then_case)
        self.conditions.pop()
        self.visit(stmt.else_case)

    def visit_Allocate(self, alloc: Allocate) -> None:
        data = alloc.buffer.data
        if alloc.buffer.scope.startswith(self.scopes) and data not in self.allocations:
            self.allocations[data] = alloc
            self.accesses[data] = []
            self.depth[data] = len(self.open)
        self.open.append(data)
        self.visit(alloc.body)
        self.open.pop()

    def visit_AllocateConst(self, alloc: AllocateConst) -> None:
        self.visit(alloc.body)  # constant data keeps its shape: it is never compacted

    def record(self, buffer: Buffer, indices: tuple[PrimExpr, ...], address: bool = False) -> None:
        data = buffer.data
        if data not in self.allocations or data not in self.open:
            return
        level = self.depth[data]
        loops = [
            _Loop(
                loop.loop_var,
                Range(loop.min, loop.extent),
                loop.thread_tag if loop.kind is ForKind.THREAD_BINDING else "",
                opened > level,
            )
            for loop, opened in self.loops
        ]
        inner = frozenset(var for var, opened in self.lets if opened > level)
        self.accesses[data].append(_Access(indices, loops, list(self.conditions), inner, address))

    def visit_Call(self, call: Call) -> None:
        load = call.args[0] if intrinsics.ADDRESS_OF.matches(call) else None
        if isinstance(load, BufferLoad):
            self.record(load.buffer, load.indices, address=True)
            self.visit(load.indices)
            return
        self.generic_visit(call)

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self.record(load.buffer, load.indices)
        self.visit(load.indices)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self.record(store.buffer, store.indices)
        self.visit((store.value, store.indices))


def _relaxed(loop: _Loop, scope: str) -> bool:
    if loop.tag.startswith("threadIdx"):
        # A warp buffer is shared by the 32 lanes of a warp (threadIdx.x), one per warp.
        return scope.startswith("shared") or (scope == "warp" and loop.tag == "threadIdx.x")
    if loop.tag.startswith("vthread"):
        # Each real thread runs a virtual thread's iterations in turn (lower_vthread): for a
        # local buffer it is a loop, whose iterations need their own elements.
        return scope.startswith("shared") or loop.inside
    if loop.tag.startswith("blockIdx"):
        return False
    return loop.inside


def _plan(buffer: Buffer, accesses: list[_Access]) -> _Plan | None:
    if not accesses or any(len(a.indices) != buffer.ndim for a in accesses):
        return None
    if any(a.address for a in accesses):
        # An address hands the buffer to an access of unknown size from that element on
        # (TMA, wgmma descriptors, mbarriers, user intrinsics): shrinking the buffer to its
        # plain accesses could leave that access running past the end. Keep it whole.
        return None
    canonical: dict[str, Var] = {}
    lows: list[list[PrimExpr | None]] = [[] for _ in range(buffer.ndim)]
    highs: list[list[PrimExpr | None]] = [[] for _ in range(buffer.ndim)]
    analyzer = Analyzer()
    for access in accesses:
        rename: dict[Var, PrimExpr] = {}
        for loop in access.loops:
            if loop.tag and not _relaxed(loop, buffer.scope):
                rename[loop.var] = canonical.setdefault(loop.tag, loop.var)
        relax = {loop.var: loop.dom for loop in access.loops if _relaxed(loop, buffer.scope)}
        conditions = [substitute(c, rename) for c in access.conditions]
        for dim, index in enumerate(access.indices):
            lo, hi = _bounds(substitute(index, rename), relax, conditions, analyzer)
            # A bound over a let variable bound inside the allocation means nothing elsewhere.
            if any(v in access.inner_lets for v in collect_vars((lo, hi))):
                lo = hi = None
            lows[dim].append(lo)
            highs[dim].append(hi)
    shape: list[PrimExpr] = []
    mins: list[PrimExpr] = []
    changed = False
    for dim, extent in enumerate(buffer.shape):
        lo = _extreme(lows[dim], analyzer, smallest=True)
        hi = _extreme(highs[dim], analyzer, smallest=False)
        size = None if lo is None or hi is None else analyzer.simplify(hi - lo + 1)
        full = (
            isinstance(extent, IntImm) and isinstance(size, IntImm) and size.value >= extent.value
        )
        if lo is None or not isinstance(size, IntImm) or size.value <= 0 or full:
            shape.append(extent)
            mins.append(IntImm(0, extent.dtype))
            continue
        shape.append(size)
        mins.append(lo)
        changed = True
    if not changed:
        return None
    return _Plan(buffer.with_shape(shape), tuple(mins), canonical)


def _bounds(
    index: PrimExpr, relax: dict[Var, Range], conditions: list[PrimExpr], analyzer: Analyzer
) -> tuple[PrimExpr | None, PrimExpr | None]:
    found = eval_set(index, relax, analyzer)
    lo, hi = found.min_value, found.max_value
    # A condition over the same relaxed terms as the index caps them: with
    # `ax0_0 * 128 + ax0_1 < 130`, `i_0 * 128 + ax0_0 * 128 + ax0_1` stays below i_0 * 128 + 130.
    form = to_form(index)
    relaxed_key, fixed = _split(form, relax)
    if relaxed_key:
        for cond in conditions:
            for atom in _conjuncts(cond):
                limit = _limit(atom, relax)
                if limit is None:
                    continue
                key, bound = limit
                if key != relaxed_key and key != _negate(relaxed_key):
                    continue
                part = eval_set(_rebuild(form, relax, keep_relaxed=True), relax, analyzer)
                if key == relaxed_key and part.max_value is not None and hi is not None:
                    hi = analyzer.simplify(fixed + op.min_value(part.max_value, bound))
                elif key == _negate(relaxed_key) and lo is not None:
                    lo_part = part.min_value
                    if lo_part is not None:
                        lo = analyzer.simplify(fixed + op.max_value(lo_part, -bound))
    return lo, hi


def _split(form: LinearForm, relax: dict[Var, Range]) -> tuple[tuple, PrimExpr]:
    """The sorted (term key, coefficient) pairs that involve relaxed variables, and the rest."""
    key = []
    for term_key, term, coef in form.items():
        if any(v in relax for v in collect_vars(term)):
            key.append((term_key, coef))
    return tuple(sorted(key, key=repr)), _rebuild(form, relax, keep_relaxed=False)


def _rebuild(form: LinearForm, relax: dict[Var, Range], keep_relaxed: bool) -> PrimExpr:
    out = LinearForm(form.dtype, 0 if keep_relaxed else form.const)
    for term_key, term, coef in form.items():
        if any(v in relax for v in collect_vars(term)) == keep_relaxed:
            out.add_term(term, coef, term_key)
    return build(out)


def _negate(key: tuple) -> tuple:
    return tuple(sorted(((k, -c) for k, c in key), key=repr))


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _limit(cond: PrimExpr, relax: dict[Var, Range]) -> tuple[tuple, int] | None:
    """``cond`` as ``P <= bound`` with ``P`` over relaxed terms only: (key of P, bound)."""
    if isinstance(cond, LT | LE):
        diff, strict = cond.a - cond.b, isinstance(cond, LT)
    elif isinstance(cond, GT | GE):
        diff, strict = cond.b - cond.a, isinstance(cond, GT)
    else:
        return None
    if not diff.dtype.is_integer:
        return None
    form = to_form(diff)
    key, rest = _split(form, relax)
    if not key or not isinstance(rest, IntImm):
        return None
    # P + rest <= 0 (or < 0)  →  P <= -rest (- 1 when strict)
    return key, -rest.value - (1 if strict else 0)


def _extreme(values: list[PrimExpr | None], analyzer: Analyzer, smallest: bool) -> PrimExpr | None:
    best: PrimExpr | None = None
    for value in values:
        if value is None:
            return None
        if best is None:
            best = value
            continue
        diff = analyzer.simplify(value - best)
        if not isinstance(diff, IntImm):
            return None
        if (diff.value < 0) == smallest and diff.value != 0:
            best = value
    return best


class _Rewriter(Mutator):
    def __init__(self, plans: dict[Var, _Plan]) -> None:
        super().__init__()
        self.plans = plans
        self.threads: list[dict[str, Var]] = [{}]
        self.analyzer = Analyzer()

    def visit_For(self, loop: For) -> Stmt:
        tags = dict(self.threads[-1])
        if loop.kind is ForKind.THREAD_BINDING:
            tags[loop.thread_tag] = loop.loop_var
        self.threads.append(tags)
        with self.analyzer._scope():
            self.analyzer.bind(loop.loop_var, Range(loop.min, loop.extent))
            body = self.visit(loop.body)
        self.threads.pop()
        return loop.replace(body=body)

    def visit_Allocate(self, alloc: Allocate) -> Stmt:
        body = self.visit(alloc.body)
        plan = self.plans.get(alloc.buffer.data)
        buffer = plan.buffer if plan is not None else alloc.buffer
        return alloc.replace(buffer=buffer, body=body)

    def shifted(self, plan: _Plan, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        here = self.threads[-1]
        back: dict[Var, PrimExpr] = {}
        for tag, var in plan.canonical.items():
            if tag in here:
                back[var] = here[tag]
        out = []
        for index, lo in zip(indices, plan.mins):
            moved = substitute(lo, back)
            out.append(self.analyzer.simplify(index - moved))
        return tuple(out)

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        indices = self.visit(load.indices)
        plan = self.plans.get(load.buffer.data)
        if plan is None:
            return load.replace(indices=indices)
        return BufferLoad(plan.buffer, self.shifted(plan, indices))

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        value = self.visit(store.value)
        indices = self.visit(store.indices)
        plan = self.plans.get(store.buffer.data)
        if plan is None:
            return store.replace(value=value, indices=indices)
        return BufferStore(plan.buffer, value, self.shifted(plan, indices))
