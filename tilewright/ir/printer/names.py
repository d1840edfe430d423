"""Printed names for variables and buffers: valid, unique among those in scope, stable."""

from __future__ import annotations

import keyword
import re
from collections import Counter
from typing import TYPE_CHECKING

from tilewright.ir.buffer import Buffer
from tilewright.ir.comm_reducer import CommReducer
from tilewright.ir.expr import Let, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Visitor
from tilewright.ir.node import Node
from tilewright.ir.stmt import (
    Allocate,
    Block,
    BufferRealize,
    DeclBuffer,
    For,
    IterVar,
    LetStmt,
)

if TYPE_CHECKING:
    from tilewright.ir.tile import ScopeId

# Names the script itself needs: the two namespaces and Python names it calls.
_RESERVED = frozenset({"T", "I", "range", "True", "False", "None"})
_INVALID = re.compile(r"[^0-9A-Za-z_]")


def sanitize(hint: str) -> str:
    """``hint`` made into a Python identifier (reserved words stay as they are)."""
    text = _INVALID.sub("_", hint) or "v"
    return f"v_{text}" if text[0].isdigit() else text


def _taken(name: str) -> bool:
    return name in _RESERVED or keyword.iskeyword(name) or keyword.issoftkeyword(name)


class Namer:
    """Gives each variable and buffer a name, freed again when its scope ends.

    A name is unique among every name visible where it is defined, so sibling scopes may
    reuse ``vi`` while an inner ``i`` that shadows a different outer ``i`` prints as ``i_1``.
    Names depend only on the tree's structure, never on object identity.
    """

    def __init__(self) -> None:
        self.names: dict[Node, str] = {}
        self.in_use: Counter[str] = Counter()
        self.frames: list[list[tuple[Node, str | None]]] = [[]]

    def push(self) -> None:
        self.frames.append([])

    def pop(self) -> None:
        for obj, previous in reversed(self.frames.pop()):
            self.in_use[self.names[obj]] -= 1
            if previous is None:
                del self.names[obj]
            else:
                self.names[obj] = previous

    def define(self, obj: Node, hint: str, *, outermost: bool = False) -> str:
        """Bind ``obj`` to a fresh name derived from ``hint`` in the current scope."""
        base = sanitize(hint)
        name, suffix = base, 0
        while self.in_use[name] or _taken(name):
            suffix += 1
            name = f"{base}_{suffix}"
        frame = self.frames[0] if outermost else self.frames[-1]
        frame.append((obj, self.names.get(obj)))
        self.names[obj] = name
        self.in_use[name] += 1
        return name

    def alias(self, obj: Node, name: str) -> None:
        """Let ``obj`` print as an existing ``name`` (a parameter handle and its buffer)."""
        self.frames[-1].append((obj, self.names.get(obj)))
        self.names[obj] = name
        self.in_use[name] += 1

    def get(self, obj: Var | Buffer) -> str:
        """The name of ``obj``; one outside every scope gets a name for the whole unit."""
        name = self.names.get(obj)
        if name is None:
            name = self.define(obj, obj.name, outermost=True)
        return name


class _Definitions(Visitor):
    """Finds what a tree defines and uses, to tell its free variables and buffers apart."""

    def __init__(self) -> None:
        self.defined: set[Var | Buffer] = set()
        self.used: dict[Var | Buffer, None] = {}
        self.buffers: set[Buffer] = set()
        self.declared_over: set[Var] = set()  # T.decl_buffer(..., data=p): p is used

    def define(self, obj: Var | Buffer) -> None:
        self.defined.add(obj)

    def visit_Var(self, var: Var) -> None:
        self.used.setdefault(var, None)

    def visit_Buffer(self, buffer: Buffer) -> None:
        if buffer in self.buffers:
            return
        self.buffers.add(buffer)
        self.used.setdefault(buffer, None)
        if buffer.data not in self.declared_over:
            self.defined.add(buffer.data)  # the data handle prints as ``A.data``
        if isinstance(buffer.elem_offset, Var):
            self.defined.add(buffer.elem_offset)  # ``A.elem_offset``, made by offset_factor=
        self.visit((buffer.shape, buffer.strides, buffer.elem_offset))

    def visit_For(self, loop: For) -> None:
        self.define(loop.loop_var)
        self.generic_visit(loop)

    def visit_IterVar(self, iv: IterVar) -> None:
        self.define(iv.var)
        self.generic_visit(iv)

    def visit_LetStmt(self, let: LetStmt) -> None:
        self.define(let.var)
        self.generic_visit(let)

    def visit_ScopeId(self, scope: ScopeId) -> None:
        # The tile layer's `lane = T.lane_id([32])` defines its variables.
        for var in scope.vars:
            self.define(var)
        self.generic_visit(scope)

    def visit_CommReducer(self, reducer: CommReducer) -> None:
        # `lambda x, y: x + y` defines its parameters.
        for var in (*reducer.lhs, *reducer.rhs):
            self.define(var)
        self.generic_visit(reducer)

    def visit_Let(self, let: Let) -> None:
        self.define(let.var)
        self.generic_visit(let)

    def visit_Block(self, block: Block) -> None:
        for buffer in block.alloc_buffers:
            self.define(buffer)
        for match in block.match_buffers:
            self.define(match.buffer)
        self.generic_visit(block)

    def visit_Allocate(self, alloc: Allocate | DeclBuffer) -> None:
        self.define(alloc.buffer)
        self.generic_visit(alloc)

    def visit_DeclBuffer(self, decl: DeclBuffer) -> None:
        if decl.buffer not in self.buffers:
            # A view over a pointer that may be free (``p = T.handle("float32")``).
            self.used.setdefault(decl.buffer.data, None)
            self.declared_over.add(decl.buffer.data)
        self.visit_Allocate(decl)

    def visit_BufferRealize(self, realize: BufferRealize) -> None:
        # Printed as `B = T.Buffer(...)` right before its `with T.realize(B[...]):`.
        self.define(realize.buffer)
        self.generic_visit(realize)

    def visit_PrimFunc(self, func: PrimFunc) -> None:
        for param in func.params:
            self.define(param)
        for _, buffer in func.buffer_map:
            self.define(buffer)
        # Buffer shapes first, so that shape variables are declared in parameter order.
        self.visit((func.buffer_map, func.body, func.attrs))


def free_names(tree: object) -> list[Var | Buffer]:
    """The variables and buffers ``tree`` uses without defining, in order of first use.

    Example::

        >>> free_names(A[i] + 1)        # [A, i] for a free buffer A and a free variable i
    """
    walk = _Definitions()
    walk.visit(tree)
    return [obj for obj in walk.used if obj not in walk.defined]
