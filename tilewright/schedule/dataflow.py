"""The blocks of one scope (the child blocks of a block) in program order, with the buffers
each reads and writes: producers, consumers and the checks that moving a block keeps every
read seeing the same writes. Also the tree edits that move blocks: removing a block with the
loops left empty, and inserting a statement into a loop's body."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tilewright.ir.buffer import Buffer
from tilewright.ir.expr import Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars
from tilewright.ir.stmt import (
    Allocate,
    AttrStmt,
    Block,
    BlockRealize,
    For,
    IfThenElse,
    IterKind,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.tree import Path, Site, children, update, walk, with_child


@dataclass(frozen=True)
class ScopeBlock:
    """A block directly under the scope block: the path to its ``BlockRealize``."""

    path: Path

    @property
    def realize(self) -> BlockRealize:
        node = self.path[-1]
        assert isinstance(node, BlockRealize)
        return node

    @property
    def block(self) -> Block:
        return self.realize.block

    @property
    def reads(self) -> set[Buffer]:
        return {r.buffer for r in self.block.reads}

    @property
    def writes(self) -> set[Buffer]:
        return {r.buffer for r in self.block.writes}

    def under(self, stmt: Stmt) -> bool:
        return any(s is stmt for s in self.path)


def scope_path(site: Site) -> Path:
    """The path to the block whose scope holds the node (its innermost enclosing block)."""
    k = site.scope_index()
    if k < 0:
        raise ScheduleError("schedule", "root-block", "the root block has no enclosing scope")
    return site.path[: k + 1]


def scope_blocks(scope: Path) -> list[ScopeBlock]:
    """The child blocks of the block at the end of ``scope``, in program order."""
    found: list[ScopeBlock] = []
    stack: list[Path] = [(*scope, c) for c in reversed(children(scope[-1]))]
    while stack:
        path = stack.pop()
        if isinstance(path[-1], BlockRealize):
            found.append(ScopeBlock(path))
            continue
        stack.extend((*path, c) for c in reversed(children(path[-1])))
    return found


def find(blocks: list[ScopeBlock], block: Block) -> int:
    return next(k for k, b in enumerate(blocks) if b.block is block)


def producers_of(blocks: list[ScopeBlock], block: Block) -> list[ScopeBlock]:
    """Blocks of the scope that write a buffer ``block`` reads."""
    reads = {r.buffer for r in block.reads}
    return [b for b in blocks if b.block is not block and b.writes & reads]


def consumers_of(blocks: list[ScopeBlock], block: Block) -> list[ScopeBlock]:
    """Blocks of the scope that read a buffer ``block`` writes."""
    writes = {r.buffer for r in block.writes}
    return [b for b in blocks if b.block is not block and b.reads & writes]


def check_single_writer(primitive: str, site: Site, blocks: list[ScopeBlock], block: Block) -> None:
    """``block`` is the only block of its scope that writes each of its output buffers."""
    for other in blocks:
        if other.block is block:
            continue
        shared = other.writes & {r.buffer for r in block.writes}
        if shared:
            name = sorted(b.name for b in shared)[0]
            raise ScheduleError(
                primitive,
                "single-writer",
                f"block {other.block.name!r} also writes buffer {name!r}, which block "
                f"{block.name!r} writes",
                site.func,
                block,
            )


def check_no_conflict(
    primitive: str, site: Site, block: Block, crossed: list[ScopeBlock], allow_writers: bool
) -> None:
    """No block in ``crossed`` reads or writes what ``block`` writes, nor (unless
    ``allow_writers``) writes what ``block`` reads: moving ``block`` past them keeps every
    read seeing the same writes."""
    reads = {r.buffer for r in block.reads}
    writes = {r.buffer for r in block.writes}
    for other in crossed:
        if other.block is block:
            continue
        clash = (other.reads | other.writes) & writes
        if not allow_writers:
            clash |= other.writes & reads
        if clash:
            name = sorted(b.name for b in clash)[0]
            raise ScheduleError(
                primitive,
                "data-flow",
                f"block {block.name!r} would move past block {other.block.name!r}, which "
                f"accesses buffer {name!r} that one of them writes",
                site.func,
                block,
            )


def param_buffers(func: PrimFunc) -> set[Buffer]:
    return {b for _, b in func.buffer_map}


# ---- tree edits -------------------------------------------------------------------------


def remove(stmt: Stmt, target: Stmt) -> Stmt | None:
    """``stmt`` without ``target`` (by identity); loops and branches left empty go too."""
    if stmt is target:
        return None
    if isinstance(stmt, SeqStmt):
        items = [remove(s, target) for s in stmt.seq]
        kept = [s for s in items if s is not None]
        if all(a is b for a, b in zip(items, stmt.seq)):
            return stmt
        return seq(*kept) if kept else None
    if isinstance(stmt, For | LetStmt | Allocate | AttrStmt):
        body = remove(stmt.body, target)
        if body is stmt.body:
            return stmt
        return None if body is None else update(stmt, body=body)
    if isinstance(stmt, IfThenElse):
        then = remove(stmt.then_case, target)
        other = None if stmt.else_case is None else remove(stmt.else_case, target)
        if then is stmt.then_case and other is stmt.else_case:
            return stmt
        if then is None and other is None:
            return None
        return update(stmt, then_case=then or SeqStmt(()), else_case=other)
    if isinstance(stmt, BlockRealize):
        block = remove(stmt.block, target)
        return stmt if block is stmt.block else update(stmt, block=block)
    if isinstance(stmt, Block):
        body = remove(stmt.body, target)
        if body is stmt.body:
            return stmt
        return update(stmt, body=body if body is not None else SeqStmt(()))
    return stmt


def map_stmt(stmt: Stmt, fn: Callable[[Stmt], Stmt | None]) -> Stmt:
    """``stmt`` with every sub-statement ``s`` for which ``fn(s)`` is not None replaced by it
    (outermost match wins; the replacement is not visited)."""
    new = fn(stmt)
    if new is not None:
        return new
    result = stmt
    for child in children(stmt):
        replaced = map_stmt(child, fn)
        if replaced is not child:
            result = with_child(result, child, replaced)
    return result


def body_items(loop: For | Block) -> list[Stmt]:
    body = loop.body
    return list(body.seq) if isinstance(body, SeqStmt) else [body]


def contains(stmt: Stmt, target: Stmt) -> bool:
    return any(p[-1] is target for p in walk(stmt))


def check_reduction_in_scope(
    primitive: str, site: Site, realize: BlockRealize, loops: set[Var]
) -> None:
    """The block's reduction iterators are bound to ``loops`` only: a reduction continued
    across the instances of an enclosing block (bound to its iterators) cannot be restarted,
    split or recomputed inside one instance."""
    block = realize.block
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.kind is not IterKind.REDUCE:
            continue
        stray = [v for v in collect_vars(value) if v not in loops]
        if stray:
            raise ScheduleError(
                primitive,
                "reduction-scope",
                f"the reduction iterator {iv.var.name!r} of block {block.name!r} is bound to "
                f"{stray[0].name!r}, outside the loops of its scope",
                site.func,
                block,
            )
