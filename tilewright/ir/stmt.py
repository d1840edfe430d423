"""Statement nodes: stores, loops, blocks, control flow, allocation."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator

from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.expr import PrimExpr, Range, Var
from tilewright.ir.node import Node, node
from tilewright.ir.span import Span

# Annotations: (key, value) pairs sorted by key, so that equal dicts give equal nodes.
AttrValue = int | float | str | bool | PrimExpr | tuple
Attrs = tuple[tuple[str, AttrValue], ...]


def attrs(mapping: dict[str, AttrValue] | Attrs | None = None) -> Attrs:
    """Normalise a dict (or pairs) of annotations into the sorted tuple form nodes hold."""
    if not mapping:
        return ()
    items = mapping.items() if isinstance(mapping, dict) else mapping
    return tuple(sorted(((str(k), _freeze(v)) for k, v in items), key=lambda kv: kv[0]))


def _freeze(value: AttrValue | list | dict) -> AttrValue:
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return attrs(value)
    return value


class Stmt(Node):
    """Base of statements."""

    __slots__ = ()


@node
class BufferStore(Stmt):
    """``buffer[indices] = value``."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]
    span: Span | None = None


class ForKind(enum.IntEnum):
    """How a loop runs: in order, across CPU threads, as vector lanes, unrolled, or bound
    to a GPU thread axis (``For.thread_tag``). An int enum numbered as TVM's.

    Example::

        >>> int(ForKind.UNROLLED), ForKind.UNROLLED.script_name
        (3, 'unroll')
    """

    SERIAL = 0
    PARALLEL = 1
    VECTORIZED = 2
    UNROLLED = 3
    THREAD_BINDING = 4

    @property
    def script_name(self) -> str:
        """The TVMScript spelling of the loop kind: ``T.<script_name>(...)``."""
        return _FOR_KIND_SCRIPT[self]


_FOR_KIND_SCRIPT = {
    ForKind.SERIAL: "serial",
    ForKind.PARALLEL: "parallel",
    ForKind.VECTORIZED: "vectorized",
    ForKind.UNROLLED: "unroll",
    ForKind.THREAD_BINDING: "thread_binding",
}


@node
class For(Stmt):
    """``for loop_var in range(min, min + extent)``; ``thread_tag`` names the bound thread axis."""

    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    thread_tag: str = ""
    annotations: Attrs = ()
    span: Span | None = None


class IterKind(enum.Enum):
    """What a block iterator means: a spatial (data-parallel) axis, a reduction, a scan, or
    an opaque one that no analysis may reorder."""

    SPATIAL = "spatial"
    REDUCE = "reduce"
    SCAN = "scan"
    OPAQUE = "opaque"


@node
class IterVar(Node):
    """A block iterator: its variable, domain and kind (spatial or reduce)."""

    var: Var
    dom: Range
    kind: IterKind


@node
class Block(Stmt):
    """A unit of computation with declared iterators and buffer accesses (TensorIR's block).

    ``init`` runs before the first iteration of the reduction iterators; ``alloc_buffers``
    live for the block's body.
    """

    name: str
    iter_vars: tuple[IterVar, ...]
    reads: tuple[BufferRegion, ...]
    writes: tuple[BufferRegion, ...]
    body: Stmt
    init: Stmt | None = None
    alloc_buffers: tuple[Buffer, ...] = ()
    match_buffers: tuple[MatchBufferRegion, ...] = ()
    annotations: Attrs = ()
    span: Span | None = None

    @property
    def name_hint(self) -> str:
        """The block's name (TVM's field name); a hint that structural equality ignores."""
        return self.name


@node
class MatchBufferRegion(Node):
    """Inside a block, ``buffer`` is a view of ``source``."""

    buffer: Buffer
    source: BufferRegion


@node
class BlockRealize(Stmt):
    """Runs ``block`` with its iterators bound to ``iter_values`` when ``predicate`` holds."""

    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: Block


@node
class SeqStmt(Stmt):
    """Statements in order; indexable and sized like its ``seq``.

    Given a list, TVM's spelling (``tir.SeqStmt([a, b])``), nested sequences are spliced
    in as TVM's constructor does. The tuple form that passes build keeps a nested
    ``SeqStmt`` as one statement: once ``lower_blocks`` has removed the blocks, that nesting
    is what groups a block's statements into one software-pipeline stage.

    Example::

        >>> s = SeqStmt([a, SeqStmt((b, c))])
        >>> len(s), s[1] is b, s.seq == (a, b, c)
        (3, True, True)
    """

    seq: tuple[Stmt, ...]

    def __post_init__(self) -> None:
        if isinstance(self.seq, tuple):
            return
        object.__setattr__(self, "seq", tuple(_spliced(self.seq)))

    def __len__(self) -> int:
        return len(self.seq)

    def __getitem__(self, index: int) -> Stmt:
        return self.seq[index]


def _spliced(stmts: Iterable[Stmt]) -> Iterator[Stmt]:
    """``stmts`` with every nested ``SeqStmt``, at any depth, replaced by its statements."""
    for s in stmts:
        if isinstance(s, SeqStmt):
            yield from _spliced(s.seq)
        else:
            yield s


@node
class IfThenElse(Stmt):
    """``then_case`` when ``condition`` holds, else ``else_case`` (if any)."""

    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@node
class LetStmt(Stmt):
    """``body`` with ``var`` bound to ``value``."""

    var: Var
    value: PrimExpr
    body: Stmt


@node
class Evaluate(Stmt):
    """Evaluate an expression for its effect (an intrinsic call)."""

    value: PrimExpr


@node
class Allocate(Stmt):
    """Storage for ``buffer`` (in its scope) during ``body``."""

    buffer: Buffer
    body: Stmt


@node
class AllocateConst(Allocate):
    """Read-only storage for ``buffer`` holding ``data`` (its elements in row-major order)
    during ``body`` (TVM's ``AllocateConst``; an ``Allocate`` to the passes that move or
    reshape allocations)."""

    data: tuple[int | float, ...]


@node
class BufferRealize(Stmt):
    """TVM's pre-schedule stage IR: ``buffer`` is realized over ``bounds`` (one range per
    dimension) when ``condition`` holds, for the extent of ``body``."""

    buffer: Buffer
    bounds: tuple[Range, ...]
    condition: PrimExpr
    body: Stmt


@node
class Prefetch(Stmt):
    """A hint that the region ``bounds`` of ``buffer`` will be read soon (no effect on the
    result; lowering may drop it)."""

    buffer: Buffer
    bounds: tuple[Range, ...]


@node
class DeclBuffer(Stmt):
    """``buffer`` declared over storage that exists already (its ``data`` is defined
    elsewhere: a parameter's or an ``Allocate``'s) for the extent of ``body``."""

    buffer: Buffer
    body: Stmt


@node
class AttrStmt(Stmt):
    """An attribute ``key = value`` attached to ``node`` for the extent of ``body``."""

    node: Node
    key: str
    value: PrimExpr
    body: Stmt


@node
class AssertStmt(Stmt):
    """``body`` after checking ``condition``; a false one stops the function with ``message``."""

    condition: PrimExpr
    message: PrimExpr  # a StringImm
    body: Stmt


@node
class While(Stmt):
    """``while condition: body``."""

    condition: PrimExpr
    body: Stmt


def seq(*stmts: Stmt | None) -> Stmt:
    """Statements in order, nested sequences flattened; a single statement stays itself."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.seq)
        else:
            flat.append(s)
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(tuple(flat))
