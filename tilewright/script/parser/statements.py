"""Statements of a script body: sequences, loops, ``with`` frames, blocks, ``if``.

``StatementParser`` walks a body; each ``visit_<Stmt>`` returns a statement, ``None`` for a
directive it applied to the enclosing block or function, or a ``Wrap`` whose statement
encloses the rest of the body (``LetStmt``, ``Allocate``).
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.dtype import bool_
from tilewright.ir.expr import IntImm, PrimExpr, Range, StringImm, Var
from tilewright.ir.functor import collect_vars
from tilewright.ir.printer import script
from tilewright.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    AttrValue,
    Block,
    BlockRealize,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    IterKind,
    IterVar,
    LetStmt,
    MatchBufferRegion,
    Stmt,
    While,
    attrs,
    seq,
)
from tilewright.script.parser.errors import SourceMap
from tilewright.script.parser.expressions import ExpressionEvaluator
from tilewright.script.parser.frames import (
    AccessDirective,
    AssertFrame,
    AttrDirective,
    AttrFrame,
    BlockFrame,
    BufferDecl,
    EnclosingDirective,
    InitFrame,
    LetFrame,
    LoopFrame,
    WhereDirective,
)

logger = logging.getLogger(__name__)


@dataclass
class Wrap:
    """A statement that encloses the rest of its body (``LetStmt``, ``Allocate``)."""

    make: Callable[[Stmt], Stmt]


@dataclass
class BlockBuilder:
    """What the directives of one ``with T.block(...)`` have declared so far."""

    name: str
    iter_vars: list[IterVar] = field(default_factory=list)
    iter_values: list[PrimExpr] = field(default_factory=list)
    predicate: PrimExpr | None = None
    reads: tuple[BufferRegion, ...] | None = None
    writes: tuple[BufferRegion, ...] | None = None
    annotations: dict[str, AttrValue] = field(default_factory=dict)
    alloc_buffers: list[Buffer] = field(default_factory=list)
    match_buffers: list[MatchBufferRegion] = field(default_factory=list)
    init: Stmt | None = None
    # Per iterator, the statement declaring it and whether it is a T.axis.remap.
    iter_sources: list[tuple[ast.stmt, bool]] = field(default_factory=list)
    init_at: ast.stmt | None = None


@dataclass
class FunctionBuilder:
    params: list[Var] = field(default_factory=list)
    buffer_map: dict[Var, Buffer] = field(default_factory=dict)
    attrs: dict[str, AttrValue] = field(default_factory=dict)
    root_allocs: list[Buffer] = field(default_factory=list)


class StatementParser(ExpressionEvaluator):
    """Walks statement lists; the state of the function and blocks being built is here."""

    def __init__(self, source: SourceMap, env: Mapping[str, object]) -> None:
        super().__init__(source, env)
        self.func = FunctionBuilder()
        self.blocks: list[BlockBuilder] = []
        self.inferred_access: dict[int, tuple[bool, bool]] = {}
        self.loop_ranges: dict[Var, Range] = {}

    def parse_body(self, stmts: list[ast.stmt]) -> Stmt:
        """The statements of a body in order; binding statements enclose what follows."""
        out: list[Stmt] = []
        for index, node in enumerate(stmts):
            method = getattr(self, f"visit_{type(node).__name__}", None)
            if method is None or not isinstance(node, ast.stmt):
                raise self.error(node, self._unsupported(node))
            result = method(node)
            if isinstance(result, Wrap):
                out.append(result.make(self.parse_body(stmts[index + 1 :])))
                break
            if result is not None:
                out.append(result)
        return seq(*out)

    def _unsupported(self, node: ast.AST) -> str:
        text = ast.unparse(node).splitlines()[0]
        return (
            f"unsupported statement {type(node).__name__} ({text}); expected a for loop, "
            "with T.block/T.init/T.attr, if/else, an assignment or a T. call"
        )

    def _nested_body(self, stmts: list[ast.stmt]) -> Stmt:
        with self.scope.nested():
            return self.parse_body(stmts)

    def _block(self, node: ast.AST, what: str) -> BlockBuilder:
        if not self.blocks:
            raise self.error(node, f"{what} is only allowed inside a with T.block(...)")
        return self.blocks[-1]

    # ---- statements ------------------------------------------------------------------------

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Expr(self, node: ast.Expr) -> Stmt | Wrap | None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str | type(...)):
            return None  # a docstring or `...`
        value = self.eval(node.value)
        if isinstance(value, AccessDirective):
            block = self._block(node, "T.writes" if value.is_write else "T.reads")
            if value.is_write:
                block.writes = (block.writes or ()) + value.regions
            else:
                block.reads = (block.reads or ()) + value.regions
            return None
        if isinstance(value, WhereDirective):
            self._block(node, "T.where").predicate = value.predicate
            return None
        if isinstance(value, AttrDirective):
            if value.on_function:
                self.func.attrs.update(value.attrs)
            else:
                self._block(node, "T.block_attr").annotations.update(value.attrs)
            return None
        if isinstance(value, EnclosingDirective):
            try:
                return Wrap(value.enclose(None)[1])
            except (TypeError, ValueError) as err:
                raise self.error(node, str(err)) from None
        if isinstance(value, AttrFrame):
            # TVM prints `T.attr(node, key, value)` bare: the rest of the body is its body.
            frame = value
            return Wrap(lambda body: AttrStmt(frame.node, frame.key, frame.value, body))
        if isinstance(value, Stmt):
            return value
        if isinstance(value, PrimExpr):
            return Evaluate(value)
        raise self.error(
            node,
            "expected a statement such as T.reads(...), T.evaluate(...) or a call, "
            f"found a {type(value).__name__} value",
        )

    def visit_For(self, node: ast.For) -> Stmt:
        frame = self.eval(node.iter)
        if not isinstance(frame, LoopFrame):
            raise self.error(
                node.iter,
                "expected a loop such as range(n), T.grid(...), T.serial(n) or "
                f"T.thread_binding(n, thread=...), found {ast.unparse(node.iter)}",
            )
        if node.orelse:
            raise self.error(node.orelse[0], "for ... else is not supported in a script")
        elts = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
        targets = [t for t in elts if isinstance(t, ast.Name)]
        if len(targets) != len(elts):
            raise self.error(node.target, "loop targets must be plain names")
        if len(targets) != len(frame.loops):
            raise self.error(
                node.target,
                f"{len(frame.loops)} loops but {len(targets)} loop variables; "
                f"expected {len(frame.loops)} names",
            )
        loop_vars = [Var(t.id, spec.extent.dtype) for t, spec in zip(targets, frame.loops)]
        with self.scope.nested():
            for target, var, spec in zip(targets, loop_vars, frame.loops):
                self.scope.define(target.id, var)
                self.loop_ranges[var] = Range(spec.min, spec.extent)
            body = self.parse_body(node.body)
        span = self.source.span(node)
        for var, spec in reversed(list(zip(loop_vars, frame.loops))):
            body = For(
                var,
                spec.min,
                spec.extent,
                spec.kind,
                body,
                spec.thread_tag,
                spec.annotations,
                span,
            )
        return body

    def visit_With(self, node: ast.With) -> Stmt | None:
        if len(node.items) != 1:
            raise self.error(node, "expected one frame per `with`, such as with T.block(...):")
        frame = self.eval(node.items[0].context_expr)
        target = node.items[0].optional_vars
        if isinstance(frame, BufferDecl) and frame.kind == "decl":
            # `with T.decl_buffer(...) as X:` scopes the allocation to the with body.
            if not isinstance(target, ast.Name):
                raise self.error(node, "expected `with T.decl_buffer(...) as name:`")
            buffer = frame.spec.make(target.id)
            with self.scope.nested():
                self.scope.define(target.id, buffer)
                body = self.parse_body(node.body)
            if frame.spec.data is not None:
                return DeclBuffer(buffer, body)
            return Allocate(buffer, body)
        if isinstance(frame, EnclosingDirective):
            # `with T.launch_thread(tx, 32):` (TVM's printed form) encloses its with body.
            if target is not None and not isinstance(target, ast.Name):
                raise self.error(target, "expected `with ... as name:` with a plain name")
            names = [target.id] if isinstance(target, ast.Name) else None
            try:
                bound, make = frame.enclose(names)
            except (TypeError, ValueError) as err:
                raise self.error(node, str(err)) from None
            with self.scope.nested():
                if isinstance(target, ast.Name):
                    self.scope.define(target.id, bound)
                return make(self.parse_body(node.body))
        if isinstance(frame, LetFrame) and frame.var is None:
            if not isinstance(target, ast.Name):
                raise self.error(node, "expected `with T.LetStmt(value) as name:`")
            var = Var(target.id, frame.value.dtype)
            with self.scope.nested():
                self.scope.define(target.id, var)
                return LetStmt(var, frame.value, self.parse_body(node.body))
        if target is not None:
            raise self.error(
                target, "only `with T.decl_buffer(...) as name:` and T.LetStmt take `as`"
            )
        if isinstance(frame, BlockFrame):
            return self._parse_block(frame, node)
        if isinstance(frame, InitFrame):
            block = self._block(node, "T.init()")
            if block.init is not None:
                raise self.error(node, f"block {block.name} has two T.init() sections")
            block.init = self._nested_body(node.body)
            block.init_at = node
            return None
        if isinstance(frame, AttrFrame):
            return AttrStmt(frame.node, frame.key, frame.value, self._nested_body(node.body))
        if isinstance(frame, LetFrame) and frame.var is not None:
            return LetStmt(frame.var, frame.value, self._nested_body(node.body))
        if isinstance(frame, AssertFrame):
            body = self._nested_body(node.body)
            return AssertStmt(frame.condition, frame.message, body)
        raise self.error(
            node.items[0].context_expr,
            "expected T.block(...), T.init(), T.attr(...), T.let(...) or T.decl_buffer(...) "
            "after with, found " + ast.unparse(node.items[0].context_expr),
        )

    def _parse_block(self, frame: BlockFrame, node: ast.With) -> Stmt:
        builder = BlockBuilder(frame.name)
        self.blocks.append(builder)
        try:
            body = self._nested_body(node.body)
        finally:
            self.blocks.pop()
        block = Block(
            builder.name,
            tuple(builder.iter_vars),
            builder.reads or (),
            builder.writes or (),
            body,
            builder.init,
            tuple(builder.alloc_buffers),
            tuple(builder.match_buffers),
            attrs(builder.annotations),
            self.source.span(node),
        )
        if builder.reads is None or builder.writes is None:
            from tilewright.arith.region import block_access_regions

            reads, writes = block_access_regions(block, self._buffers_by_data(builder))
            block = block.replace(
                reads=builder.reads if builder.reads is not None else reads,
                writes=builder.writes if builder.writes is not None else writes,
            )
            # Remembered for a hand-written root block, which keeps empty regions (TVM's
            # parser infers them for every block but the root).
            self.inferred_access[id(block)] = (builder.reads is None, builder.writes is None)
        if block.init is not None:
            self._check_reduction(builder, block, node)
        predicate = builder.predicate if builder.predicate is not None else IntImm(1, bool_)
        return BlockRealize(tuple(builder.iter_values), predicate, block)

    def _buffers_by_data(self, builder: BlockBuilder) -> dict[Var, Buffer]:
        """The buffers in scope at a block, by data variable (for ``T.tvm_access_ptr``)."""
        found = {b.data: b for b in self.func.buffer_map.values()}
        found.update((b.data, b) for b in self.func.root_allocs)
        for outer in (*self.blocks, builder):
            found.update((b.data, b) for b in outer.alloc_buffers)
            found.update((m.buffer.data, m.buffer) for m in outer.match_buffers)
        return found

    def _check_reduction(self, builder: BlockBuilder, block: Block, node: ast.With) -> None:
        """A block with ``T.init()``: when the script leaves the writes to inference, the init
        writes only what the body writes (explicit ``T.writes`` are taken as stated). A block
        of spatial iterators only is accepted, as TVM accepts it: without a reduce iterator
        the init runs at every step; when an iterator does not index what the block writes
        (so only the last step's value stays), a warning names it and the likely fix."""
        from tilewright.arith.region import block_access_regions

        assert block.init is not None
        init_at = builder.init_at or node
        _, body_writes = block_access_regions(block.replace(init=None))
        _, init_writes = block_access_regions(block.replace(body=block.init, init=None))
        outputs = {region.buffer for region in body_writes}
        stray = [r.buffer.name for r in init_writes if r.buffer not in outputs]
        if stray and builder.writes is None:
            names = ", ".join(sorted({b.name for b in outputs})) or "nothing"
            raise self.error(
                init_at,
                f"block {block.name!r}: T.init() writes {', '.join(stray)}, which the block "
                f"does not write; expected the init to set what the block reduces into "
                f"({names})",
            )
        if any(iv.kind is not IterKind.SPATIAL for iv in block.iter_vars):
            return
        indexed = set(collect_vars(tuple(r.region for r in body_writes)))
        unused = [k for k, iv in enumerate(block.iter_vars) if iv.var not in indexed]
        if not unused:
            return  # each step writes its own element: init-then-update is still right
        first = unused[0]
        names = " and ".join(block.iter_vars[k].var.name for k in unused)
        outputs_text = ", ".join(script(r) for r in body_writes)
        where, is_remap = builder.iter_sources[first]
        if is_remap:
            kinds = "".join(
                "R" if k in unused else "S"
                for k, (at, _) in enumerate(builder.iter_sources)
                if at is where
            )
            fix = f'T.axis.remap("{kinds}", ...)'
        else:
            fix = f"{block.iter_vars[first].var.name} = T.axis.reduce(...)"
        verb, should = ("does", "it should be") if len(unused) == 1 else ("do", "each should be")
        warning = self.error(
            where,
            f"block {block.name!r} has T.init() but no reduction iterator: {names} {verb} "
            f"not index what the block writes ({outputs_text}), so, as in TVM, the init runs "
            f'at every step; for a reduction {should} "R": {fix}',
        )
        logger.warning("%s", warning)

    def visit_Assert(self, node: ast.Assert) -> Wrap:
        cond = self.eval(node.test)
        message = self.eval(node.msg) if node.msg is not None else ""
        if not isinstance(cond, PrimExpr | bool) or not isinstance(message, str | StringImm):
            raise self.error(node, 'expected `assert condition, "message"`')
        condition = op.convert(cond)
        text = message if isinstance(message, StringImm) else StringImm(message)
        return Wrap(lambda rest: AssertStmt(condition, text, rest))

    def visit_While(self, node: ast.While) -> Stmt:
        cond = self.eval(node.test)
        if not isinstance(cond, PrimExpr) or node.orelse:
            raise self.error(node, "expected `while condition:` with an IR condition, no else")
        return While(cond, self._nested_body(node.body))

    def visit_If(self, node: ast.If) -> Stmt | None:
        cond = self.eval(node.test)
        if not isinstance(cond, PrimExpr):
            # A Python condition chooses a branch while parsing (meta-programming).
            chosen = node.body if cond else node.orelse
            return self._nested_body(chosen) if chosen else None
        if not cond.dtype.is_bool:
            cond = op.ne(cond, 0)
        then_case = self._nested_body(node.body)
        else_case = self._nested_body(node.orelse) if node.orelse else None
        return IfThenElse(cond, then_case, else_case)
