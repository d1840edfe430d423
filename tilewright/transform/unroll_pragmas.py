"""Loop nest with ``pragma_auto_unroll_max_step`` / ``pragma_unroll_explicit`` loop annotations →
the small loops under them unrolled (written out, or marked ``T.unroll``), the annotations gone.

The auto-scheduler annotates an outer loop (``sch.annotate(loop, "pragma_auto_unroll_max_step",
64)``) to ask that every loop inside it (itself included) be unrolled when that stays cheap, as
TVM's ``UnrollLoop`` pass does. Counting bottom-up, a statement (store or evaluate) is one step;
a sequence adds its parts' steps; a loop that is unrolled multiplies its body's steps by its
extent. A serial loop is unrolled when its extent is constant, nothing inside it is a loop that
stays a loop, it sits on at most ``MAX_DEPTH`` unrolled loops, and extent times steps is at
most ``max_step``. A ``T.unroll`` loop counts as unrolled. Loops bound to threads and
vectorized loops are neither unrolled nor in the way (a vectorized loop is one vector
statement); a parallel loop, or a loop of symbolic extent, stays a loop. With
``pragma_unroll_explicit`` 1 (the default, as in TVM) the unrolled loops are written out,
iteration by iteration; with 0 they become ``T.unroll`` loops, which code generation prints
with ``#pragma unroll`` (``#pragma GCC unroll N`` in C) for the compiler to unroll.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.ir import (
    Allocate,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
    substitute,
)
from tilewright.ir.stmt import AttrValue, attrs
from tilewright.transform.unroll_loops import MAX_UNROLLED_ITERATIONS, write_out

MAX_STEP_KEY = "pragma_auto_unroll_max_step"
EXPLICIT_KEY = "pragma_unroll_explicit"
MAX_DEPTH = 8  # unrolled loops nested deeper than this are not unrolled (TVM's auto_max_depth)


def apply_unroll_pragmas(func: PrimFunc) -> PrimFunc:
    """Unroll the loops under each ``pragma_auto_unroll_max_step`` annotation, and drop the
    two pragma annotations from every loop.

    Args:
        func: a function without blocks (after ``lower_blocks``); typically after
            ``flatten_buffers``, before ``simplify``, which folds the substituted indices.

    Raises:
        ValueError: naming the loop whose pragma value is not an integer (or is negative).

    Example::

        # before
        for i in T.serial(4, annotations={"pragma_auto_unroll_max_step": 16,
                                          "pragma_unroll_explicit": 0}):
            for j in range(4):              # 4 x 1 step: unrolled; then i: 4 x 4 <= 16 too
                C[i * 4 + j] = A[i * 4 + j]
        # after
        for i in T.unroll(4):
            for j in T.unroll(4):
                C[i * 4 + j] = A[i * 4 + j]
    """
    body, _ = _Unroller().visit(func.body, None)
    return func if body is func.body else func.with_body(body)


@dataclass(frozen=True)
class _Scope:
    max_step: int
    explicit: bool


@dataclass(frozen=True)
class _Count:
    steps: int = 0  # statements run per execution, through the unrolled loops inside
    blocked: bool = False  # some loop inside stays a loop
    depth: int = 0  # unrolled loops nested inside

    def then(self, other: _Count) -> _Count:
        return _Count(
            self.steps + other.steps, self.blocked or other.blocked, max(self.depth, other.depth)
        )


class _Unroller:
    def visit(self, stmt: Stmt, scope: _Scope | None) -> tuple[Stmt, _Count]:
        if isinstance(stmt, BufferStore | Evaluate):
            return stmt, _Count(steps=1)
        if isinstance(stmt, SeqStmt):
            parts, total = [], _Count()
            for s in stmt.seq:
                new, count = self.visit(s, scope)
                parts.append(new)
                total = total.then(count)
            changed = any(a is not b for a, b in zip(parts, stmt.seq, strict=True))
            return (seq(*parts) if changed else stmt), total
        if isinstance(stmt, IfThenElse):
            then, count = self.visit(stmt.then_case, scope)
            orelse = stmt.else_case
            if orelse is not None:
                orelse, other = self.visit(orelse, scope)
                count = count.then(other)
            return stmt.replace(then_case=then, else_case=orelse), count
        if isinstance(stmt, LetStmt | Allocate | AttrStmt):
            body, count = self.visit(stmt.body, scope)
            return stmt.replace(body=body), count
        if isinstance(stmt, For):
            return self.visit_for(stmt, scope)
        return stmt, _Count()

    def visit_for(self, loop: For, scope: _Scope | None) -> tuple[Stmt, _Count]:
        annotations = dict(loop.annotations)
        stripped = MAX_STEP_KEY in annotations or EXPLICIT_KEY in annotations
        if stripped:
            outer = scope or _Scope(0, True)
            max_step = annotations.pop(MAX_STEP_KEY, outer.max_step)
            explicit = annotations.pop(EXPLICIT_KEY, outer.explicit)
            scope = _Scope(
                _integer(loop, MAX_STEP_KEY, max_step), bool(_integer(loop, EXPLICIT_KEY, explicit))
            )
            loop = loop.replace(annotations=attrs(annotations))
        body, count = self.visit(loop.body, scope)
        loop = loop.replace(body=body)
        if loop.kind in (ForKind.THREAD_BINDING, ForKind.VECTORIZED):
            return loop, count
        extent = loop.extent.value if isinstance(loop.extent, IntImm) else None
        if extent is None or loop.kind is ForKind.PARALLEL:
            return loop, _Count(count.steps, True, count.depth)
        if loop.kind is ForKind.SERIAL and (
            scope is None
            or count.blocked
            or count.depth > MAX_DEPTH
            or extent * count.steps > scope.max_step
        ):
            # A loop of extent one that only stayed for its pragma goes, as inline_unit_loops
            # would have taken it.
            if stripped and not loop.annotations and _runs_once(loop):
                return substitute(loop.body, {loop.loop_var: loop.min}), count
            return loop, _Count(count.steps, True, count.depth)
        # Unrolled: a T.unroll loop anywhere, or a serial loop that the pragma picks.
        unrolled = _Count(count.steps * extent, count.blocked, count.depth + 1)
        if scope is None:
            return loop, unrolled
        if scope.explicit and extent > 0:
            limit = max(MAX_UNROLLED_ITERATIONS, scope.max_step)
            written = write_out(loop, limit)
            if written is not None:
                return written, unrolled
        return loop.replace(kind=ForKind.UNROLLED), unrolled


def _runs_once(loop: For) -> bool:
    return isinstance(loop.extent, IntImm) and loop.extent.value == 1


def _integer(loop: For, key: str, value: AttrValue) -> int:
    if isinstance(value, IntImm):
        value = value.value
    if isinstance(value, bool | int) and value >= 0:
        return int(value)
    raise ValueError(
        f"loop {loop.loop_var.name}: annotation {key} must be a non-negative integer, got {value!r}"
    )
