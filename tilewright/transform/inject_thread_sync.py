"""Flat GPU loop nest → the same nest with a block barrier wherever shared memory crosses threads.

Threads of a block run the kernel body side by side; a value one thread stores in shared
memory is visible to another only after a barrier between the store and the load (read after
write), and a thread may overwrite what another still has to read only after one (write after
read, typically the next iteration's fetch into the same tile). The pass walks each kernel as
the program one thread runs, keeps the shared accesses made since the last barrier, and puts
``tw.sync_threads()`` before the first statement that conflicts with them; a serial loop whose
next iteration conflicts with the end of the previous one gets a barrier at the top of its body.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import gcd

from tilewright.arith import Analyzer, eval_set, to_form
from tilewright.arith.linear_form import LinearForm, build
from tilewright.ir import (
    Allocate,
    AttrStmt,
    BufferLoad,
    BufferStore,
    Call,
    Evaluate,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    LetStmt,
    PrimExpr,
    PrimFunc,
    Ramp,
    Range,
    SeqStmt,
    Stmt,
    Var,
    Visitor,
    collect_vars,
    intrinsics,
    intrinsics_hopper,
    seq,
    structural_equal,
    substitute,
)
from tilewright.ir.intrinsics import sync_threads


def is_sync(stmt: Stmt) -> bool:
    """True for the barrier statement (``intrinsics.SYNC_THREADS``, ``sync_threads()``).

    Example::

        >>> is_sync(sync_threads())
        True
    """
    return isinstance(stmt, Evaluate) and intrinsics.SYNC_THREADS.matches(stmt)


def inject_thread_sync(func: PrimFunc) -> PrimFunc:
    """Insert the barriers each kernel needs for its ``shared`` buffers, and no others.

    Two accesses of one shared buffer conflict when one writes, the other reads, and another
    thread may touch the element: not when both use the same index of the thread indices, nor
    when each thread's elements (inner loops relaxed) lie in a slice of its own, such as
    ``S[tx * 4 + j]`` for ``j`` in ``range(4)``. Loops bound to ``threadIdx`` are not loops
    for this analysis: every thread runs their body once, so their variables stand for the
    thread index. Existing barriers are kept and counted.

    Args:
        func: a flattened function (one index per access) for a GPU target.

    Example::

        # before (window sum)                   # after
        for ax0_0 in range(2):                    for ax0_0 in range(2):
            A_shared[ax0_0 * 128 + t] = A[...]        A_shared[ax0_0 * 128 + t] = A[...]
        B[...] = A_shared[t] + A_shared[t + 1]    sync_threads()
                                                  B[...] = A_shared[t] + A_shared[t + 1]
    """
    return func.with_body(_Planner().stmt(func.body).stmt)


@dataclass(frozen=True)
class _Access:
    data: Var
    index: PrimExpr  # thread variables replaced by one variable per thread tag
    write: bool
    varying: frozenset[Var]  # loop variables that differ between the two sides of a check
    last: PrimExpr | None = None  # a region reached by address: its last element's index


@dataclass
class _Summary:
    stmt: Stmt
    head: list[_Access] = field(default_factory=list)  # accesses before the first barrier
    tail: list[_Access] = field(default_factory=list)  # accesses after the last barrier
    syncs: bool = False  # whether every execution passes a barrier


# An access's version of a multi-buffered buffer, ``(e + c) % n * S + r``: n, S, the terms
# of e (keys and coefficients), c, and the variables of e + c.
_Version = tuple[int, int, tuple, int, frozenset]
# An index as (threadIdx variable → coefficient, the rest).
_ThreadPart = tuple[dict[Var, int], LinearForm]


def _same_index(a: _Access, b: _Access) -> bool:
    """Both use one index expression, with the same variables and no loop variable varying."""
    if a.varying or b.varying or not structural_equal(a.index, b.index):
        return False
    return all(x is y for x, y in zip(collect_vars(a.index), collect_vars(b.index), strict=True))


def _interval(
    index: PrimExpr, dom: dict[Var, Range], analyzer: Analyzer
) -> tuple[PrimExpr, PrimExpr] | None:
    last = IntImm(0, index.dtype.element)
    if isinstance(index, Ramp):
        if not isinstance(index.stride, IntImm) or index.stride.value < 0:
            return None
        last = IntImm(index.stride.value * (index.lanes - 1), index.base.dtype)
        index = index.base
    found = eval_set(index, dom, analyzer)
    if found.min_value is None or found.max_value is None:
        return None
    return found.min_value, analyzer.simplify(found.max_value + last)


def _spacing(terms: list[tuple[int, int]]) -> tuple[int, int] | None:
    """(least, largest) ``|phi(t) - phi(t')|`` over distinct threads, when ``phi`` is injective.

    ``terms`` are (coefficient, extent) of ``phi(t) = sum(c * t)``; mixed-radix coefficients
    (each past the whole span of the smaller ones) make ``phi`` injective.
    """
    terms = sorted((c, n) for c, n in terms if n > 1)
    if not terms or terms[0][0] <= 0:
        return None
    gap = terms[0][0]
    span = 0
    for coef, extent in terms:
        if span and coef - span < gap:
            return None
        span += coef * (extent - 1)
    return gap, span


def _congruent(a: LinearForm, b: LinearForm, span: int) -> bool:
    """Both rests are one residue modulo a step larger than ``span`` (so the thread decides)."""
    step = 0
    for form in (a, b):
        for _, _, coef in form.items():
            step = gcd(step, coef)
    return step > span and (a.const - b.const) % step == 0


def _meets(x: tuple[int, int], y: tuple[int, int]) -> bool:
    return x[0] <= y[1] and y[0] <= x[1]


def _rest_expr(part: tuple[dict[Var, int], LinearForm] | None) -> PrimExpr:
    assert part is not None
    return build(part[1])


def _vary(accesses: list[_Access], var: Var) -> list[_Access]:
    out = []
    for access in accesses:
        if var in collect_vars((access.index, access.last)):
            access = replace(access, varying=access.varying | {var})
        out.append(access)
    return out


def _shifted(accesses: list[_Access], var: Var) -> list[_Access]:
    """The accesses of the next iteration of the loop over ``var``."""
    step = {var: var + 1}
    return [
        replace(
            a,
            index=substitute(a.index, step),
            last=substitute(a.last, step) if a.last is not None else None,
        )
        for a in accesses
    ]


class _Planner:
    def __init__(self) -> None:
        self.shared: set[Var] = set()
        self.canonical: dict[str, Var] = {}
        self.rename: dict[Var, Var] = {}
        self.ranges: dict[Var, Range] = {}  # serial loop variables
        self.thread_extent: dict[Var, int] = {}  # canonical threadIdx variable → extent
        # (id(expression), thread count) → (the expression, its thread part): a memo
        self.parts: dict[tuple[int, int], tuple[PrimExpr, _ThreadPart | None]] = {}
        # id(access) → (the access, its version): other_versions' memo
        self.versions: dict[int, tuple[_Access, _Version | None]] = {}
        self.analyzer = Analyzer()

    def conflict(self, before: list[_Access], after: list[_Access]) -> bool:
        """A read after a write, or a write after a read, of one element by two threads."""
        for a in before:
            for b in after:
                if a.data is not b.data or a.write == b.write:
                    continue
                regions = a.last is not None or b.last is not None
                if not regions and (self.same_element(a, b) or self.thread_private(a, b)):
                    continue
                if not self.other_versions(a, b):
                    return True
        return False

    def other_versions(self, a: _Access, b: _Access) -> bool:
        """Both sides touch different versions of a multi-buffered buffer: each index is
        ``(e + c) % n * S + r`` with ``0 <= r < S``, for one ``e`` (not moving between the
        sides), ``n`` and ``S``, and offsets ``c`` that differ modulo ``n`` (``(k + 2) % 3``
        against ``k % 3``)."""
        part_a, part_b = self.version(a), self.version(b)
        if part_a is None or part_b is None:
            return False
        (count_a, size_a, key_a, const_a, vars_a) = part_a
        (count_b, size_b, key_b, const_b, vars_b) = part_b
        if size_a != size_b or count_a != count_b or key_a != key_b:
            return False
        # A loop variable taking other values on the two sides may only move the rest.
        if (vars_a | vars_b) & (a.varying | b.varying):
            return False
        return (const_a - const_b) % count_a != 0

    def version(self, access: _Access) -> _Version | None:
        """The version of an access whose elements all lie in one version (see
        ``other_versions``): ``(n, S, the terms of e, c, the variables of e + c)``;
        remembered per access, as a pair of loops compares each access many times."""
        known = self.versions.get(id(access))
        if known is not None and known[0] is access:
            return known[1]
        found = self._version(access)
        self.versions[id(access)] = (access, found)
        return found

    def _version(self, access: _Access) -> _Version | None:
        low, high = access.index, access.last if access.last is not None else access.index
        if isinstance(low, Ramp):
            if not isinstance(low.stride, IntImm) or low.stride.value < 0:
                return None
            high = low.base + low.stride.value * (low.lanes - 1)
            low = low.base
        # The version term is the remainder with the largest coefficient.
        terms = [
            (coef, term)
            for _, term, coef in to_form(low).items()
            if isinstance(term, FloorMod) and isinstance(coef, int) and coef > 0
        ]
        if not terms:
            return None
        size, term = max(terms, key=lambda item: item[0])
        threads = {
            v: Range(IntImm(0, v.dtype), IntImm(n, v.dtype)) for v, n in self.thread_extent.items()
        }
        dom = {**self.ranges, **threads}
        rests = []
        for end in (low, high):
            form = to_form(end)
            rest = LinearForm(form.dtype, form.const)
            dropped = 0
            for key, part, coef in form.items():
                if isinstance(part, FloorMod) and structural_equal(part, term):
                    dropped += coef
                else:
                    rest.add_term(part, coef, key)
            if dropped != size:
                return None
            rests.append(eval_set(build(rest), dom, self.analyzer))
        lowest, highest = rests[0].min_value, rests[1].max_value
        if not (isinstance(lowest, IntImm) and isinstance(highest, IntImm)):
            return None
        if lowest.value < 0 or highest.value >= size:
            return None
        count = term.b
        if not isinstance(count, IntImm) or count.value <= 0:
            return None
        inner = to_form(term.a)
        key = tuple(sorted(((k, c) for k, _, c in inner.items()), key=repr))
        return count.value, size, key, inner.const, frozenset(collect_vars(term.a))

    def same_element(self, a: _Access, b: _Access) -> bool:
        """Each thread touches its own element, the same on both sides: the index is one
        expression, one-to-one in the thread indices (``S[0]`` or ``S[tx // 2]`` is shared
        between threads, so a write there by one thread must be fenced from the others)."""
        if not _same_index(a, b):
            return False
        index, width = a.index, 1
        if isinstance(index, Ramp):
            ramp = index
            if not isinstance(ramp.stride, IntImm):
                return False
            index, width = ramp.base, abs(ramp.stride.value) * ramp.lanes
        part = self.thread_part(index)
        if part is None:
            return False
        coefs = part[0]
        threads = [(v, n) for v, n in self.thread_extent.items() if n > 1]
        if any(coefs.get(v, 0) == 0 for v, _ in threads):
            return False
        if not threads:
            return True  # one thread: nobody else to race with
        spacing = _spacing([(abs(coefs[v]), n) for v, n in threads])
        return spacing is not None and spacing[0] >= width

    def thread_private(self, a: _Access, b: _Access) -> bool:
        """Whether no element of ``a`` can be one of ``b`` touched by another thread.

        Both indices must read ``phi(t) + rest`` for one thread map ``phi(t) = sum(c_k * t_k)``
        with mixed-radix coefficients (distinct threads differ by ``gap`` to ``span``). Then
        either the rests are congruent modulo a step past ``span`` (``S[j * 32 + tx]`` against
        ``S[96 + tx]``), or the differences that would make the two overlap avoid every
        difference between two threads (``S[tx * 4 + j]`` against ``S[tx * 4 + 3 - j]``).
        """
        forms = [self.thread_part(x.index) for x in (a, b)]
        if forms[0] is None or forms[1] is None or forms[0][0] != forms[1][0]:
            return False
        coefs = forms[0][0]
        spacing = _spacing([(c, self.thread_extent[v]) for v, c in coefs.items()])
        if spacing is None:
            return False
        gap, span = spacing
        if _congruent(forms[0][1], forms[1][1], span):
            return True
        dom = {}
        for var in a.varying | b.varying:
            if var not in self.ranges:
                return False
            dom[var] = self.ranges[var]
        end_a, end_b = [_interval(x.index, dom, self.analyzer) for x in (a, b)]
        if end_a is None or end_b is None:
            return False
        (lo_a, hi_a), (lo_b, hi_b) = (
            tuple(self.thread_part(e) for e in pair) for pair in (end_a, end_b)
        )
        if any(p is None or p[0] != coefs for p in (lo_a, hi_a, lo_b, hi_b)):
            return False
        # Element sets [phi + r, phi + s] of two threads meet when phi - phi' is in [low, high].
        low = self.analyzer.simplify(_rest_expr(lo_b) - _rest_expr(hi_a))
        high = self.analyzer.simplify(_rest_expr(hi_b) - _rest_expr(lo_a))
        if not (isinstance(low, IntImm) and isinstance(high, IntImm)):
            return False
        apart = (low.value, high.value)
        return not (_meets(apart, (gap, span)) or _meets(apart, (-span, -gap)))

    def thread_part(self, expr: PrimExpr) -> _ThreadPart | None:
        """``expr`` as (threadIdx variable → coefficient, the rest), or None if not linear;
        remembered per expression (the pairs of two loops ask for each one many times)."""
        key = (id(expr), len(self.thread_extent))
        known = self.parts.get(key)
        if known is not None and known[0] is expr:
            return known[1]
        found = self._thread_part(expr)
        self.parts[key] = (expr, found)
        return found

    def _thread_part(self, expr: PrimExpr) -> _ThreadPart | None:
        if isinstance(expr, Ramp):
            return None
        form = to_form(expr)
        coefs: dict[Var, int] = {}
        rest = LinearForm(form.dtype, form.const)
        for key, term, coef in form.items():
            if isinstance(term, Var) and term in self.thread_extent:
                coefs[term] = coef
            elif any(v in self.thread_extent for v in collect_vars(term)):
                return None
            else:
                rest.add_term(term, coef, key)
        return coefs, rest

    def stmt(self, stmt: Stmt) -> _Summary:
        method = getattr(self, f"stmt_{type(stmt).__name__}", None)
        if method is not None:
            return method(stmt)
        accesses = self.accesses(stmt)
        return _Summary(stmt, accesses, list(accesses))

    def accesses(self, node: object) -> list[_Access]:
        found: list[_Access] = []
        planner = self

        class _Find(Visitor):
            def visit_BufferLoad(self, load: BufferLoad) -> None:
                self.visit(load.indices)
                planner.record(found, load.buffer.data, load.indices, write=False)

            def visit_BufferStore(self, store: BufferStore) -> None:
                self.visit((store.value, store.indices))
                planner.record(found, store.buffer.data, store.indices, write=True)

            def visit_Call(self, call: Call) -> None:
                if intrinsics.REGION_DATA.matches(call):
                    return  # its loads only name a region, which the caller records below
                if intrinsics.is_call(call, *intrinsics_hopper.ASYNC_PROXY):
                    return  # ordered by mbarriers and wgmma fences, not by barriers
                self.generic_visit(call)
                # A region an intrinsic reaches by address: any of its elements, from any
                # thread (an index no analysis can prove private).
                for first, last, mode in intrinsics.region_accesses(call):
                    if first.buffer.data in planner.shared and len(first.indices) == 1:
                        for write in (False, True):
                            if mode & (intrinsics.WRITES if write else intrinsics.READS):
                                planner.record(
                                    found, first.buffer.data, first.indices, write, last.indices
                                )

        _Find().visit(node)
        return found

    def record(
        self,
        found: list[_Access],
        data: Var,
        indices: tuple,
        write: bool,
        last: tuple | None = None,
    ) -> None:
        if data not in self.shared:
            return
        index = substitute(indices[0] if len(indices) == 1 else indices, self.rename)
        end = substitute(last[0], self.rename) if last is not None else None
        found.append(_Access(data, index, write, frozenset(), end))

    def stmt_Allocate(self, alloc: Allocate) -> _Summary:
        if alloc.buffer.scope.startswith("shared"):
            self.shared.add(alloc.buffer.data)
        inner = self.stmt(alloc.body)
        return _Summary(alloc.replace(body=inner.stmt), inner.head, inner.tail, inner.syncs)

    def stmt_LetStmt(self, stmt: LetStmt) -> _Summary:
        inner = self.stmt(stmt.body)
        value = self.accesses(stmt.value)
        return _Summary(stmt.replace(body=inner.stmt), value + inner.head, inner.tail, inner.syncs)

    def stmt_AttrStmt(self, stmt: AttrStmt) -> _Summary:
        inner = self.stmt(stmt.body)
        return _Summary(stmt.replace(body=inner.stmt), inner.head, inner.tail, inner.syncs)

    def stmt_Evaluate(self, stmt: Evaluate) -> _Summary:
        # lower_async_copy puts a barrier after every wait for copy groups.
        if is_sync(stmt) or intrinsics.CP_ASYNC_WAIT.matches(stmt):
            return _Summary(stmt, [], [], True)
        accesses = self.accesses(stmt)
        return _Summary(stmt, accesses, list(accesses))

    def stmt_SeqStmt(self, stmt: SeqStmt) -> _Summary:
        out: list[Stmt] = []
        head: list[_Access] = []
        pending: list[_Access] = []
        syncs = False
        for child in stmt.seq:
            inner = self.stmt(child)
            if self.conflict(pending, inner.head):
                out.append(sync_threads())
                syncs = True
                pending = []
            out.append(inner.stmt)
            if not syncs:
                head += inner.head
            if inner.syncs:
                syncs = True
                pending = list(inner.tail)
            else:
                pending += inner.head
        return _Summary(seq(*out), head, pending, syncs)

    def stmt_IfThenElse(self, stmt: IfThenElse) -> _Summary:
        cond = self.accesses(stmt.condition)
        then = self.stmt(stmt.then_case)
        other = self.stmt(stmt.else_case) if stmt.else_case is not None else _Summary(stmt)
        new = stmt.replace(
            then_case=then.stmt, else_case=other.stmt if stmt.else_case is not None else None
        )
        if then.syncs and other.syncs:
            return _Summary(new, cond + then.head + other.head, then.tail + other.tail, True)
        every = cond + self.all_of(then) + self.all_of(other)
        return _Summary(new, every, list(every))

    @staticmethod
    def all_of(summary: _Summary) -> list[_Access]:
        if not summary.syncs:
            return summary.head
        return summary.head + summary.tail

    def stmt_For(self, loop: For) -> _Summary:
        if loop.kind is ForKind.THREAD_BINDING:
            return self.thread_loop(loop)
        self.ranges[loop.loop_var] = Range(loop.min, loop.extent)
        inner = self.stmt(loop.body)
        head = _vary(inner.head, loop.loop_var)
        tail = _vary(inner.tail, loop.loop_var)
        body, syncs = inner.stmt, inner.syncs
        # With a barrier in every iteration only the next iteration's head can race with
        # this one's tail: compare them at consecutive values of the loop variable.
        following = _shifted(inner.head, loop.loop_var) if syncs else head
        if self.conflict(inner.tail if syncs else head, following):
            # The next iteration's first accesses race with this one's last: wait at the top.
            body = seq(sync_threads(), body)
            head, syncs = [], True
        runs = isinstance(loop.extent, IntImm) and loop.extent.value > 0
        new = loop.replace(body=body)
        if syncs and runs:
            return _Summary(new, head, tail, True)
        every = _vary(self.all_of(inner), loop.loop_var)
        return _Summary(new, every, list(every))

    def thread_loop(self, loop: For) -> _Summary:
        tag = loop.thread_tag
        if tag.startswith("blockIdx") or tag.startswith("threadIdx"):
            self.rename[loop.loop_var] = self.canonical.setdefault(tag, loop.loop_var)
        if tag.startswith("threadIdx") and isinstance(loop.extent, IntImm):
            self.thread_extent[self.canonical[tag]] = loop.extent.value
        inner = self.stmt(loop.body)
        return _Summary(loop.replace(body=inner.stmt), inner.head, inner.tail, inner.syncs)
