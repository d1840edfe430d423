"""Where ``cache_read`` and ``cache_write`` put their copy, and the compact cache a copy
placed directly in a block gets.

The rule is TVM's: walk the scope in program order; in the innermost sequence of statements
that holds both the writer of the buffer and the first of the related blocks (the consumers
for ``cache_read``, the readers of the written buffer for ``cache_write``), the copy goes just
before the statement holding that related block. With no related block, it goes at the end of
the scope; an input of the scope (no writer) is copied at its start. A copy placed in a loop's
body gets a cache of the buffer's full shape; a copy placed in the scope block's body gets a
cache of the copied region only, read and written at indices shifted by the region's start.

Example: with ``B`` written in loop ``i`` and read both in that loop (block ``C``) and after
it (block ``D``), ``cache_read`` puts the copy of ``B[i, 0:8]`` in loop ``i`` before ``C``, so
both consumers read values already copied.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.arith.analyzer import Analyzer
from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.expr import BufferLoad, PrimExpr, Range
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Mutator
from tilewright.ir.stmt import Block, BlockRealize, BufferStore, For, SeqStmt, Stmt, seq
from tilewright.schedule.dataflow import ScopeBlock, scope_blocks
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.tree import Path, children, rebuild, update


@dataclass(frozen=True)
class Spot:
    """The copy goes into the body of ``owner`` (a loop or the scope block), before its
    ``index``-th statement."""

    owner: Path
    index: int

    @property
    def compact(self) -> bool:
        """Whether the cache holds only the copied region (the copy sits in a block)."""
        return isinstance(self.owner[-1], Block)


class _Detector:
    """TVM's walk: stops at the first related block met after the writer."""

    def __init__(self, writer: BlockRealize | None, related: list[BlockRealize]) -> None:
        self.writer = writer
        self.related = {id(r) for r in related}
        self.seen_writer = False
        self.seen_related = False
        self.index = -1
        self.seq_owner: Path | None = None

    def visit(self, path: Path) -> None:
        node = path[-1]
        if isinstance(node, BlockRealize):
            if node is self.writer:
                self.seen_writer = True
            elif id(node) in self.related:
                self.seen_related = True
            return
        if isinstance(node, SeqStmt):
            self.visit_seq(path)
            return
        for child in children(node):
            self.visit((*path, child))

    def visit_seq(self, path: Path) -> None:
        before = self.seen_writer
        self.seen_writer = False
        node = path[-1]
        assert isinstance(node, SeqStmt)
        for k, item in enumerate(node.seq):
            if self.index != -1:
                break
            self.visit((*path, item))
            if self.seen_writer and self.seen_related and self.index == -1:
                self.index, self.seq_owner = k, path[:-1]
                break
            if self.seen_related:
                break
        self.seen_writer = self.seen_writer or before


def cache_spot(
    primitive: str,
    func: PrimFunc,
    scope: Path,
    writer: ScopeBlock | None,
    related: list[ScopeBlock],
) -> Spot:
    """Where the copy of a cache goes (see the module's docstring)."""
    block = scope[-1]
    assert isinstance(block, Block)
    items = block.body.seq if isinstance(block.body, SeqStmt) else (block.body,)
    if writer is None:
        return Spot(scope, 0)
    if not related:
        return Spot(scope, len(items))
    detector = _Detector(writer.realize, [r.realize for r in related])
    detector.visit((*scope, block.body))
    if detector.index == -1 or detector.seq_owner is None:
        # The first consumer comes before the writer: no place keeps the program's meaning.
        first = next(r for r in related if r.realize is not writer.realize)
        raise ScheduleError(
            primitive,
            "data-flow",
            f"block {first.block.name!r} comes before the writer {writer.block.name!r} of the "
            "buffer: there is no place for the copy between them",
            func,
            first.block,
        )
    owner = detector.seq_owner
    if not isinstance(owner[-1], For | Block):
        raise ScheduleError(
            primitive,
            "placement",
            f"the copy would go into a sequence under a {type(owner[-1]).__name__}, not "
            "directly in a loop or block",
            func,
            writer.block,
        )
    return Spot(owner, detector.index)


def insert_at(func: PrimFunc, owner: Path, index: int, stage: Stmt) -> PrimFunc:
    """``func`` with ``stage`` before the ``index``-th statement of ``owner``'s body."""
    node = owner[-1]
    assert isinstance(node, For | Block)
    items = list(node.body.seq) if isinstance(node.body, SeqStmt) else [node.body]
    new = update(node, body=seq(*items[:index], stage, *items[index:]))
    return func.with_body(rebuild(owner, new))


def check_order(
    primitive: str,
    func: PrimFunc,
    scope: Path,
    copy_name: str,
    writer: Block | None,
    readers: list[Block],
) -> None:
    """Refuse a copy that would run before the writer or after one of the readers."""
    order = [b.block.name for b in scope_blocks(scope)]
    at = order.index(copy_name)
    if writer is not None and order.index(writer.name) > at:
        raise ScheduleError(
            primitive,
            "data-flow",
            f"the copy {copy_name!r} would run before block {writer.name!r} writes the buffer",
            func,
            writer,
        )
    for reader in readers:
        if order.index(reader.name) < at:
            raise ScheduleError(
                primitive,
                "data-flow",
                f"block {reader.name!r} reads the buffer before the copy {copy_name!r} runs "
                "(it sits in the same loop nest before the first consumer)",
                func,
                reader,
            )


class ShiftBuffer(Mutator):
    """Replaces ``old`` by ``new`` in loads, stores and regions, subtracting ``start`` from
    every index (the compact cache of a region that begins at ``start``)."""

    def __init__(self, old: Buffer, new: Buffer, start: tuple[PrimExpr, ...]) -> None:
        super().__init__()
        self.old, self.new, self.start = old, new, start
        self.ana = Analyzer()

    def shift(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        return tuple(
            self.ana.simplify(op.sub(i, s)) if not _zero(s) else i
            for i, s in zip(indices, self.start, strict=True)
        )

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        node = self.generic_visit(node)
        if node.buffer is not self.old:
            return node
        return node.replace(buffer=self.new, indices=self.shift(node.indices))

    def visit_BufferStore(self, node: BufferStore) -> Stmt:
        node = self.generic_visit(node)
        if node.buffer is not self.old:
            return node
        return node.replace(buffer=self.new, indices=self.shift(node.indices))

    def visit_BufferRegion(self, node: BufferRegion) -> BufferRegion:
        if node.buffer is not self.old:
            return self.generic_visit(node)
        mins = self.shift(tuple(r.min for r in node.region))
        region = tuple(Range(m, r.extent) for m, r in zip(mins, node.region, strict=True))
        return BufferRegion(self.new, region)

    def visit_Buffer(self, buffer: Buffer) -> Buffer:
        return buffer  # a buffer's own fields (its data pointer) are not accesses

    def visit_Var(self, var: PrimExpr) -> PrimExpr:
        if var is self.old.data:
            raise _OpaqueAccess
        return var


class _OpaqueAccess(Exception):
    pass


def _zero(expr: PrimExpr) -> bool:
    from tilewright.ir.expr import IntImm

    return isinstance(expr, IntImm) and expr.value == 0


def shift_into(
    primitive: str,
    func: PrimFunc,
    stmt: Stmt,
    old: Buffer,
    new: Buffer,
    start: tuple[PrimExpr, ...],
    block: Block,
) -> Stmt:
    """``stmt`` reading and writing ``new`` at shifted indices instead of ``old``; refused
    where ``old`` is reached through its data pointer (no index to shift)."""
    try:
        out = ShiftBuffer(old, new, start).visit(stmt)
    except _OpaqueAccess:
        raise ScheduleError(
            primitive,
            "opaque-access",
            f"block {block.name!r} reaches buffer {old.name!r} through its data pointer; a "
            "cache of part of it cannot be addressed there",
            func,
            block,
        ) from None
    assert isinstance(out, Stmt)
    return out
