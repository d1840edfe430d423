"""Statement trees: a node's children, paths from a function body down to a node, and the
rebuilding of the ancestors along a path when the node at its end is replaced."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar, cast

from tilewright.ir.expr import Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.node import Node
from tilewright.ir.stmt import (
    Allocate,
    AttrStmt,
    Block,
    BlockRealize,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from tilewright.schedule.error import ScheduleError

Path = tuple[Stmt, ...]
NodeT = TypeVar("NodeT", bound=Node)


def update(node: NodeT, **changes: object) -> NodeT:
    """``node.replace(**changes)``, typed as the node's own class."""
    return cast(NodeT, node.replace(**changes))


def children(stmt: Stmt) -> tuple[Stmt, ...]:
    """The statements directly below ``stmt`` (a block's init before its body)."""
    if isinstance(stmt, For | LetStmt | Allocate | AttrStmt):
        return (stmt.body,)
    if isinstance(stmt, BlockRealize):
        return (stmt.block,)
    if isinstance(stmt, Block):
        return (stmt.body,) if stmt.init is None else (stmt.init, stmt.body)
    if isinstance(stmt, SeqStmt):
        return stmt.seq
    if isinstance(stmt, IfThenElse):
        return (stmt.then_case,) if stmt.else_case is None else (stmt.then_case, stmt.else_case)
    return ()


def with_child(parent: Stmt, old: Stmt, new: Stmt) -> Stmt:
    """``parent`` with its child ``old`` (by identity) replaced by ``new``."""
    if isinstance(parent, SeqStmt):
        items = tuple(new if s is old else s for s in parent.seq)
        return seq(*items)
    if isinstance(parent, BlockRealize):
        return update(parent, block=new)
    changes = {name: new for name, value in parent.field_items() if value is old}
    if not changes:
        raise ValueError(f"{type(parent).__name__} does not hold the statement to replace")
    return update(parent, **changes)


def rebuild(path: Path, new: Stmt) -> Stmt:
    """The root of ``path`` with ``path[-1]`` replaced by ``new`` and its ancestors rebuilt."""
    for k in range(len(path) - 1, 0, -1):
        new = with_child(path[k - 1], path[k], new)
    return new


def walk(root: Stmt, prefix: Path = ()) -> Iterator[Path]:
    """Every path from ``root`` to a statement below it, parents before children."""
    stack: list[Path] = [(*prefix, root)]
    while stack:
        path = stack.pop()
        yield path
        stack.extend((*path, c) for c in reversed(children(path[-1])))


@dataclass(frozen=True)
class Site:
    """A statement located in a function: the function's name, the function, and the path
    from its body down to the statement."""

    func_name: str
    func: PrimFunc
    path: Path

    @property
    def node(self) -> Stmt:
        return self.path[-1]

    @property
    def loop(self) -> For:
        """The node, which the caller knows to be a loop."""
        node = self.path[-1]
        assert isinstance(node, For), type(node).__name__
        return node

    @property
    def block(self) -> Block:
        """The node, which the caller knows to be a block."""
        node = self.path[-1]
        assert isinstance(node, Block), type(node).__name__
        return node

    def replaced(self, new: Stmt) -> PrimFunc:
        """The function with this statement replaced by ``new``."""
        return self.func.with_body(rebuild(self.path, new))

    def at(self, path: Path) -> Site:
        return Site(self.func_name, self.func, path)

    def scope_index(self) -> int:
        """The index in ``path`` of the innermost block strictly above the node (-1: none)."""
        for k in range(len(self.path) - 2, -1, -1):
            if isinstance(self.path[k], Block):
                return k
        return -1

    def enclosing_loops(self) -> list[For]:
        """The loops between the node and its enclosing block, outermost first."""
        start = self.scope_index() + 1
        return [s for s in self.path[start:-1] if isinstance(s, For)]

    def only_block(self, primitive: str) -> tuple[Path, BlockRealize]:
        """The path to the one block realize under this loop, and the realize itself.

        Raises ``ScheduleError`` (rule ``rfactor-block``, naming ``primitive``) when the loop
        holds no block or several. Example: ``path, realize = site.only_block("blockize")``.
        """
        realizes = list(self.below(lambda path: isinstance(path[-1], BlockRealize)))
        if len(realizes) != 1:
            raise ScheduleError(
                primitive,
                "rfactor-block",
                f"loop {self.loop.loop_var.name!r} must hold exactly one block, "
                f"not {len(realizes)}",
                self.func,
                self.loop,
            )
        realize = realizes[0][-1]
        assert isinstance(realize, BlockRealize)
        return realizes[0], realize

    def below(self, keep: Callable[[Path], bool]) -> Iterator[Path]:
        """Paths (extending this one) to the statements under the node that ``keep`` accepts."""
        for path in walk(self.node, self.path[:-1]):
            if keep(path):
                yield path


def loop_domain(loops: list[For]) -> dict[Var, Range]:
    """Each loop's variable with its range."""
    return {f.loop_var: Range(f.min, f.extent) for f in loops}
