"""Flat GPU PrimFunc with ``tvm_thread_allreduce`` calls → warp shuffles and shared-memory trees.

``lower_cross_thread_reduction`` leaves each cross-thread reduction as an allreduce call under
``T.attr(reducer, "reduce_scope", ...)``: every thread of the block brings a value, and each
thread of a group (the threads that differ only in the reduction's thread indices) gets the
combination of its group's values. This pass writes it out for the target's warp size:

- groups of ``n <= warp`` consecutive lanes (``n`` dividing the warp): a butterfly of
  ``tw.warp_shuffle_xor`` (``__shfl_xor_sync``) over ``log2(n)`` steps;
- groups of ``n`` consecutive threads, ``n`` a multiple of the warp: a butterfly within each
  warp, each warp's value to shared memory, a barrier, and a butterfly over those values in
  every warp, so that every thread ends with the group's result;
- anything else (no shuffles on the target, non-power-of-two groups, a reduction over
  ``threadIdx.y`` under a spatial ``threadIdx.x``): a tree in shared memory, halving the live
  slots with a barrier after each step (the first step folds a non-power-of-two count).

A thread whose condition is false brings the reducer's identity. Raises
``ThreadAllreduceError`` where the threads could not all reach the allreduce together.
"""

from __future__ import annotations

import math

from tilewright.arith import Analyzer
from tilewright.ir import (
    Allocate,
    AttrStmt,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    CommReducer,
    Evaluate,
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
    collect_vars,
    decl_buffer,
    intrinsics,
    op,
    pre_order_visit,
    seq,
)
from tilewright.ir.dtype import dtype
from tilewright.ir.intrinsics import sync_threads
from tilewright.target import Target
from tilewright.transform.device_kernels import BLOCK_TAGS
from tilewright.transform.lower_cross_thread_reduction import REDUCE_SCOPE

_INT = dtype("int32")
_FULL_MASK = 0xFFFFFFFF


class ThreadAllreduceError(ValueError):
    """An allreduce that cannot be written out correctly (the message says why)."""


def lower_thread_allreduce(func: PrimFunc, target: Target | str) -> PrimFunc:
    """Replace each allreduce by shuffles and shared memory for ``target``'s warp size.

    Args:
        func: a flattened GPU function (after ``flatten_buffers``), thread loops kept.
        target: its target; ``thread_warp_size`` > 1 enables warp shuffles (CUDA, Metal).

    Example::

        # before (128 threads of one block)        # after, warp size 32 (abridged)
        with T.attr(T.comm_reducer(lambda x, y:      red_acc[0] = A[i * 128 + k]
                x + y, [T.float32(0.0)]), ...):      ... 5 shuffle steps: red_acc[0] = a + b
            T.evaluate(T.tvm_thread_allreduce(       if k % 32 == 0: red_buf[k // 32] = ...
                T.uint32(1), A[i * 128 + k],         T.evaluate(T.call_intrin(... sync ...))
                T.bool(True), cross[0], k))          ... 2 shuffle steps over 4 warp values
                                                     cross[0] = red_acc[0]
    """
    warp = Target(target).thread_warp_size
    return func.with_body(_Lowerer(warp).visit(func.body))


class _Lowerer(Mutator):
    def __init__(self, warp: int) -> None:
        super().__init__()
        self.warp = warp
        self.loops: list[For] = []  # enclosing thread-bound loops
        self.extents: dict[str, PrimExpr] = {}  # the kernel's thread tags
        self.conditions: list[PrimExpr] = []  # enclosing ifs inside the kernel

    def visit_For(self, loop: For) -> Stmt:
        if loop.kind is not ForKind.THREAD_BINDING:
            return self.generic_visit(loop)
        outermost = not self.loops
        if outermost:
            self.extents = _extents(loop)
            self.conditions = []
        self.loops.append(loop)
        try:
            return self.generic_visit(loop)
        finally:
            self.loops.pop()

    def visit_IfThenElse(self, stmt: IfThenElse) -> Stmt:
        self.conditions.append(stmt.condition)
        try:
            return self.generic_visit(stmt)
        finally:
            self.conditions.pop()

    def visit_Evaluate(self, stmt: Evaluate) -> Stmt:
        if intrinsics.THREAD_ALLREDUCE.matches(stmt):
            raise ThreadAllreduceError(
                "tvm_thread_allreduce needs its combiner: put it under "
                'T.attr(T.comm_reducer(...), "reduce_scope", ...)'
            )
        return stmt

    def visit_AttrStmt(self, stmt: AttrStmt) -> Stmt:
        if stmt.key != REDUCE_SCOPE or not isinstance(stmt.node, CommReducer):
            return self.generic_visit(stmt)
        body = stmt.body
        if not (isinstance(body, Evaluate) and intrinsics.THREAD_ALLREDUCE.matches(body)):
            raise ThreadAllreduceError("a reduce_scope attribute holds one tvm_thread_allreduce")
        assert isinstance(body.value, Call)
        return _Allreduce(stmt.node, body.value, self).lower()


class _Allreduce:
    """One allreduce call and what the kernel around it says about its threads."""

    def __init__(self, reducer: CommReducer, call: Call, where: _Lowerer) -> None:
        self.reducer = reducer
        self.warp = where.warp
        args = call.args
        count = args[0]
        if not isinstance(count, IntImm) or len(args) < 2 * count.value + 2:
            raise ThreadAllreduceError(f"malformed tvm_thread_allreduce call {call}")
        n = count.value
        if len(reducer.lhs) != n:
            raise ThreadAllreduceError(f"{n} values for a reducer of {len(reducer.lhs)}")
        self.values = args[1 : 1 + n]
        self.condition = args[1 + n]
        results = args[2 + n : 2 + 2 * n]
        if not all(isinstance(r, BufferLoad) for r in results):
            raise ThreadAllreduceError("each allreduce result is a buffer element")
        self.results = [r for r in results if isinstance(r, BufferLoad)]
        by_var = {loop.loop_var: loop for loop in where.loops}
        # Index expressions are simplified over the thread indices' ranges as they are built.
        self.analyzer = Analyzer()
        for enclosing in where.loops:
            self.analyzer.bind(enclosing.loop_var, Range(enclosing.min, enclosing.extent))
        reduce_loops: list[For] = []
        for var in args[2 + 2 * n :]:
            found = by_var.get(var) if isinstance(var, Var) else None
            if found is None or not found.thread_tag.startswith("threadIdx"):
                raise ThreadAllreduceError(
                    f"allreduce over {var}, which is not an enclosing threadIdx-bound loop"
                )
            reduce_loops.append(found)
        reduce_tags = {loop.thread_tag for loop in reduce_loops}
        if len(reduce_tags) != len(reduce_loops):
            raise ThreadAllreduceError("an allreduce names one thread axis twice")
        # Each thread axis as (loop variable, extent), x first; extent-1 axes drop out.
        self.axes: dict[str, tuple[PrimExpr, int]] = {}
        for tag in BLOCK_TAGS:
            extent = where.extents.get(tag)
            if extent is None:
                continue
            if not isinstance(extent, IntImm):
                raise ThreadAllreduceError(f"{tag} has symbolic extent {extent}")
            loop = next((lp for lp in reversed(where.loops) if lp.thread_tag == tag), None)
            if loop is None:  # launched along tag, yet the allreduce is outside its loop
                if extent.value > 1:
                    raise ThreadAllreduceError(
                        f"{tag} (extent {extent.value}) does not enclose the allreduce: "
                        "threads along it would reduce together as one"
                    )
                continue
            if extent.value > 1:
                self.axes[tag] = (self.simplify(op.sub(loop.loop_var, loop.min)), extent.value)
        thread_vars = {loop.loop_var for loop in where.loops if loop.thread_tag in BLOCK_TAGS}
        for cond in where.conditions:
            if thread_vars & set(collect_vars(cond)):
                raise ThreadAllreduceError(
                    f"the allreduce is under `if {cond}`, which threads of one block decide "
                    "differently; every thread of the block must reach it"
                )
        self.reduce_tags = [t for t in BLOCK_TAGS if t in reduce_tags and t in self.axes]
        self.group_tags = [t for t in BLOCK_TAGS if t in self.axes and t not in reduce_tags]
        self.n = math.prod(self.axes[t][1] for t in self.reduce_tags)
        self.groups = math.prod(self.axes[t][1] for t in self.group_tags)

    # -- thread indices -----------------------------------------------------------------------
    def simplify(self, e: PrimExpr) -> PrimExpr:
        return self.analyzer.simplify(e)

    def linear(self, tags: list[str]) -> PrimExpr:
        index: PrimExpr = IntImm(0, _INT)
        stride = 1
        for tag in tags:
            var, extent = self.axes[tag]
            index = op.add(index, op.mul(var, stride))
            stride *= extent
        return self.simplify(index)

    @property
    def contiguous(self) -> bool:
        """Whether each group is a run of ``n`` consecutive threads (reduce axes innermost)."""
        order = [t for t in BLOCK_TAGS if t in self.axes]
        return order[: len(self.reduce_tags)] == self.reduce_tags

    # -- the lowering ---------------------------------------------------------------------------
    def lower(self) -> Stmt:
        accs = [decl_buffer((1,), v.dtype, "red_acc", "local") for v in self.values]
        start = [
            v if _is_true(self.condition) else op.if_then_else(self.condition, v, ident)
            for v, ident in zip(self.values, self.reducer.identity)
        ]
        steps: list[Stmt] = [BufferStore(a, s, (_zero(),)) for a, s in zip(accs, start)]
        shared: list[Buffer] = []
        warp = self.warp
        if self.n == 1:
            pass
        elif warp > 1 and warp <= 32 and self.contiguous and self.n <= warp and warp % self.n == 0:
            steps.append(self.butterfly(accs, self.n, self.mask()))
        elif warp > 1 and warp <= 32 and self.contiguous and self.n % warp == 0:
            shared = [
                decl_buffer((self.groups * (self.n // warp),), a.dtype, "red_buf", "shared")
                for a in accs
            ]
            steps.append(self.two_stage(accs, shared))
        else:
            shared = [
                decl_buffer((self.groups * self.n,), a.dtype, "red_buf", "shared") for a in accs
            ]
            steps.append(self.tree(accs, shared))
        for result, acc in zip(self.results, accs):
            steps.append(BufferStore(result.buffer, _load(acc), result.indices))
        body = seq(*steps)
        for buffer in reversed([*accs, *shared]):
            body = Allocate(buffer, body)
        return body

    def mask(self) -> PrimExpr:
        """The lanes of this thread's warp that exist (all of them unless the block's thread
        count is not a multiple of the warp)."""
        total = self.n * self.groups
        rest = total % self.warp
        full = IntImm(_FULL_MASK, dtype("uint32"))
        if rest == 0:
            return full
        partial = IntImm((1 << rest) - 1, dtype("uint32"))
        if total < self.warp:
            return partial
        last = self.simplify(op.eq(op.floordiv(self.tid(), self.warp), total // self.warp))
        return op.select(last, partial, full)

    def tid(self) -> PrimExpr:
        return self.linear([t for t in BLOCK_TAGS if t in self.axes])

    def butterfly(self, accs: list[Buffer], width: int, mask: PrimExpr) -> Stmt:
        """Every lane of each aligned run of ``width`` lanes gets the run's combination."""
        steps = []
        offset = width // 2
        while offset >= 1:
            mine = [Var("red_mine", a.dtype) for a in accs]
            theirs = [Var("red_other", a.dtype) for a in accs]
            combined = self.reducer.combine(tuple(mine), tuple(theirs))
            step: Stmt = seq(*(BufferStore(a, c, (_zero(),)) for a, c in zip(accs, combined)))
            for var, other in reversed(list(zip(mine, theirs))):
                shuffle = intrinsics.WARP_SHUFFLE_XOR.call(
                    mask, var, IntImm(offset, _INT), IntImm(self.warp, _INT)
                )
                step = LetStmt(other, shuffle, step)
            for var, acc in reversed(list(zip(mine, accs))):
                step = LetStmt(var, _load(acc), step)
            steps.append(step)
            offset //= 2
        return seq(*steps)

    def two_stage(self, accs: list[Buffer], shared: list[Buffer]) -> Stmt:
        warp = self.warp
        full = IntImm(_FULL_MASK, dtype("uint32"))
        per_group = self.n // warp
        tid = self.tid()
        lane = self.simplify(op.floormod(tid, warp))
        warp_id = self.simplify(op.floordiv(tid, warp))
        leader = IfThenElse(
            self.simplify(op.eq(lane, 0)),
            seq(*(BufferStore(s, _load(a), (warp_id,)) for s, a in zip(shared, accs))),
        )
        width = 1 << (per_group - 1).bit_length()  # the power of two covering the warps
        slot = self.simplify(op.floormod(lane, width)) if width < warp else lane
        group = op.floordiv(tid, self.n)
        index = self.simplify(op.add(op.mul(group, per_group), slot))
        gather = []
        for s, a, ident in zip(shared, accs, self.reducer.identity):
            value: PrimExpr = BufferLoad(s, (index,))
            if per_group < width:
                value = op.if_then_else(self.simplify(op.lt(slot, per_group)), value, ident)
            gather.append(BufferStore(a, value, (_zero(),)))
        return seq(
            self.butterfly(accs, warp, full),
            leader,
            sync_threads(),
            *gather,
            self.butterfly(accs, width, full),
        )

    def tree(self, accs: list[Buffer], shared: list[Buffer]) -> Stmt:
        n = self.n
        r = self.linear(self.reduce_tags)
        base = self.simplify(op.mul(self.linear(self.group_tags), n))
        mine = self.simplify(op.add(base, r))
        steps: list[Stmt] = [BufferStore(s, _load(a), (mine,)) for s, a in zip(shared, accs)]
        steps.append(sync_threads())
        offset = 1 << ((n - 1).bit_length() - 1)  # the largest power of two below n
        while offset >= 1:
            limit = min(offset, n - offset)  # slots r < limit take slot r + offset in
            left = [Var("red_mine", s.dtype) for s in shared]
            right = [Var("red_other", s.dtype) for s in shared]
            combined = self.reducer.combine(tuple(left), tuple(right))
            step: Stmt = seq(*(BufferStore(s, c, (mine,)) for s, c in zip(shared, combined)))
            far = self.simplify(op.add(mine, offset))
            for var, s in reversed(list(zip(right, shared))):
                step = LetStmt(var, BufferLoad(s, (far,)), step)
            for var, s in reversed(list(zip(left, shared))):
                step = LetStmt(var, BufferLoad(s, (mine,)), step)
            steps.append(IfThenElse(self.simplify(op.lt(r, limit)), step))
            steps.append(sync_threads())
            offset //= 2
        for s, a in zip(shared, accs):
            steps.append(BufferStore(a, BufferLoad(s, (base,)), (_zero(),)))
        return seq(*steps)


def _extents(root: For) -> dict[str, PrimExpr]:
    """The first extent of each thread tag in a kernel (verify_gpu_code checks they agree)."""
    found: dict[str, PrimExpr] = {}

    def visit(node: object) -> bool:
        if isinstance(node, For) and node.kind is ForKind.THREAD_BINDING:
            found.setdefault(node.thread_tag, node.extent)
        return True

    pre_order_visit(root, visit)
    return found


def _zero() -> PrimExpr:
    return IntImm(0, _INT)


def _load(buffer: Buffer) -> PrimExpr:
    return BufferLoad(buffer, (_zero(),))


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.dtype.is_bool and e.value == 1
