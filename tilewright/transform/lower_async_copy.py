"""``tw.async_scope`` statements (a pipeline's asynchronous stages) → ``cp.async`` copies.

``inject_software_pipeline`` marks the statements of asynchronous stages and places the copy
groups' commits and waits. On CUDA targets of sm_80 and newer, this pass turns each store in
a marked statement that copies 4, 8 or 16 bytes from global to shared memory (after
``lower_vectorized``: a scalar or a vector of lanes) into ``cp.async``; any other store stays
as it is (synchronous, so already complete at the wait). A copy under a guard (``if c:``, a
fetch the threads do not divide) becomes a predicated ``cp.async`` that reads nothing where
``c`` is false; a padded one (``if_then_else(c, A[j], 0)``) also stores zeros there. Their
addresses fall back to the buffers' first elements where ``c`` is false, so that none lies
outside a buffer. A thread's wait covers its own copies only, so a barrier follows each
wait: the next stage reads what other threads copied (a barrier just before a wait moves
after it).
On other targets the marks and commits are dropped, every copy is synchronous and each wait
leaves its barrier.
Run after ``inject_thread_sync``, which then saw the copies as plain stores and each wait
as a barrier.

Example::

    # before (CUDA sm_90)                               # after
    attr [tw.async_scope] A_shared[r] = A[r'] (float4)  cp_async(&A_shared[b], &A[b'], 16)
    cp_async_commit_group()                             cp_async_commit_group()
    cp_async_wait_group(1)                              cp_async_wait_group(1); sync_threads()
"""

from __future__ import annotations

from tilewright.ir import (
    AttrStmt,
    Broadcast,
    BufferLoad,
    BufferStore,
    Call,
    Evaluate,
    FloatImm,
    IfThenElse,
    IntImm,
    Mutator,
    PrimExpr,
    PrimFunc,
    Ramp,
    SeqStmt,
    Stmt,
    intrinsics,
)
from tilewright.ir.dtype import int32
from tilewright.target import Target
from tilewright.transform.inject_software_pipeline import ASYNC_SCOPE


def lower_async_copy(func: PrimFunc, target: Target | None = None) -> PrimFunc:
    """Lower a function's asynchronous pipeline stages for ``target`` (see the module)."""
    return func.with_body(_Lowering(supports_cp_async(target)).visit(func.body))


def supports_cp_async(target: Target | None) -> bool:
    """Whether ``target`` has ``cp.async``: an NVIDIA architecture ``sm_80`` or newer (other
    kinds name no ``sm_`` architecture)."""
    arch = target.arch if target is not None else ""
    digits = "".join(c for c in arch.removeprefix("sm_") if c.isdigit())
    return arch.startswith("sm_") and bool(digits) and int(digits) >= 80


class _Lowering(Mutator):
    def __init__(self, cp_async: bool) -> None:
        super().__init__()
        self.cp_async = cp_async
        self.inside = False

    def visit_AttrStmt(self, stmt: AttrStmt) -> Stmt:
        if stmt.key != ASYNC_SCOPE:
            return self.generic_visit(stmt)
        outer, self.inside = self.inside, True
        body = self.visit(stmt.body)
        self.inside = outer
        return body

    def visit_Evaluate(self, stmt: Evaluate) -> Stmt:
        if intrinsics.CP_ASYNC_WAIT.matches(stmt):
            # inject_thread_sync counted a barrier here (the copies ran as plain stores).
            if not self.cp_async:
                return intrinsics.SYNC_THREADS.stmt()
            return SeqStmt((stmt, intrinsics.SYNC_THREADS.stmt()))
        if intrinsics.CP_ASYNC_COMMIT.matches(stmt) and not self.cp_async:
            return Evaluate(IntImm(0, int32))
        return stmt

    def visit_SeqStmt(self, stmt: SeqStmt) -> Stmt:
        items: list[Stmt] = []
        for item in self.visit(stmt.seq):
            parts = item.seq if isinstance(item, SeqStmt) else (item,)
            for part in parts:
                # The barrier after a wait makes one that follows it redundant, and one just
                # before it too: between them the wait touches no memory but this thread's
                # own copies, so the later barrier orders everything the earlier one did.
                if items and _is_sync(part) and _is_sync(items[-1]):
                    continue
                if items and _is_sync(items[-1]) and intrinsics.CP_ASYNC_WAIT.matches(part):
                    items.pop()
                items.append(part)
        return items[0] if len(items) == 1 else SeqStmt(tuple(items))

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        if not (self.inside and self.cp_async):
            return self.generic_visit(store)
        copy = _as_cp_async(store)
        return copy if copy is not None else store

    def visit_IfThenElse(self, stmt: IfThenElse) -> Stmt:
        # A guarded copy (a fetch whose extent the threads do not divide): cp.async under
        # the guard, which reads nothing where it is false.
        then = stmt.then_case
        if (
            self.inside
            and self.cp_async
            and stmt.else_case is None
            and isinstance(then, BufferStore)
        ):
            copy = _as_cp_async(then, stmt.condition, fill=False)
            if copy is not None:
                return copy
        return self.generic_visit(stmt)


def _is_sync(stmt: Stmt) -> bool:
    return isinstance(stmt, Evaluate) and intrinsics.SYNC_THREADS.matches(stmt)


def _as_cp_async(
    store: BufferStore, predicate: PrimExpr | None = None, fill: bool = False
) -> Stmt | None:
    load = store.value
    if predicate is None and isinstance(load, Call) and _is_guarded_load(load):
        # shared[i] = if_then_else(c, global[j], 0): copy where c holds, zeros elsewhere.
        predicate, load, fill = load.args[0], load.args[1], True
    if not isinstance(load, BufferLoad) or len(store.indices) != 1 or len(load.indices) != 1:
        return None
    if not store.buffer.scope.startswith("shared") or not load.buffer.scope.startswith("global"):
        return None
    if load.buffer.dtype != store.buffer.dtype:
        return None
    dst, src = store.indices[0], load.indices[0]
    lanes = _unit_lanes(dst)
    if lanes is None or _unit_lanes(src) != lanes:
        return None
    size = lanes * store.buffer.dtype.bytes
    if size not in (4, 8, 16):
        return None
    base_dst = dst.base if isinstance(dst, Ramp) else dst
    base_src = src.base if isinstance(src, Ramp) else src
    args = [
        intrinsics.ADDRESS_OF.call(BufferLoad(store.buffer, (base_dst,))),
        intrinsics.ADDRESS_OF.call(BufferLoad(load.buffer, (base_src,))),
        IntImm(size, int32),
    ]
    if predicate is not None:
        if predicate.dtype.lanes != 1:
            return None
        # Where the predicate is false the source (and, for a guarded store, the
        # destination) may lie outside its buffer: name the buffer's first element instead,
        # so that no address outside a buffer is formed.
        guarded = [(1, load.buffer, base_src)] + ([] if fill else [(0, store.buffer, base_dst)])
        for position, buffer, base in guarded:
            first = intrinsics.ADDRESS_OF.call(BufferLoad(buffer, (IntImm(0, base.dtype),)))
            args[position] = intrinsics.IF_THEN_ELSE.call(predicate, args[position], first)
        args += [predicate, IntImm(int(fill), int32)]
    return intrinsics.CP_ASYNC.stmt(*args)


def _is_guarded_load(value: PrimExpr) -> bool:
    """``if_then_else(c, load, 0)`` with a scalar condition and a zero (or zeros) otherwise."""
    if not intrinsics.IF_THEN_ELSE.matches(value):
        return False
    condition, _, other = value.args  # type: ignore[attr-defined]
    if isinstance(other, Broadcast):
        other = other.value
    zero = isinstance(other, FloatImm | IntImm) and other.value == 0
    return zero and condition.dtype.lanes == 1


def _unit_lanes(index: PrimExpr) -> int | None:
    """The lanes of a scalar index (1) or of a stride-1 ramp; None otherwise."""
    if isinstance(index, Ramp):
        stride = index.stride
        return index.lanes if isinstance(stride, IntImm) and stride.value == 1 else None
    return 1 if index.dtype.lanes == 1 else None
