"""Loops annotated ``software_pipeline_stage`` → prologue, steady-state loop and epilogue, with
the buffers passed between stages multi-buffered.

A loop whose body is ``m`` statements (after the allocations at its top) may carry
``software_pipeline_stage = [s_0, ..., s_{m-1}]`` and ``software_pipeline_order`` (a
permutation, TVM's: statement ``i`` takes position ``order[i]`` in the new body; default as
written). Statement ``i`` of iteration ``k`` then runs in step ``k + s_i`` of
``N + max(s)`` steps: with stages
``[0, 0, 1]`` the fetches of tile ``k + 1`` share a step with the compute of tile ``k``. A
buffer allocated in the loop body and read ``d`` stages after it is written gets ``d + 1``
versions (a new leading dimension indexed by ``k % (d + 1)``), so a step never overwrites
what a later stage of an earlier iteration still reads.

Semantics stay those of the loop: every statement of every iteration runs once, each after
everything it depends on. Refused, naming the loop: stage or order lists that do not match
the body; a buffer read at an earlier stage than it is written; a buffer allocated outside
the loop that two stages share (it cannot be multi-buffered); a non-constant extent; a
loop bound to threads. ``software_pipeline_async_stages`` names stages whose copies run
asynchronously on GPUs (``cp.async`` on CUDA sm_80+, through ``lower_async_copy``); elsewhere
they run synchronously.

A pipelined loop inside a pipelined loop (TVM's nested pipelines) is expanded first; its
prologue statements, its loop and its epilogue statements then count as statements of the
outer body (its buffers allocated there) when the outer stage list has one entry for each of
them: the outer pipeline can run the inner prologue of iteration ``k + 1`` (say, the first
fragments of the next tile) before the inner epilogue of iteration ``k``. An outer list with
one entry for the whole inner pipeline keeps it as one statement.

Buffers in registers (``local`` and ``warp`` scopes: each thread reads only what it wrote)
get no extra version where a later stage's reader runs before the earlier stage's writer in
the pipelined step (one stage apart), or where the two touch different versions of a buffer
an inner pipeline multi-buffered (constant leading indices that differ).

Example (stages ``[0, 0, 1]``, 16 iterations)::

    # before                                # after
    for k in range(16):                     A_s = alloc((2, 64, 16)); B_s = ...
        A_s = alloc((64, 16)); ...          fetch_A(0); fetch_B(0)
        fetch_A(k); fetch_B(k)              for k in range(15):
        compute(k)                              fetch_A(k + 1); fetch_B(k + 1); compute(k)
                                            compute(15)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
    IntImm,
    Mutator,
    PrimExpr,
    PrimFunc,
    SeqStmt,
    Stmt,
    Var,
    intrinsics,
    op,
    post_order_visit,
    substitute,
)
from tilewright.ir.dtype import int32
from tilewright.ir.functor import bound_vars

STAGE = "software_pipeline_stage"
ORDER = "software_pipeline_order"
ASYNC = "software_pipeline_async_stages"


class SoftwarePipelineError(ValueError):
    """A ``software_pipeline_*`` annotation the pass cannot honour (the message names the loop)."""


def inject_software_pipeline(func: PrimFunc, *, asynchronous: bool = False) -> PrimFunc:
    """Pipeline every loop annotated ``software_pipeline_stage`` (see the module docstring).

    With ``asynchronous`` (GPU targets), the statements of ``software_pipeline_async_stages``
    are marked ``tw.async_scope`` (``lower_async_copy`` makes their global-to-shared copies
    ``cp.async`` where the target has it), each step closes a copy group, and a statement
    reading what an asynchronous stage wrote first waits for that stage's group. Without it
    the asynchronous stages run synchronously. Run after ``compact_buffer_allocation``
    (buffers still N-d, allocated where they are used).
    """
    return func.with_body(_Pipeliner(asynchronous).visit(func.body))


ASYNC_SCOPE = "tw.async_scope"


class _Pipeliner(Mutator):
    def __init__(self, asynchronous: bool) -> None:
        super().__init__()
        self.asynchronous = asynchronous
        # id(an expanded pipeline) → (it, kept alive; its statements, flat)
        self.expanded: dict[int, tuple[Stmt, list[Stmt]]] = {}

    def visit_For(self, loop: For) -> Stmt:
        loop = self.generic_visit(loop)
        table = dict(loop.annotations)
        if STAGE not in table:
            if ASYNC in table or ORDER in table:
                raise SoftwarePipelineError(
                    f"software pipeline of loop {loop.loop_var.name}: {ORDER} or {ASYNC} "
                    f"without {STAGE}"
                )
            return loop
        pipeline = _Pipeline(loop, table, self.asynchronous, self.expanded)
        result = pipeline.build()
        self.expanded[id(result)] = (result, pipeline.pieces)
        return result


def _ints(loop: For, key: str, value: object) -> list[int]:
    items = value if isinstance(value, tuple | list) else None
    if items is None or not all(isinstance(v, int | IntImm) for v in items):
        raise SoftwarePipelineError(f"loop {loop.loop_var.name}: {key} must be a list of integers")
    return [v.value if isinstance(v, IntImm) else int(v) for v in items]


class _Pipeline:
    def __init__(
        self,
        loop: For,
        table: Mapping[str, object],
        asynchronous: bool,
        expanded: Mapping[int, tuple[Stmt, list[Stmt]]],
    ) -> None:
        self.loop = loop
        self.name = loop.loop_var.name
        if loop.kind not in (ForKind.SERIAL, ForKind.UNROLLED):
            raise self.error(f"a {loop.kind.script_name} loop cannot be pipelined")
        if not isinstance(loop.extent, IntImm):
            raise self.error(f"the extent {loop.extent} is not a constant")
        self.extent = loop.extent.value
        self.allocs: list[Buffer] = []
        body = loop.body
        while isinstance(body, Allocate):
            self.allocs.append(body.buffer)
            body = body.body
        self.stmts = list(body.seq) if isinstance(body, SeqStmt) else [body]
        self.stages = _ints(loop, STAGE, table[STAGE])
        count = len(self.stmts)
        described = str(count)
        self.pieces: list[Stmt] = []
        if len(self.stages) != count and any(id(s) in expanded for s in self.stmts):
            flat = self._flattened(expanded)
            if len(self.stages) == len(flat):
                self.stmts, count = flat, len(flat)
            else:
                described += f" (or, the inner pipelines' steps counted, {len(flat)})"
        if len(self.stages) != count or min(self.stages) < 0:
            raise self.error(
                f"{STAGE} {self.stages} must give a stage >= 0 to each of the {described} "
                "statements of its body"
            )
        positions = _ints(loop, ORDER, table[ORDER]) if ORDER in table else list(range(count))
        if sorted(positions) != list(range(count)):
            raise self.error(f"{ORDER} {positions} is not an order of {count} statements")
        # TVM's meaning: statement i takes position positions[i]; self.order lists the
        # statements in their new order.
        self.order = sorted(range(count), key=positions.__getitem__)
        self.kept = tuple((k, v) for k, v in loop.annotations if k not in (STAGE, ORDER, ASYNC))
        asked = set(_ints(loop, ASYNC, table[ASYNC])) if ASYNC in table else set()
        if asked - set(self.stages):
            raise self.error(f"{ASYNC} names stages {sorted(asked - set(self.stages))} "
                             f"that no statement has ({STAGE} {self.stages})")  # fmt: skip
        self.async_stages = asked if asynchronous else set()
        self.writes = [_accessed(s, stores=True) for s in self.stmts]
        self.reads = [_accessed(s, stores=False) for s in self.stmts]

    def _flattened(self, expanded: Mapping[int, tuple[Stmt, list[Stmt]]]) -> list[Stmt]:
        """The body with each inner pipeline's statements in its place, their buffers
        allocated in the body (added to ``self.allocs``)."""
        flat: list[Stmt] = []
        for stmt in self.stmts:
            if id(stmt) not in expanded:
                flat.append(stmt)
                continue
            inner = stmt
            while isinstance(inner, Allocate):
                self.allocs.append(inner.buffer)
                inner = inner.body
            flat.extend(expanded[id(stmt)][1])
        return flat

    def error(self, message: str) -> SoftwarePipelineError:
        return SoftwarePipelineError(f"software pipeline of loop {self.name}: {message}")

    def build(self) -> Stmt:
        versions = self._versions()
        new = {
            b.data: b.replace(shape=(IntImm(v, b.shape[0].dtype), *b.shape))
            for b in self.allocs
            if (v := versions.get(b.data, 1)) > 1
        }
        counts = {b.data: versions.get(b.data, 1) for b in self.allocs}
        last = max(self.stages)
        steps: list[Stmt] = []
        for step in range(min(last, self.extent + last)):
            steps.extend(self._step(IntImm(step, self.loop.loop_var.dtype), step, new, counts))
        # The statements an outer pipeline counts: without a loop (extent <= last) a no-op
        # stands in its place, so that the count does not depend on the extent.
        self.pieces = [*steps, Evaluate(IntImm(0, int32))]
        if self.extent > last:
            var = Var(self.name, self.loop.loop_var.dtype)
            shifted = op.add(var, IntImm(last, var.dtype)) if last else var
            body = _seq(self._step(shifted, None, new, counts))
            count = IntImm(self.extent - last, var.dtype)
            zero = IntImm(0, var.dtype)
            steps.append(For(var, zero, count, self.loop.kind, body, annotations=self.kept))
            self.pieces[-1] = steps[-1]
        for step in range(max(last, self.extent), self.extent + last):
            epilogue = self._step(IntImm(step, self.loop.loop_var.dtype), step, new, counts)
            steps.extend(epilogue)
            self.pieces.extend(epilogue)
        result = _seq(steps)
        for buffer in reversed(self.allocs):
            result = Allocate(new.get(buffer.data, buffer), result)
        return result

    def _step(
        self,
        step: PrimExpr,
        constant: int | None,
        new: dict[Var, Buffer],
        counts: dict[Var, int],
    ) -> list[Stmt]:
        """The statements of pipeline step ``step`` (a constant in the prologue and epilogue,
        where statements whose iteration falls outside the loop are left out)."""
        out: list[Stmt] = []
        present = [
            i
            for i in self.order
            if constant is None or 0 <= constant - self.stages[i] < self.extent
        ]
        last_async = max(
            (n for n, i in enumerate(present) if self.stages[i] in self.async_stages), default=-1
        )
        committed = False
        covered: int | None = None  # the strongest wait of this step so far, as of now
        for n, i in enumerate(present):
            stage = self.stages[i]
            k = op.sub(step, IntImm(stage, step.dtype)) if stage else step
            iteration = op.add(self.loop.min, k) if not _is_zero(self.loop.min) else k
            # Each copy defines its own loop, let and buffer variables.
            inner = bound_vars(self.stmts[i])
            mapping: dict[Var, PrimExpr] = {v: Var(v.name, v.dtype) for v in inner}
            mapping[self.loop.loop_var] = iteration
            stmt = _Versioned(new, counts, k).visit(substitute(self.stmts[i], mapping))
            wait = self._in_flight(i, committed)
            if wait is not None and (covered is None or wait < covered):
                out.append(intrinsics.CP_ASYNC_WAIT.stmt(IntImm(wait, int32)))
                covered = wait
            if stage in self.async_stages:
                stmt = AttrStmt(IntImm(stage, int32), ASYNC_SCOPE, IntImm(1, int32), stmt)
            out.append(stmt)
            if n == last_async:
                out.append(intrinsics.CP_ASYNC_COMMIT.stmt())
                committed = True
                covered = None if covered is None else covered + 1
        if self.async_stages and not committed:
            out.append(intrinsics.CP_ASYNC_COMMIT.stmt())  # one group per step, even empty
        return out

    def _in_flight(self, i: int, committed: bool) -> int | None:
        """How many copy groups may still be in flight when statement ``i`` starts, so that
        the groups of the asynchronous statements it reads from are complete (None: it reads
        none). Every step commits one group; a producer ``d`` stages earlier committed its
        group ``d`` steps ago (this step's own, when already committed, is one more)."""
        allowed = None
        for p, stage in enumerate(self.stages):
            if stage not in self.async_stages or stage >= self.stages[i]:
                continue
            needed = self.writes[p] & self.reads[i]
            if needed and all(self._waited(p, data, self.stages[i]) for data in needed):
                continue  # a stage between them waited for the group in an earlier step
            if needed:
                count = self.stages[i] - stage - 1 + (1 if committed else 0)
                allowed = count if allowed is None else min(allowed, count)
        return allowed

    def _waited(self, producer: int, data: Var, stage: int) -> bool:
        """Whether a statement at a stage between ``producer``'s and ``stage`` reads ``data``:
        it waited for the producer's group of the same iteration in an earlier step (groups
        complete in order and stay complete)."""
        low = self.stages[producer]
        return any(
            low < self.stages[j] < stage and data in self.reads[j] for j in range(len(self.stmts))
        )

    def _versions(self) -> dict[Var, int]:
        """How many copies each buffer allocated in the body needs; refuses what the pipeline
        would reorder wrongly."""
        local = {b.data for b in self.allocs}
        registers = {b.data for b in self.allocs if b.scope in ("local", "warp")}
        position = {stmt: self.order.index(stmt) for stmt in range(len(self.stmts))}
        writes, reads = self.writes, self.reads
        versions: dict[Var, int] = {}
        for i, written in enumerate(writes):
            for j in range(len(self.stmts)):
                shared = written & (reads[j] | writes[j]) if j != i else set()
                for data in shared:
                    si, sj = self.stages[i], self.stages[j]
                    if data not in local and si != sj:
                        raise self.error(
                            f"buffer {data.name} is allocated outside the loop and shared by "
                            f"stages {min(si, sj)} and {max(si, sj)}: it cannot be multi-buffered"
                        )
                    if si == sj and (position[i] < position[j]) != (i < j):
                        raise self.error(
                            f"{ORDER} puts statements {i} and {j} of stage {si}, which share "
                            f"buffer {data.name}, in the other order"
                        )
                    if data in local and j > i and sj < si:
                        raise self.error(
                            f"buffer {data.name} is written at stage {si} and read at the "
                            f"earlier stage {sj}"
                        )
                    if data in registers and sj > si and self._apart(i, j, data, position):
                        continue
                    if data in local and sj > si:
                        versions[data] = max(versions.get(data, 1), sj - si + 1)
        return versions

    def _apart(self, i: int, j: int, data: Var, position: Mapping[int, int]) -> bool:
        """Statement ``i`` (the earlier stage) cannot clobber what ``j`` reads of the register
        buffer ``data``: ``j`` runs first in the step, one stage later (the writer's later
        iteration comes after it), or the two touch different constant leading indices."""
        if self.stages[j] - self.stages[i] == 1 and position[j] < position[i]:
            return True
        mine, theirs = _leading(self.stmts[i], data), _leading(self.stmts[j], data)
        return mine is not None and theirs is not None and not mine & theirs


def _leading(stmt: Stmt, data: Var) -> set[int] | None:
    """The leading indices with which ``stmt`` touches ``data``, when all are constants."""
    found: set[int] = set()
    constant = True

    def index(first: object) -> None:
        nonlocal constant
        lead = first.indices[0] if first.indices else None  # type: ignore[attr-defined]
        if isinstance(lead, IntImm):
            found.add(lead.value)
        else:
            constant = False

    def visit(node: object) -> None:
        if isinstance(node, BufferLoad | BufferStore) and node.buffer.data is data:
            index(node)
        if isinstance(node, Call):
            for first, _, _ in intrinsics.region_accesses(node):
                if first.buffer.data is data:
                    index(first)

    post_order_visit(stmt, visit)
    return found if constant else None


def _accessed(stmt: Stmt, stores: bool) -> set[Var]:
    found: set[Var] = set()

    def visit(node: object) -> None:
        if stores and isinstance(node, BufferStore):
            found.add(node.buffer.data)
        if not stores and isinstance(node, BufferLoad):
            found.add(node.buffer.data)
        if isinstance(node, Call):  # storage an intrinsic reads or writes by address
            wanted = intrinsics.WRITES if stores else intrinsics.READS
            found.update(
                f.buffer.data for f, _, m in intrinsics.region_accesses(node) if m & wanted
            )

    post_order_visit(stmt, visit)
    return found


def _is_zero(value: PrimExpr) -> bool:
    return isinstance(value, IntImm) and value.value == 0


def _seq(stmts: Sequence[Stmt]) -> Stmt:
    return stmts[0] if len(stmts) == 1 else SeqStmt(tuple(stmts))


class _Versioned(Mutator):
    """Accesses of multi-buffered buffers get the version of iteration ``k`` in front."""

    def __init__(self, new: dict[Var, Buffer], counts: dict[Var, int], k: PrimExpr) -> None:
        super().__init__()
        self.new = new
        self.counts = counts
        self.k = k

    def _index(self, data: Var) -> PrimExpr:
        return op.floormod(self.k, IntImm(self.counts[data], self.k.dtype))

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        indices = self.visit(load.indices)
        buffer = self.new.get(load.buffer.data)
        if buffer is None:
            return load.replace(indices=indices)
        return BufferLoad(buffer, (self._index(buffer.data), *indices))

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        value = self.visit(store.value)
        indices = self.visit(store.indices)
        buffer = self.new.get(store.buffer.data)
        if buffer is None:
            return store.replace(value=value, indices=indices)
        return BufferStore(buffer, value, (self._index(buffer.data), *indices))
