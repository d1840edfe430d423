"""The script parser: a ``@T.prim_func`` function's ``ast`` to a ``PrimFunc``.

Statements dispatch on their ``ast`` class (``visit_For``, ``visit_With``, ...). Values of
``T.`` calls that are directives (``frames.py``) are applied to the loop, block or function
being built; assignments that bind the rest of a body (``LetStmt``, ``T.decl_buffer``) wrap
the statements that follow them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.dtype import bool_, handle, int32
from tilewright.ir.expr import BufferLoad, IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.stmt import (
    Allocate,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    IterVar,
    LetStmt,
    MatchBufferRegion,
    Stmt,
    attrs,
    seq,
)
from tilewright.script.parser.expressions import BINARY_OPERATORS, ExpressionEvaluator
from tilewright.script.parser.frames import (
    AccessDirective,
    AttrDirective,
    AttrFrame,
    AxisDecl,
    AxisRemap,
    BlockFrame,
    BufferDecl,
    BufferType,
    DTypeConstructor,
    InitFrame,
    LetFrame,
    LoopFrame,
    VarDecl,
    WhereDirective,
)


@dataclass
class _Wrap:
    """A statement that encloses the rest of its body (``LetStmt``, ``Allocate``)."""

    make: Callable[[Stmt], Stmt]


@dataclass
class _BlockBuilder:
    """What the directives of one ``with T.block(...)`` have declared so far."""

    name: str
    iter_vars: list[IterVar] = field(default_factory=list)
    iter_values: list[PrimExpr] = field(default_factory=list)
    predicate: PrimExpr | None = None
    reads: tuple[BufferRegion, ...] | None = None
    writes: tuple[BufferRegion, ...] | None = None
    annotations: dict[str, object] = field(default_factory=dict)
    alloc_buffers: list[Buffer] = field(default_factory=list)
    match_buffers: list[MatchBufferRegion] = field(default_factory=list)
    init: Stmt | None = None


@dataclass
class _FunctionBuilder:
    params: list[Var] = field(default_factory=list)
    buffer_map: dict[Var, Buffer] = field(default_factory=dict)
    attrs: dict[str, object] = field(default_factory=dict)
    root_allocs: list[Buffer] = field(default_factory=list)


def _no_op() -> Stmt:
    return Evaluate(IntImm(0, int32))


class Parser(ExpressionEvaluator):
    """Parses one function definition; create one per function.

    Example::

        >>> tree = ast.parse(text)
        >>> func = Parser(SourceMap("<string>", tuple(text.splitlines())), env).parse_function(
        ...     tree.body[0])
    """

    def parse_function(self, node: ast.FunctionDef) -> PrimFunc:
        """The ``PrimFunc`` of a ``def`` whose parameters are annotated with ``T`` types."""
        self.func = _FunctionBuilder()
        self.blocks: list[_BlockBuilder] = []
        self.loop_ranges: dict[Var, Range] = {}
        arguments = node.args
        extra = arguments.posonlyargs or arguments.kwonlyargs or arguments.vararg
        if extra or arguments.kwarg or arguments.defaults:
            raise self.error(
                node, "a prim_func takes plain parameters only (no defaults, *args or **kwargs)"
            )
        with self.scope.nested():
            # Scalar parameters first: a buffer's shape may use one that comes later.
            simple = [a for a in arguments.args if isinstance(a.annotation, ast.Attribute)]
            declared = {a.arg: self._parameter(a) for a in simple}
            for arg in arguments.args:
                if arg.arg not in declared:
                    declared[arg.arg] = self._parameter(arg)
            self.func.params = [declared[a.arg] for a in arguments.args]
            body = self.parse_body(node.body)
        body = self._with_root_block(body)
        buffer_map = tuple(
            (p, self.func.buffer_map[p]) for p in self.func.params if p in self.func.buffer_map
        )
        return PrimFunc(tuple(self.func.params), body, buffer_map, attrs(self.func.attrs))  # type: ignore[arg-type]

    def _parameter(self, arg: ast.arg) -> Var:
        name = arg.arg
        if arg.annotation is None:
            raise self.error(
                arg,
                f"parameter {name} has no annotation; expected T.Buffer((...), dtype), "
                "T.handle or a dtype such as T.int32",
            )
        kind = self.eval(arg.annotation)
        if isinstance(kind, BufferType):
            param = Var(name, handle)
            buffer = kind.make(name)
            self.func.buffer_map[param] = buffer
            self.scope.define(name, buffer)
            return param
        if isinstance(kind, DTypeConstructor):
            var = Var(name, kind.type)
            self.scope.define(name, var)
            return var
        raise self.error(
            arg.annotation,
            f"parameter {name}: expected T.Buffer((...), dtype), T.handle or a dtype such "
            f"as T.int32, found {ast.unparse(arg.annotation)}",
        )

    def _with_root_block(self, body: Stmt) -> Stmt:
        allocs = tuple(self.func.root_allocs)
        if not allocs and isinstance(body, BlockRealize) and not body.block.iter_vars:
            return body  # the body already is the root block
        has_block = False

        def find(node: object) -> bool:
            nonlocal has_block
            if isinstance(node, Block):
                has_block = True
            return not has_block and not isinstance(node, PrimExpr)

        from tilewright.ir.functor import pre_order_visit

        pre_order_visit(body, find)
        if not has_block and not allocs:
            return body
        root = Block("root", (), (), (), body, alloc_buffers=allocs)
        return BlockRealize((), IntImm(1, bool_), root)

    # ---- bodies ----------------------------------------------------------------------------

    def parse_body(self, stmts: list[ast.stmt]) -> Stmt:
        """The statements of a body in order; binding statements enclose what follows."""
        out: list[Stmt] = []
        for index, node in enumerate(stmts):
            method = getattr(self, f"visit_{type(node).__name__}", None)
            if method is None or not isinstance(node, ast.stmt):
                raise self.error(node, self._unsupported(node))
            result = method(node)
            if isinstance(result, _Wrap):
                out.append(result.make(self.parse_body(stmts[index + 1 :])))
                break
            if result is not None:
                out.append(result)
        return seq(*out) if out else _no_op()

    def _unsupported(self, node: ast.AST) -> str:
        text = ast.unparse(node).splitlines()[0]
        return (
            f"unsupported statement {type(node).__name__} ({text}); expected a for loop, "
            "with T.block/T.init/T.attr, if/else, an assignment or a T. call"
        )

    def _nested_body(self, stmts: list[ast.stmt]) -> Stmt:
        with self.scope.nested():
            return self.parse_body(stmts)

    def _block(self, node: ast.AST, what: str) -> _BlockBuilder:
        if not self.blocks:
            raise self.error(node, f"{what} is only allowed inside a with T.block(...)")
        return self.blocks[-1]

    # ---- statements ------------------------------------------------------------------------

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Expr(self, node: ast.Expr) -> Stmt | None:
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
        targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
        if not all(isinstance(t, ast.Name) for t in targets):
            raise self.error(node.target, "loop targets must be plain names")
        if len(targets) != len(frame.loops):
            raise self.error(
                node.target,
                f"{len(frame.loops)} loops but {len(targets)} loop variables; "
                f"expected {len(frame.loops)} names",
            )
        loop_vars = [Var(t.id, spec.extent.dtype) for t, spec in zip(targets, frame.loops)]  # type: ignore[attr-defined]
        with self.scope.nested():
            for target, var, spec in zip(targets, loop_vars, frame.loops):
                self.scope.define(target.id, var)  # type: ignore[attr-defined]
                self.loop_ranges[var] = Range(spec.min, spec.extent)
            body = self.parse_body(node.body)
        for var, spec in reversed(list(zip(loop_vars, frame.loops))):
            body = For(
                var, spec.min, spec.extent, spec.kind, body, spec.thread_tag, spec.annotations
            )
        return body

    def visit_With(self, node: ast.With) -> Stmt | None:
        if len(node.items) != 1 or node.items[0].optional_vars is not None:
            raise self.error(node, "expected one `with T.block(...):` (no `as`, one item)")
        frame = self.eval(node.items[0].context_expr)
        if isinstance(frame, BlockFrame):
            return self._parse_block(frame, node)
        if isinstance(frame, InitFrame):
            block = self._block(node, "T.init()")
            if block.init is not None:
                raise self.error(node, f"block {block.name} has two T.init() sections")
            block.init = self._nested_body(node.body)
            return None
        if isinstance(frame, AttrFrame):
            return AttrStmt(frame.node, frame.key, frame.value, self._nested_body(node.body))
        if isinstance(frame, LetFrame):
            return LetStmt(frame.var, frame.value, self._nested_body(node.body))
        raise self.error(
            node.items[0].context_expr,
            "expected T.block(...), T.init(), T.attr(...) or T.let(...) after with, found "
            + ast.unparse(node.items[0].context_expr),
        )

    def _parse_block(self, frame: BlockFrame, node: ast.With) -> Stmt:
        builder = _BlockBuilder(frame.name)
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
            attrs(builder.annotations),  # type: ignore[arg-type]
        )
        if builder.reads is None or builder.writes is None:
            from tilewright.arith.region import block_access_regions

            reads, writes = block_access_regions(block)
            block = block.replace(  # type: ignore[assignment]
                reads=builder.reads if builder.reads is not None else reads,
                writes=builder.writes if builder.writes is not None else writes,
            )
        predicate = builder.predicate if builder.predicate is not None else IntImm(1, bool_)
        return BlockRealize(tuple(builder.iter_values), predicate, block)

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

    def visit_Assign(self, node: ast.Assign) -> Stmt | _Wrap | None:
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment (a = b = ...) is not supported")
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            return self._store(target, self.eval(node.value), node)
        return self._bind(target, self.eval(node.value), node)

    def visit_AugAssign(self, node: ast.AugAssign) -> Stmt:
        if not isinstance(node.target, ast.Subscript):
            raise self.error(node, "augmented assignment needs a buffer element: C[i] += x")
        current = self.visit_Subscript(node.target)
        value = self.eval(node.value)
        try:
            result = BINARY_OPERATORS[type(node.op)](current, value)
        except (TypeError, ValueError, KeyError) as err:
            raise self.error(node, f"cannot apply {ast.unparse(node)}: {err}") from None
        return self._store(node.target, result, node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Stmt | _Wrap | None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "an annotated assignment needs a plain name")
        kind = self.eval(node.annotation)
        name = node.target.id
        if isinstance(kind, BufferType):
            value = self.eval(node.value) if node.value is not None else kind
            return self._bind(node.target, value, node)
        if not isinstance(kind, DTypeConstructor):
            raise self.error(
                node.annotation,
                f"expected a dtype such as T.int32, found {ast.unparse(node.annotation)}",
            )
        var = Var(name, kind.type)
        if node.value is None:
            self.scope.define(name, var)
            return None
        value = self.eval(node.value)
        if not isinstance(value, PrimExpr | bool | int | float):
            raise self.error(node.value, f"expected an expression for {name}, found {value!r}")
        expr = op.cast(op.convert(value, kind.type), kind.type)
        self.scope.define(name, var)
        return _Wrap(lambda rest: LetStmt(var, expr, rest))

    # ---- assignment helpers ----------------------------------------------------------------

    def _store(self, target: ast.Subscript, value: object, node: ast.stmt) -> Stmt:
        buffer = self.eval(target.value)
        if not isinstance(buffer, Buffer):
            raise self.error(
                target, f"cannot assign to {ast.unparse(target)}; expected a buffer element"
            )
        indices = self.index_items(target.slice)
        self.check_indices(target, buffer, len(indices))
        if any(isinstance(i, slice) for i in indices):
            raise self.error(target, f"cannot store to a region of buffer {buffer.name}")
        exprs = []
        for index, item in zip(
            indices, target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        ):
            if not isinstance(index, PrimExpr | int) or isinstance(index, bool):
                raise self.error(
                    item, f"buffer {buffer.name}: expected an integer index, found {index!r}"
                )
            exprs.append(op.convert(index))
        if isinstance(value, bool | int | float):
            stored = op.convert(value, buffer.dtype)
        elif isinstance(value, PrimExpr):
            stored = value
        else:
            raise self.error(
                node, f"cannot store a {type(value).__name__} into buffer {buffer.name}"
            )
        if stored.dtype.element != buffer.dtype.element:
            raise self.error(
                node,
                f"cannot store a {stored.dtype} value into buffer {buffer.name} of "
                f"{buffer.dtype}; expected {buffer.dtype} (cast with T.{buffer.dtype}(...))",
            )
        return BufferStore(buffer, stored, tuple(exprs))

    def _bind(self, target: ast.expr, value: object, node: ast.stmt) -> Stmt | _Wrap | None:
        if isinstance(value, AxisRemap):
            return self._remap(target, value, node)
        if isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, tuple | list) or len(value) != len(target.elts):
                raise self.error(
                    node, f"cannot unpack {ast.unparse(node.value)} into {len(target.elts)} names"
                )  # type: ignore[attr-defined]
            for item, part in zip(target.elts, value):
                if self._bind(item, part, node) is not None:
                    raise self.error(item, "only plain values can be unpacked")
            return None
        if not isinstance(target, ast.Name):
            raise self.error(target, f"cannot assign to {ast.unparse(target)}")
        name = target.id
        if isinstance(value, AxisDecl):
            block = self._block(node, "T.axis")
            dom = value.dom if value.dom is not None else self._loop_dom(value.binding, node)
            var = Var(name, value.binding.dtype)
            block.iter_vars.append(IterVar(var, dom, value.kind))
            block.iter_values.append(value.binding)
            self.scope.define(name, var)
            return None
        if isinstance(value, BufferDecl):
            return self._declare_buffer(name, value, node)
        if isinstance(value, BufferType):
            self.scope.define(name, value.make(name))
            return None
        if isinstance(value, VarDecl):
            self.scope.define(name, Var(name, value.dtype))
            return None
        if isinstance(value, PrimExpr):
            var = Var(name, value.dtype)
            self.scope.define(name, var)
            return _Wrap(lambda rest: LetStmt(var, value, rest))
        self.scope.define(name, value)
        return None

    def _loop_dom(self, binding: PrimExpr, node: ast.AST) -> Range:
        if not isinstance(binding, Var) or binding not in self.loop_ranges:
            raise self.error(node, f"T.axis.remap binds loop variables; {binding!r} is not one")
        return self.loop_ranges[binding]

    def _remap(self, target: ast.expr, value: AxisRemap, node: ast.stmt) -> None:
        names = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
        if len(names) != len(value.kinds) or not all(isinstance(n, ast.Name) for n in names):
            raise self.error(
                target,
                f"T.axis.remap declares {len(value.kinds)} iterators; expected "
                f"{len(value.kinds)} names on the left, found {ast.unparse(target)}",
            )
        block = self._block(node, "T.axis.remap")
        for name, kind, binding in zip(names, value.kinds, value.bindings):
            var = Var(name.id, binding.dtype)  # type: ignore[attr-defined]
            block.iter_vars.append(IterVar(var, self._loop_dom(binding, node), kind))
            block.iter_values.append(binding)
            self.scope.define(name.id, var)  # type: ignore[attr-defined]

    def _is_param(self, var: Var) -> bool:
        return any(var is p for p in self.func.params) or var in self.func.buffer_map

    def _declare_buffer(self, name: str, decl: BufferDecl, node: ast.stmt) -> _Wrap | None:
        buffer = decl.spec.make(name)
        self.scope.define(name, buffer)
        if decl.kind == "alloc":
            owner = self.blocks[-1].alloc_buffers if self.blocks else self.func.root_allocs
            owner.append(buffer)
            return None
        if decl.kind == "decl":
            return _Wrap(lambda rest: Allocate(buffer, rest))
        source = decl.source
        if isinstance(source, Var) and source.dtype.is_handle and self._is_param(source):
            if self.blocks:
                raise self.error(node, "T.match_buffer of a parameter belongs at function level")
            if source in self.func.buffer_map:
                raise self.error(node, f"parameter {source.name} is already bound to a buffer")
            self.func.buffer_map[source] = buffer
            return None
        if isinstance(source, BufferLoad | BufferRegion | Buffer):
            from tilewright.script.tir.arguments import region

            self._block(node, "T.match_buffer of a region").match_buffers.append(
                MatchBufferRegion(buffer, region(source, "T.match_buffer"))
            )
            return None
        raise self.error(
            node,
            "T.match_buffer: expected a T.handle parameter or a buffer region such as A[i, 0:4]",
        )
