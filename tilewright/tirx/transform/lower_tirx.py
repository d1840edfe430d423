"""``LowerTIRx``: a module with tile programs → plain TIR the GPU pipeline understands.

Input: functions holding ``T.device_entry()``, execution-scope ids (``T.cta_id``,
``T.warpgroup_id``, ``T.lane_id``, ...), tile primitives (``Tx.warp.copy``, ...),
``T.cuda.cta_sync()`` and buffers with layouts. Output: the kernel body inside
``blockIdx.x`` / ``threadIdx.x`` thread-binding loops, scope ids as ``LetStmt`` of
thread-index expressions, each tile op replaced by the statement of the variant dispatch
chose, barriers as ``tw.sync_threads()`` and laid-out buffers as flat 1-D buffers indexed
through their layouts.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import cast

from tilewright.ir import (
    Block,
    Buffer,
    BufferLoad,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IRModule,
    LetStmt,
    Mutator,
    Node,
    PrimExpr,
    PrimFunc,
    Stmt,
    Var,
    collect_vars,
    op,
    pre_order_visit,
)
from tilewright.ir.dtype import int32
from tilewright.ir.intrinsics import CTA_SYNC, sync_threads
from tilewright.ir.tile import (
    WARP_SIZE,
    WARPGROUP_SIZE,
    DeviceEntry,
    ScopeId,
    TileOp,
)
from tilewright.layout.shard import MEMORY
from tilewright.target import Target
from tilewright.tirx.dispatch import Decision, ExecContext, dispatch
from tilewright.tirx.operand import buffer_layout, constant_shape, flat_view
from tilewright.tirx.ops import PRIMITIVES

_BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")


class TIRxError(ValueError):
    """A tile program that cannot be lowered: a bad launch shape or a misplaced tile op."""


@dataclass
class LowerTIRx:
    """The pass object: ``LowerTIRx()(mod)``; ``decisions`` lists each op's chosen variant.

    Args:
        target: the target dispatch predicates see (a ``Target`` or its spelling); by default
            ``tilewright.target.Target.current()``, as TVM's pass reads it (``tw.build``
            passes its target explicitly).

    Example::

        >>> lower = LowerTIRx("cuda")
        >>> lowered = lower(mod)
        >>> [(d.variant, d.notes["vec"]) for d in lower.decisions]
        [('gmem_smem', 4), ('gmem_smem', 4)]
    """

    target: Target | str | None = None
    decisions: list[Decision] = field(default_factory=list)

    def __call__(self, mod: IRModule | PrimFunc) -> IRModule:
        if isinstance(mod, PrimFunc):
            mod = IRModule({"main": mod})
        target = Target(self.target) if self.target is not None else Target.current()
        self.decisions.clear()
        functions = {}
        for name, func in mod.items():
            lowering = _Lowering(target, self.decisions)
            functions[name] = func.with_body(lowering.visit(func.body))
        return IRModule(functions)


@dataclass
class _Launch:
    """The kernel's launch shape and index variables, from its scope ids."""

    cta_vars: list[Var] = field(default_factory=list)
    cta_extents: list[int] = field(default_factory=list)
    ids: dict[str, tuple[Var, int]] = field(default_factory=dict)
    tx: Var = field(default_factory=lambda: Var("threadIdx_x", int32))

    @property
    def threads(self) -> int:
        """Threads per CTA: ``thread_id``'s extent, else 32 per warp, else 128 per warpgroup,
        else one warp or one."""
        if "thread_id" in self.ids:
            return self.ids["thread_id"][1]
        if "warp_id" in self.ids:
            return self.ids["warp_id"][1] * WARP_SIZE
        if "warpgroup_id" in self.ids:
            return self.ids["warpgroup_id"][1] * WARPGROUP_SIZE
        if "lane_id" in self.ids:
            return WARP_SIZE
        return 1

    def thread_vars(self) -> set[Var]:
        """``threadIdx.x`` and the variables of the thread-level scope ids."""
        return {self.tx, *(var for var, _ in self.ids.values())}


class _Lowering(Mutator):
    def __init__(self, target: Target | None, decisions: list[Decision]) -> None:
        super().__init__()
        self.target = target
        self.decisions = decisions
        self.launch: _Launch | None = None
        self.narrowing: list[tuple[str, set[Var]]] = []
        self.views: dict[Buffer, Buffer] = {}

    # -- kernels and scopes ----------------------------------------------------------------

    def visit_DeviceEntry(self, entry: DeviceEntry) -> Stmt:
        if self.launch is not None:
            raise TIRxError("T.device_entry() inside a kernel: kernels do not nest")
        launch = self.launch = _Launch()
        pre_order_visit(entry.body, lambda n: self._declare(n, launch))
        _check_launch(launch)
        try:
            body = cast(Stmt, self.visit(entry.body))  # a Mutator maps a statement to one
        finally:
            self.launch = None
        stmt = For(launch.tx, op.convert(0), op.convert(launch.threads), ForKind.THREAD_BINDING,
                   body, "threadIdx.x")  # fmt: skip
        extents = launch.cta_extents or [1]
        cta_vars = launch.cta_vars or [Var("blockIdx_x", int32)]
        for axis in range(len(extents) - 1, -1, -1):
            stmt = For(cta_vars[axis], op.convert(0), op.convert(extents[axis]),
                       ForKind.THREAD_BINDING, stmt, _BLOCK_TAGS[axis])  # fmt: skip
        return stmt

    def _declare(self, node: Node, launch: _Launch) -> bool:
        if isinstance(node, ScopeId):
            if node.kind in launch.ids or (node.kind == "cta_id" and launch.cta_vars):
                raise TIRxError(f"T.{node.kind} is declared twice in one kernel")
            if node.kind == "cta_id":
                if len(node.extents) > 3:
                    raise TIRxError(f"T.cta_id takes at most 3 extents, got {len(node.extents)}")
                launch.cta_vars, launch.cta_extents = list(node.vars), list(node.extents)
            else:
                if len(node.extents) != 1:
                    raise TIRxError(f"T.{node.kind} takes one extent, got {list(node.extents)}")
                if node.kind == "lane_id" and node.extents[0] != WARP_SIZE:
                    raise TIRxError(f"T.lane_id spans a warp: [32], got {list(node.extents)}")
                launch.ids[node.kind] = (node.vars[0], node.extents[0])
        return not isinstance(node, PrimExpr)

    def visit_ScopeId(self, scope: ScopeId) -> Stmt:
        launch = self._launch("T." + scope.kind)
        body = self.visit(scope.body)
        if scope.kind == "cta_id":
            return body
        var = scope.vars[0]
        value = {
            "thread_id": launch.tx,
            "lane_id": op.floormod(launch.tx, WARP_SIZE),
            "warp_id": op.floordiv(launch.tx, WARP_SIZE),
            "warpgroup_id": op.floordiv(launch.tx, WARPGROUP_SIZE),
        }[scope.kind]
        return LetStmt(var, value, body)

    def _launch(self, what: str) -> _Launch:
        if self.launch is None:
            raise TIRxError(f"{what} is only allowed after T.device_entry()")
        return self.launch

    def visit_IfThenElse(self, stmt: IfThenElse) -> Stmt:
        launch = self.launch
        used = set(collect_vars(stmt.condition)) & launch.thread_vars() if launch else set()
        if used:
            from tilewright.ir.printer import script

            self.narrowing.append((script(stmt.condition), used))
        try:
            return self.generic_visit(stmt)
        finally:
            if used:
                self.narrowing.pop()

    def _narrowed_by(self, scope: str, launch: _Launch) -> str | None:
        """The innermost enclosing condition that splits the threads of one ``scope``."""
        warp = launch.ids.get("warp_id", (None, 0))[0]
        group = launch.ids.get("warpgroup_id", (None, 0))[0]
        uniform: dict[str, AbstractSet[Var | None]] = {
            "thread": launch.thread_vars(),
            "warp": {warp, group},
            "warpgroup": {group},
        }
        for text, used in reversed(self.narrowing):
            if scope == "cta" or not used <= uniform.get(scope, set()):
                return text
        return None

    # -- tile ops and barriers -------------------------------------------------------------

    def visit_TileOp(self, tile_op: TileOp) -> Stmt:
        launch = self._launch(f"Tx.{tile_op.scope}.{tile_op.op}")
        variants = PRIMITIVES.get(tile_op.op)
        if variants is None:
            raise TIRxError(f"Tx.{tile_op.scope}.{tile_op.op}: unknown tile primitive")
        ctx = self._context(tile_op.scope, launch)
        variant, stmt = dispatch(tile_op, ctx, variants)
        self.decisions.append(Decision(tile_op, variant.name, dict(ctx.notes)))
        return stmt

    def _context(self, scope: str, launch: _Launch) -> ExecContext:
        lane = launch.ids.get("lane_id", (None, 0))[0]
        thread = launch.ids.get("thread_id", (None, 0))[0]
        by_scope: dict[str, tuple[int, PrimExpr | int]] = {
            "thread": (1, 0),
            "warp": (WARP_SIZE, lane if lane is not None else op.floormod(launch.tx, WARP_SIZE)),
            "warpgroup": (WARPGROUP_SIZE, op.floormod(launch.tx, WARPGROUP_SIZE)),
            "cta": (launch.threads, thread if thread is not None else launch.tx),
        }
        threads, index = by_scope[scope]
        if scope == "warpgroup" and launch.threads == WARPGROUP_SIZE:
            index = thread if thread is not None else launch.tx
        narrowed = self._narrowed_by(scope, launch)
        return ExecContext(
            self.target, scope, threads, index, launch.threads, narrowed, views=self.views
        )

    def visit_Evaluate(self, stmt: Evaluate) -> Stmt:
        if CTA_SYNC.matches(stmt):
            return sync_threads()
        return self.generic_visit(stmt)

    # -- laid-out buffers ------------------------------------------------------------------

    def _flat(self, buffer: Buffer) -> Buffer:
        view = self.views.get(buffer)
        if view is None:
            view = self.views[buffer] = flat_view(buffer)
        return view

    def visit_Block(self, block: Block) -> Stmt:
        allocs = tuple(self._flat(b) if b.layout is not None else b for b in block.alloc_buffers)
        new = self.generic_visit(block.replace(alloc_buffers=()))
        return new.replace(alloc_buffers=allocs)

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        if load.buffer.layout is None:
            return self.generic_visit(load)
        indices = tuple(self.visit(i) for i in load.indices)
        return BufferLoad(self._flat(load.buffer), (_laid_out(load.buffer, indices),))

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        if store.buffer.layout is None:
            return self.generic_visit(store)
        indices = tuple(self.visit(i) for i in store.indices)
        value = self.visit(store.value)
        index = _laid_out(store.buffer, indices)
        return BufferStore(self._flat(store.buffer), value, (index,))


def _check_launch(launch: _Launch) -> None:
    """The thread counts that ``thread_id``, ``warp_id`` and ``warpgroup_id`` imply agree."""
    counts = {
        kind: launch.ids[kind][1] * size
        for kind, size in (
            ("warpgroup_id", WARPGROUP_SIZE),
            ("warp_id", WARP_SIZE),
            ("thread_id", 1),
        )
        if kind in launch.ids
    }
    if len(set(counts.values())) > 1:
        spelled = " and ".join(f"T.{kind}([{launch.ids[kind][1]}])" for kind in counts)
        implied = ", ".join(f"{count} threads" for count in counts.values())
        raise TIRxError(f"{spelled} disagree: they imply {implied}")


def _laid_out(buffer: Buffer, indices: tuple[object, ...]) -> PrimExpr:
    """The storage offset of ``buffer[indices]`` through its layout."""
    layout = buffer_layout(buffer)
    offset = layout.apply(*indices, shape=constant_shape(buffer))[MEMORY]
    return op.convert(offset)
