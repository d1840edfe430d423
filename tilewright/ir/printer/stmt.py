"""Statements to script text: stores, loops (``T.grid`` merging), blocks, control flow."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from tilewright.ir.buffer import DEFAULT_ALIGN, Buffer
from tilewright.ir.dtype import float32, int32
from tilewright.ir.expr import PrimExpr, Var
from tilewright.ir.functor import collect_vars
from tilewright.ir.node import Node
from tilewright.ir.printer.expr import ExprPrinter, end_of, is_const, is_true, string
from tilewright.ir.printer.names import Namer
from tilewright.ir.stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferRealize,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    LetStmt,
    MatchBufferRegion,
    Prefetch,
    SeqStmt,
    Stmt,
    While,
)

_AXIS_LETTER = {IterKind.SPATIAL: "S", IterKind.REDUCE: "R"}


class StmtPrinter(ExprPrinter):
    """Prints statements as indented lines; each loop, block and branch is a naming scope."""

    def __init__(
        self,
        namer: Namer | None = None,
        indent: int = 4,
        marks: Mapping[Node, str] | None = None,
    ) -> None:
        super().__init__(namer)
        self.lines: list[str] = []
        self.level = 0
        self.step = " " * indent
        # Comments to append to the line that opens a node (`# <-- here` in schedule errors).
        self.marks: Mapping[Node, str] = marks or {}
        # Block names as the script was written: TVM's newer `T.sblock` family, or `T.block`.
        self.block_word = "block"
        # Loop ranges of the enclosing loops, to detect `T.axis.remap` bindings.
        self.loop_ranges: dict[Var, tuple[PrimExpr, PrimExpr]] = {}

    def emit(self, text: str) -> None:
        self.lines.append(self.step * self.level + text)

    @contextlib.contextmanager
    def nested(self) -> Iterator[None]:
        """An indented body that is also a naming scope; an empty body prints ``pass``."""
        self.level += 1
        self.namer.push()
        count = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == count:
                self.emit("pass")
            self.namer.pop()
            self.level -= 1

    def text(self) -> str:
        return "\n".join(self.lines)

    def stmt(self, s: Stmt) -> None:
        """Emit the lines of ``s`` at the current indentation."""
        first = len(self.lines)
        for klass in type(s).__mro__:
            method = getattr(self, f"stmt_{klass.__name__}", None)
            if method is not None:
                method(s)
                break
        else:
            from tilewright.ir.printer.tirx import print_tile_stmt

            if not print_tile_stmt(self, s):
                self.emit(self.generic(s))
        self.mark(first, s)
        if isinstance(s, BlockRealize):
            self.mark(first, s.block)

    def mark(self, line: int, node: Node) -> None:
        note = self.marks.get(node) if self.marks else None
        if note is not None and line < len(self.lines):
            self.lines[line] += f"  # {note}"

    def stmt_SeqStmt(self, s: SeqStmt) -> None:
        if not s.seq:
            self.emit("pass")
        last = len(s.seq) - 1
        for position, item in enumerate(s.seq):
            # `x: T.int32 = v` and `X = T.decl_buffer(...)` take the statements after them
            # as their body; one followed by statements outside its body needs a `with`.
            if isinstance(item, LetStmt) and position < last:
                self.let_scope(item)
            elif isinstance(item, AllocateConst) and position < last:
                self.const_scope(item)
            elif isinstance(item, Allocate | DeclBuffer) and position < last:
                self.allocate_scope(item)
            elif isinstance(item, AssertStmt) and position < last:
                self.emit(f"with T.Assert({self.args(item.condition, item.message)}):")
                with self.nested():
                    self.stmt(item.body)
            else:
                self.stmt(item)

    def stmt_BufferStore(self, s: BufferStore) -> None:
        target = f"{self.buffer(s.buffer)}[{self.indices(s.indices)}]"
        self.emit(f"{target} = {self.expr(s.value)}")

    def stmt_Evaluate(self, s: Evaluate) -> None:
        self.emit(f"T.evaluate({self.expr(s.value)})")

    def stmt_LetStmt(self, s: LetStmt) -> None:
        value = self.expr(s.value)
        name = self.define_var(s.var)
        self.emit(f"{name}: T.{s.var.dtype} = {value}")
        self.stmt(s.body)

    def let_scope(self, s: LetStmt) -> None:
        value = self.expr(s.value)
        name = self.namer.names.get(s.var) or self.define_var(s.var)
        self.emit(f"with T.let({name}, {value}):")
        with self.nested():
            self.stmt(s.body)

    def stmt_Allocate(self, s: Allocate | DeclBuffer) -> None:
        args = self.decl_args(s)
        self.emit(f"{self.define_buffer(s.buffer)} = T.decl_buffer({args})")
        self.stmt(s.body)

    stmt_DeclBuffer = stmt_Allocate

    def decl_args(self, s: Allocate | DeclBuffer) -> str:
        """``T.decl_buffer``'s arguments; a ``DeclBuffer`` names the storage it views."""
        args = self.buffer_args(s.buffer, keep_dtype=True)
        if isinstance(s, DeclBuffer):
            args += f", data={self.expr(s.buffer.data)}"
        return args

    def allocate_scope(self, s: Allocate | DeclBuffer) -> None:
        args = self.decl_args(s)
        self.namer.push()
        self.emit(f"with T.decl_buffer({args}) as {self.define_buffer(s.buffer)}:")
        with self.nested():
            self.stmt(s.body)
        self.namer.pop()

    def stmt_AllocateConst(self, s: AllocateConst) -> None:
        args = self.const_args(s)
        self.emit(f"{self.define_buffer(s.buffer)} = T.allocate_const({args})")
        self.stmt(s.body)

    def const_args(self, s: AllocateConst) -> str:
        """``T.allocate_const``'s arguments: the values, the dtype and the extents."""
        values = ", ".join(self.attr_value(v) for v in s.data)
        extents = ", ".join(self.expr(d) for d in s.buffer.shape)
        return f"[{values}], {string(str(s.buffer.dtype))}, [{extents}]"

    def const_scope(self, s: AllocateConst) -> None:
        args = self.const_args(s)
        self.namer.push()
        self.emit(f"with T.allocate_const({args}) as {self.define_buffer(s.buffer)}:")
        with self.nested():
            self.stmt(s.body)
        self.namer.pop()

    def realize_head(self, s: BufferRealize, scope: PrimExpr | None) -> str:
        """``T.realize(A[0:16, i:i + 1], "global")``: every bound a slice, as TVM prints it."""
        bounds = ", ".join(
            f"{self.expr(r.min)}:{self.expr(end_of(r.min, r.extent))}" for r in s.bounds
        )
        args = [f"{self.buffer(s.buffer)}[{bounds or '()'}]"]
        if scope is not None:
            args.append(self.expr(scope))
        if not is_true(s.condition):
            args.append(f"condition={self.expr(s.condition)}")
        return f"T.realize({', '.join(args)})"

    def declare_realized(self, buffer: Buffer) -> None:
        """``B = T.Buffer(...)`` before the first realize of ``B``: a realize defines it."""
        if buffer not in self.namer.names:
            args = self.buffer_args(buffer, keep_dtype=True)
            self.emit(f"{self.define_buffer(buffer)} = T.Buffer({args})")

    def stmt_BufferRealize(self, s: BufferRealize) -> None:
        self.declare_realized(s.buffer)
        self.emit(f"with {self.realize_head(s, None)}:")
        with self.nested():
            self.stmt(s.body)

    def stmt_Prefetch(self, s: Prefetch) -> None:
        ranges = ", ".join(self.expr_Range(r)[0] for r in s.bounds)
        self.emit(f"T.prefetch({self.buffer(s.buffer)}, [{ranges}])")

    def stmt_AttrStmt(self, s: AttrStmt) -> None:
        body = s.body
        if s.key == "realize_scope" and isinstance(body, BufferRealize) and body.buffer is s.node:
            self.declare_realized(body.buffer)
            self.emit(f"with {self.realize_head(body, s.value)}:")
            with self.nested():
                self.stmt(body.body)
            return
        node = self.ranked(s.node)[0]
        self.emit(f"with T.attr({node}, {string(s.key)}, {self.expr(s.value)}):")
        with self.nested():
            self.stmt(s.body)

    def stmt_AssertStmt(self, s: AssertStmt) -> None:
        self.emit(f"assert {self.args(s.condition, s.message)}")
        self.stmt(s.body)

    def stmt_While(self, s: While) -> None:
        self.emit(f"while {self.expr(s.condition)}:")
        with self.nested():
            self.stmt(s.body)

    def stmt_IfThenElse(self, s: IfThenElse) -> None:
        keyword = "if"
        branch: Stmt | None = s
        while isinstance(branch, IfThenElse):
            self.emit(f"{keyword} {self.expr(branch.condition)}:")
            with self.nested():
                self.stmt(branch.then_case)
            keyword, branch = "elif", branch.else_case
        if branch is not None:
            self.emit("else:")
            with self.nested():
                self.stmt(branch)

    # -- loops ----------------------------------------------------------------------------

    def stmt_For(self, loop: For) -> None:
        chain = [loop]
        if _plain(loop):
            while isinstance(chain[-1].body, For) and _plain(chain[-1].body):
                inner = chain[-1].body
                outer_vars = {c.loop_var for c in chain}
                if any(v in outer_vars for v in collect_vars(inner.extent)):
                    break
                chain.append(inner)
        if len(chain) > 1:
            head = f"T.grid({self.args(*(c.extent for c in chain))})"
        else:
            head = self.loop_head(loop)
        # The loop variables belong to the body's scope but are named before the header.
        self.namer.push()
        names = []
        for c in chain:
            names.append(self.define_var(c.loop_var))
            self.loop_ranges[c.loop_var] = (c.min, c.extent)
        self.emit(f"for {', '.join(names)} in {head}:")
        for inner in chain[1:]:
            self.mark(len(self.lines) - 1, inner)
        with self.nested():
            self.stmt(chain[-1].body)
        self.namer.pop()

    def loop_head(self, loop: For) -> str:
        """``range(n)``, ``T.serial(a, b)``, ``T.thread_binding(8, thread="threadIdx.x")``..."""
        if _from_zero(loop):
            bounds = [self.expr(loop.extent)]
        else:
            bounds = [self.expr(loop.min), self.expr(end_of(loop.min, loop.extent))]
        if loop.kind is ForKind.SERIAL and not loop.annotations and len(bounds) == 1:
            return f"range({bounds[0]})"
        if loop.kind is ForKind.THREAD_BINDING:
            bounds.append(f"thread={string(loop.thread_tag)}")
        if loop.annotations:
            bounds.append(f"annotations={self.attr_dict(loop.annotations)}")
        return f"T.{loop.kind.script_name}({', '.join(bounds)})"

    # -- blocks ---------------------------------------------------------------------------

    def stmt_BlockRealize(self, s: BlockRealize) -> None:
        self.emit(f"with T.{self.block_word}({string(s.block.name)}):")
        with self.nested():
            self.block_contents(s.block, s.iter_values, s.predicate)

    def stmt_Block(self, s: Block) -> None:
        # A block outside its realize (shown in error messages): iterators without bindings.
        self.emit(f"with T.{self.block_word}({string(s.name)}):")
        with self.nested():
            self.block_contents(s, None, None)

    def block_contents(
        self, block: Block, bindings: tuple[PrimExpr, ...] | None, predicate: PrimExpr | None
    ) -> None:
        self.iterators(block, bindings)
        if predicate is not None and not is_true(predicate):
            self.emit(f"T.where({self.expr(predicate)})")
        self.emit(f"T.reads({', '.join(self.region(r) for r in block.reads)})")
        self.emit(f"T.writes({', '.join(self.region(r) for r in block.writes)})")
        if block.annotations:
            self.emit(f"T.{self.block_word}_attr({self.attr_dict(block.annotations)})")
        self.allocations(block.alloc_buffers)
        for match in block.match_buffers:
            self.match_buffer(match)
        if block.init is not None:
            self.emit("with T.init():")
            with self.nested():
                self.stmt(block.init)
        self.stmt(block.body)

    def iterators(self, block: Block, bindings: tuple[PrimExpr, ...] | None) -> None:
        ivs = block.iter_vars
        if not ivs:
            return
        if bindings is not None and len(bindings) == len(ivs) and self._remappable(block, bindings):
            loops = ", ".join(self.expr(b) for b in bindings)
            kinds = "".join(_AXIS_LETTER[iv.kind] for iv in ivs)
            names = ", ".join(self.define_var(iv.var) for iv in ivs)
            self.emit(f'{names} = T.axis.remap("{kinds}", [{loops}])')
            return
        for index, iv in enumerate(ivs):
            dom = iv.dom
            if is_const(dom.min, 0) and dom.min.dtype == dom.extent.dtype:
                args = [self.expr(dom.extent)]
            else:
                args = [f"({self.args(dom.min, end_of(dom.min, dom.extent))})"]
            if bindings is not None and index < len(bindings):
                args.append(self.expr(bindings[index]))
            name = self.define_var(iv.var)
            self.emit(f"{name} = T.axis.{iv.kind.value}({', '.join(args)})")

    def _remappable(self, block: Block, bindings: tuple[PrimExpr, ...]) -> bool:
        for iv, value in zip(block.iter_vars, bindings):
            if iv.kind not in _AXIS_LETTER or not isinstance(value, Var):
                return False
            loop = self.loop_ranges.get(value)
            if loop is None or value not in self.namer.names:
                return False
            if not (_identical(loop[0], iv.dom.min) and _identical(loop[1], iv.dom.extent)):
                return False
        return True

    # -- buffers --------------------------------------------------------------------------

    def allocations(self, buffers: tuple[Buffer, ...]) -> None:
        alloc = "sblock_alloc_buffer" if self.block_word == "sblock" else "alloc_buffer"
        for buf in buffers:
            args = self.buffer_args(buf, keep_dtype=False)
            self.emit(f"{self.define_buffer(buf)} = T.{alloc}({args})")

    def match_buffer(self, match: MatchBufferRegion) -> None:
        source = self.region(match.source)
        args = self.buffer_args(match.buffer, keep_dtype=True)
        self.emit(f"{self.define_buffer(match.buffer)} = T.match_buffer({source}, {args})")

    def buffer_args(self, buf: Buffer, *, keep_dtype: bool) -> str:
        """Shape, dtype and the keyword arguments that differ from their defaults."""
        args = [self.shape(buf.shape)]
        if keep_dtype or buf.dtype != float32:
            args.append(string(str(buf.dtype)))
        if buf.strides:
            args.append(f"strides={self.shape(buf.strides)}")
        symbolic_offset = isinstance(buf.elem_offset, Var)
        if not symbolic_offset and not (
            is_const(buf.elem_offset, 0) and buf.elem_offset.dtype == int32
        ):
            args.append(f"elem_offset={self.expr(buf.elem_offset)}")
        if buf.scope != "global":
            args.append(f"scope={string(buf.scope)}")
        if buf.align != DEFAULT_ALIGN:
            args.append(f"align={buf.align}")
        if buf.offset_factor != 1 or symbolic_offset:
            # With a variable offset, T.match_buffer(..., offset_factor=f) makes it again.
            args.append(f"offset_factor={buf.offset_factor}")
        if buf.layout is not None:
            args.append(f"layout={buf.layout.script()}")
        if buf.axis_separators:
            args.append(f"axis_separators={list(buf.axis_separators)}")
        if buf.annotations:
            args.append(f"annotations={self.attr_dict(buf.annotations)}")
        return ", ".join(args)


def _from_zero(loop: For) -> bool:
    return is_const(loop.min, 0) and loop.min.dtype == loop.extent.dtype


def _plain(loop: Stmt) -> bool:
    """A loop that ``T.grid`` can express: serial, from zero, no annotations or thread."""
    return (
        isinstance(loop, For)
        and loop.kind is ForKind.SERIAL
        and _from_zero(loop)
        and not loop.annotations
        and not loop.thread_tag
    )


def _identical(a: object, b: object) -> bool:
    """Same structure with the very same variables (not equal up to renaming)."""
    if a is b:
        return True
    if isinstance(a, Var) or isinstance(b, Var) or type(a) is not type(b):
        return False
    if isinstance(a, Node):
        return all(_identical(x, getattr(b, k)) for k, x in a.field_items())
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b))
    return a == b
