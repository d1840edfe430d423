"""Scheduled PrimFunc → the same, each reduction over threadIdx-bound loops made a thread allreduce.

A reduction block whose reduce iterators are bound through loops bound to ``threadIdx`` is run
by many threads at once; ``B[i] = B[i] + A[i, k]`` there is a race, and its init runs once per
thread. As TVM's ``LowerCrossThreadReduction`` does, the block is replaced by up to four
blocks under the thread-bound reduction loops:

- ``<B>_in_thread_init`` and ``<B>_in_thread`` (only when serial reduction loops remain): each
  thread reduces its own elements into a local ``in_thread_<B>``, starting from the identity;
- ``<B>_cross_thread``: ``T.tvm_thread_allreduce`` combines the threads' values into the local
  ``cross_thread_<B>`` of every thread, under ``T.attr(reducer, "reduce_scope", ...)``;
- ``<B>_write_back``: ``B[i] = cross_thread_<B>[0]`` (combined with the init value when that is
  not the identity), by the thread whose reduction thread indices are all 0 (every thread
  when ``B`` is ``local``: each has its own copy).

``lower_thread_allreduce`` later turns each allreduce into warp shuffles or a shared-memory
tree. What cannot be lowered correctly raises ``CrossThreadReductionError`` naming the block
and the rule, before any code exists.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import NoReturn

from tilewright.arith.region import block_access_regions
from tilewright.ir import (
    Allocate,
    And,
    AttrStmt,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferRegion,
    BufferStore,
    CommReducer,
    Evaluate,
    For,
    ForKind,
    IntImm,
    IterKind,
    IterVar,
    Mutator,
    PrimExpr,
    PrimFunc,
    Range,
    SeqStmt,
    Stmt,
    Var,
    collect_vars,
    decl_buffer,
    intrinsics,
    op,
    seq,
    structural_equal,
    substitute,
)
from tilewright.ir.comm_reducer import MatchedUpdate, ReducerMismatch, match_update
from tilewright.ir.dtype import bool_, dtype

REDUCE_SCOPE = "reduce_scope"  # the AttrStmt key whose node is an allreduce's CommReducer


class CrossThreadReductionError(ValueError):
    """A reduction over thread-bound loops that cannot be lowered correctly (block and rule)."""


def lower_cross_thread_reduction(func: PrimFunc) -> PrimFunc:
    """Make each reduction block reduced over ``threadIdx``-bound loops a thread allreduce.

    Rules (each broken one raises ``CrossThreadReductionError``): reduction loops may be
    bound to ``threadIdx`` only (not ``blockIdx`` or ``vthread``); the block keeps its
    ``T.init()`` (``decompose_reduction`` must not split it off); its update is
    ``B[...] = B[...] op value`` with op one of ``+``, ``*``, ``max``, ``min``; its reduction
    loops are the innermost statements around it and it is the last statement under them; no
    spatial iterator is bound through a reduction loop.

    Args:
        func: a scheduled function (blocks with ``T.init()``), before ``lower_init_block``.

    Example::

        # before                                     # after (abridged)
        for i in T.thread_binding(64, "blockIdx.x"):   for i in T.thread_binding(64, ...):
          for k in T.thread_binding(128, "threadIdx.x"):  for k in T.thread_binding(128, ...):
            with T.block("B"):                              with T.block("B_cross_thread"):
              vi, vk = T.axis.remap("SR", [i, k])             ...tvm_thread_allreduce(
              with T.init():                                      T.uint32(1), A[vi, vk], True,
                B[vi] = T.float32(0)                              cross_thread_B[0], k)
              B[vi] = B[vi] + A[vi, vk]                     with T.block("B_write_back"):
                                                              T.where(k == 0)
                                                              B[vi] = cross_thread_B[0]
    """
    plans = _Finder().find(func.body)
    if not plans:
        return func
    return func.with_body(_Rewriter(plans).visit(func.body))


@dataclass
class _Plan:
    realize: BlockRealize
    loops: list[For]  # the reduction loops, outermost first
    owner: Block | None  # the nearest enclosing block, which allocates the new buffers
    matched: MatchedUpdate


class _Finder:
    """Walks the tree with its ancestors and plans each cross-thread reduction."""

    def __init__(self) -> None:
        self.path: list[Stmt] = []
        self.plans: dict[int, _Plan] = {}  # id(outermost reduction loop) -> plan

    def find(self, body: Stmt) -> dict[int, _Plan]:
        self.walk(body)
        return self.plans

    def walk(self, stmt: Stmt) -> None:
        if isinstance(stmt, BlockRealize):
            self.check(stmt)
        self.path.append(stmt)
        for child in _child_stmts(stmt):
            self.walk(child)
        self.path.pop()

    def check(self, realize: BlockRealize) -> None:
        block = realize.block
        reduce_vars: set[Var] = set()
        spatial_vars: set[Var] = set()
        for iv, value in zip(block.iter_vars, realize.iter_values):
            (reduce_vars if iv.kind is IterKind.REDUCE else spatial_vars).update(
                collect_vars(value)
            )
        loops = [s for s in self.path if isinstance(s, For) and s.loop_var in reduce_vars]
        bound = [loop for loop in loops if loop.kind is ForKind.THREAD_BINDING]
        if not bound:
            return
        name = block.name
        for loop in bound:
            if not loop.thread_tag.startswith("threadIdx"):
                _refuse(
                    name,
                    f"its reduction loop {loop.loop_var.name} is bound to {loop.thread_tag}; "
                    "a reduction can span the threads of one block (threadIdx) only",
                )
        if block.init is None:
            _refuse(
                name,
                "it reduces over thread-bound loops without its T.init(): the init must stay "
                "in the block (do not decompose_reduction across threadIdx-bound loops)",
            )
        shared = [loop.loop_var.name for loop in loops if loop.loop_var in spatial_vars]
        if shared:
            _refuse(name, f"spatial iterators are bound through reduction loops {shared}")
        try:
            assert block.init is not None
            matched = match_update(block.init, block.body)
        except ReducerMismatch as err:
            _refuse(name, f"its combiner is not recognised: {err}")
        if any(v in reduce_vars for v in collect_vars(matched.init)):
            _refuse(name, "its init value depends on a reduction iterator")
        self.check_nest(realize, loops)
        owner = next((s for s in reversed(self.path) if isinstance(s, Block)), None)
        self.plans[id(loops[0])] = _Plan(realize, loops, owner, matched)

    def check_nest(self, realize: BlockRealize, loops: list[For]) -> None:
        """Only reduction loops (and sequences ending on the way down) lie between the
        outermost reduction loop and the block."""
        start = next(i for i, s in enumerate(self.path) if s is loops[0])
        chain = [*self.path[start:], realize]
        names = ", ".join(loop.loop_var.name for loop in loops)
        for parent, child in itertools.pairwise(chain):
            if isinstance(parent, For) and any(parent is loop for loop in loops):
                continue
            if isinstance(parent, SeqStmt) and parent.seq[-1] is child:
                continue
            what = (
                f"loop {parent.loop_var.name}"
                if isinstance(parent, For)
                else "a statement after it"
                if isinstance(parent, SeqStmt)
                else f"a {type(parent).__name__}"
            )
            _refuse(
                realize.block.name,
                f"{what} lies under its reduction loops ({names}); a cross-thread reduction "
                "needs its reduction loops innermost around it and itself last under them",
            )


def _child_stmts(stmt: Stmt) -> list[Stmt]:
    if isinstance(stmt, SeqStmt):
        return list(stmt.seq)
    if isinstance(stmt, BlockRealize):
        return [stmt.block]
    if isinstance(stmt, Block):
        return [s for s in (stmt.init, stmt.body) if s is not None]
    found = []
    for _, value in stmt.field_items():
        if isinstance(value, Stmt):
            found.append(value)
    return found


def _refuse(block: str, rule: str) -> NoReturn:
    raise CrossThreadReductionError(f"block {block!r} cannot be a cross-thread reduction: {rule}")


class _Rewriter(Mutator):
    def __init__(self, plans: dict[int, _Plan]) -> None:
        super().__init__()
        self.plans = plans
        self.allocs: dict[int, list[Buffer]] = {}  # id(owner block) -> its new buffers

    def visit_For(self, loop: For) -> Stmt:
        plan = self.plans.get(id(loop))
        new: Stmt = self.generic_visit(loop)
        if plan is None:
            return new
        assert isinstance(new, For)
        stmt, buffers = _rewrite(new, plan)
        if plan.owner is None:
            for buffer in buffers:
                stmt = Allocate(buffer, stmt)
        else:
            self.allocs.setdefault(id(plan.owner), []).extend(buffers)
        return stmt

    def visit_Block(self, block: Block) -> Stmt:
        new: Block = self.generic_visit(block)
        extra = self.allocs.pop(id(block), [])
        if extra:
            new = new.replace(alloc_buffers=(*new.alloc_buffers, *extra))
        return new


def _rewrite(outer: For, plan: _Plan) -> tuple[Stmt, list[Buffer]]:
    """The statement replacing the outermost reduction loop, and the buffers it uses."""
    block, realize, matched = plan.realize.block, plan.realize, plan.matched
    reducer, dt = matched.reducer, matched.store.value.dtype
    reduce_vars = {loop.loop_var for loop in plan.loops}
    threads = [loop for loop in plan.loops if loop.kind is ForKind.THREAD_BINDING]
    serial = len(threads) < len(plan.loops)
    cross = decl_buffer((1,), dt, f"cross_thread_{block.name}", "local")
    buffers = [cross]
    stmts: list[Stmt] = []
    if serial:
        in_thread = decl_buffer((1,), dt, f"in_thread_{block.name}", "local")
        buffers.append(in_thread)
        stmts.append(_init_block(block.name, in_thread, reducer.identity[0]))
        inner = _normal_block(realize, matched, in_thread, reducer)
        value: PrimExpr = BufferLoad(in_thread, (IntImm(0, dtype("int32")),))
        condition: PrimExpr = IntImm(1, bool_)
        cross_realize = _cross_block(block.name, (), (), value, condition, cross, reducer, threads)
    else:
        inner = None
        ivs, values = block.iter_vars, realize.iter_values
        cross_realize = _cross_block(
            block.name, ivs, values, matched.value, realize.predicate, cross, reducer, threads
        )
    body = _splice(outer, realize, inner if inner is not None else cross_realize, reduce_vars)
    stmts.append(body)
    if inner is not None:
        stmts.append(cross_realize)
    stmts.append(_write_back(plan, cross, threads))
    result = seq(*stmts)
    for loop in reversed(threads):
        result = loop.replace(body=result)
    return result, buffers


def _splice(stmt: Stmt, realize: BlockRealize, new: Stmt, reduce_vars: set[Var]) -> Stmt:
    """``stmt`` with the thread-bound reduction loops on the way to ``realize`` removed and
    ``realize`` replaced by ``new`` (the loop nest was checked by ``check_nest``)."""
    if stmt is realize:
        return new
    if isinstance(stmt, For):
        body = _splice(stmt.body, realize, new, reduce_vars)
        return body if stmt.kind is ForKind.THREAD_BINDING else stmt.replace(body=body)
    assert isinstance(stmt, SeqStmt)
    return seq(*stmt.seq[:-1], _splice(stmt.seq[-1], realize, new, reduce_vars))


def _zero() -> PrimExpr:
    return IntImm(0, dtype("int32"))


def _region(buffer: Buffer) -> BufferRegion:
    return BufferRegion(buffer, (Range(_zero(), IntImm(1, dtype("int32"))),))


def _init_block(name: str, buffer: Buffer, identity: PrimExpr) -> Stmt:
    store = BufferStore(buffer, identity, (_zero(),))
    block = Block(f"{name}_in_thread_init", (), (), (_region(buffer),), store)
    return BlockRealize((), IntImm(1, bool_), block)


def _normal_block(
    realize: BlockRealize, matched: MatchedUpdate, buffer: Buffer, reducer: CommReducer
) -> Stmt:
    own = BufferLoad(buffer, (_zero(),))
    (combined,) = reducer.combine((own,), (matched.value,))
    body = BufferStore(buffer, combined, (_zero(),))
    block = realize.block.replace(name=f"{realize.block.name}_in_thread", init=None, body=body)
    reads, _ = block_access_regions(block.replace(body=Evaluate(matched.value)))
    block = block.replace(reads=reads, writes=(_region(buffer),))
    return realize.replace(block=block)


def _cross_block(
    name: str,
    ivs: tuple[IterVar, ...],
    values: tuple[PrimExpr, ...],
    value: PrimExpr,
    condition: PrimExpr,
    cross: Buffer,
    reducer: CommReducer,
    threads: list[For],
) -> Stmt:
    call = intrinsics.THREAD_ALLREDUCE.call(
        IntImm(1, dtype("uint32")),
        value,
        condition,
        BufferLoad(cross, (_zero(),)),
        *(loop.loop_var for loop in threads),
    )
    scope = intrinsics.REINTERPRET.call(IntImm(0, dtype("uint64")), dtype=dtype("handle"))
    body = AttrStmt(reducer, REDUCE_SCOPE, scope, Evaluate(call))
    probe = Block(name, ivs, (), (), seq(Evaluate(value), Evaluate(condition)))
    reads, _ = block_access_regions(probe)
    block = Block(f"{name}_cross_thread", ivs, reads, (_region(cross),), body)
    return BlockRealize(values, IntImm(1, bool_), block)


def _write_back(plan: _Plan, cross: Buffer, threads: list[For]) -> Stmt:
    block, realize, matched = plan.realize.block, plan.realize, plan.matched
    reduce_vars = {loop.loop_var for loop in plan.loops}
    ivs: list[IterVar] = []
    values: list[PrimExpr] = []
    fresh: dict[Var, PrimExpr] = {}
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.kind is IterKind.REDUCE:
            continue
        var = Var(iv.var.name, iv.var.dtype)
        fresh[iv.var] = var
        ivs.append(iv.replace(var=var))
        values.append(value)
    result: PrimExpr = BufferLoad(cross, (_zero(),))
    init = matched.init
    if not structural_equal(init, matched.reducer.identity[0]):
        (result,) = matched.reducer.combine((substitute(init, fresh),), (result,))
    store = matched.store
    indices = tuple(substitute(i, fresh) for i in store.indices)
    body = BufferStore(store.buffer, result, indices)
    # Clauses of the predicate over spatial loops only still decide whether the row exists.
    kept = [c for c in _conjuncts(realize.predicate) if not reduce_vars & set(collect_vars(c))]
    if store.buffer.scope != "local":
        kept += [op.eq(loop.loop_var, IntImm(0, loop.loop_var.dtype)) for loop in threads]
    predicate: PrimExpr = IntImm(1, bool_)
    for clause in kept:
        predicate = clause if _is_true(predicate) else op.logical_and(predicate, clause)
    new = Block(f"{block.name}_write_back", tuple(ivs), (), (), body)
    reads, writes = block_access_regions(new)
    new = new.replace(reads=reads, writes=writes)
    return BlockRealize(tuple(values), predicate, new)


def _conjuncts(e: PrimExpr) -> list[PrimExpr]:
    if isinstance(e, And):
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [] if _is_true(e) else [e]


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.dtype.is_bool and e.value == 1
