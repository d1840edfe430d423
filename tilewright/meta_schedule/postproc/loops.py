"""What the postprocessors ask of a loop nest: the kind of iterators a loop drives, whether a
loop holds one statement, how a loop is bound, and where the blocks of a function are.

Pure queries on the IR; nothing here changes a schedule.
"""

from __future__ import annotations

from collections.abc import Iterator

from tilewright.ir import Block, BlockRealize, For, ForKind, IterKind, PrimFunc, SeqStmt, Stmt
from tilewright.ir.functor import collect_vars
from tilewright.schedule.tree import Path, children, walk

BLOCK_IDX = "blockIdx."
THREAD_IDX = "threadIdx."


def loop_iter_type(loop: For) -> str:
    """TVM's ``GetLoopIterType``: ``S`` when the loop drives only spatial iterators of the
    blocks directly under it (or none at all), ``R`` when only reduction ones, ``O`` when it
    drives both kinds or an iterator of another kind.

    Example::

        >>> loop_iter_type(k)   # "R" for the k loop of a matmul
    """
    kinds: set[IterKind] = set()
    for realize in child_realizes(loop.body):
        for iv, value in zip(realize.block.iter_vars, realize.iter_values):
            if loop.loop_var in collect_vars(value):
                kinds.add(iv.kind)
    if not kinds or kinds == {IterKind.SPATIAL}:
        return "S"
    if kinds == {IterKind.REDUCE}:
        return "R"
    return "O"


def child_realizes(stmt: Stmt) -> Iterator[BlockRealize]:
    """The block realizes under ``stmt`` that no other block encloses, in program order."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, BlockRealize):
            yield node
            continue
        stack.extend(reversed(children(node)))


def is_single_stmt(stmt: Stmt) -> bool:
    """The statement is not a sequence of several (TVM's ``IsSingleStmt``)."""
    return not (isinstance(stmt, SeqStmt) and len(stmt.seq) > 1)


def thread_tag(loop: For) -> str:
    """The thread axis the loop is bound to ("" when it is not bound)."""
    return loop.thread_tag if loop.kind is ForKind.THREAD_BINDING else ""


def is_block_idx(loop: For) -> bool:
    return thread_tag(loop).startswith(BLOCK_IDX)


def is_thread_idx(loop: For) -> bool:
    return thread_tag(loop).startswith(THREAD_IDX)


def root_block(func: PrimFunc) -> Block | None:
    """The function's root block (None when its body is not a block realize)."""
    body = func.body
    return body.block if isinstance(body, BlockRealize) else None


def block_paths(func: PrimFunc) -> Iterator[Path]:
    """Paths from the function's body to each of its blocks (root included), in program
    order."""
    for path in walk(func.body):
        if isinstance(path[-1], Block):
            yield path


def has_nested_block(block: Block) -> bool:
    """Some block lies inside ``block``'s body or init."""
    return any(True for child in children(block) for _ in child_realizes(child))
