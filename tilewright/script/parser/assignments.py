"""Assignments in a script body: buffer stores, iterator and buffer declarations, lets."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Sequence
from typing import cast

from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.dtype import int32
from tilewright.ir.expr import BufferLoad, PrimExpr, Range, Var
from tilewright.ir.stmt import (
    Allocate,
    BufferStore,
    DeclBuffer,
    IterVar,
    LetStmt,
    MatchBufferRegion,
    Stmt,
)
from tilewright.script.parser.expressions import BINARY_OPERATORS
from tilewright.script.parser.frames import (
    AxisDecl,
    AxisRemap,
    BufferDecl,
    BufferType,
    DTypeConstructor,
    EnclosingDirective,
    LetAnnotation,
    MetaVar,
    VarDecl,
)
from tilewright.script.parser.statements import StatementParser, Wrap


class AssignmentParser(StatementParser):
    """``C[i] = v``, ``vi = T.axis...``, ``X = T.alloc_buffer(...)``, ``x = expr`` and friends."""

    def visit_Assign(self, node: ast.Assign) -> Stmt | Wrap | None:
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
        self.check_operands(node, ((node.target, current), (node.value, value)))
        try:
            result = BINARY_OPERATORS[type(node.op)](current, value)
        except (TypeError, ValueError, KeyError) as err:
            raise self.error(node, f"cannot apply {ast.unparse(node)}: {err}") from None
        return self._store(node.target, result, node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Stmt | Wrap | None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "an annotated assignment needs a plain name")
        kind = self.eval(node.annotation)
        name = node.target.id
        if isinstance(kind, LetAnnotation):
            kind = self._let_kind(node, kind)
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
        return Wrap(lambda rest: LetStmt(var, expr, rest))

    # ---- assignment helpers ----------------------------------------------------------------

    def _let_kind(self, node: ast.AnnAssign, let: LetAnnotation) -> DTypeConstructor:
        """The dtype of ``x: T.let[T.float32] = v``, or of ``v`` for a bare ``x: T.let = v``."""
        if node.value is None:
            raise self.error(node, f"T.let binds a value: expected {ast.unparse(node)} = value")
        if let.kind is not None:
            return let.kind
        value = self.eval(node.value)
        if not isinstance(value, PrimExpr | bool | int | float):
            raise self.error(node.value, f"expected an expression for T.let, found {value!r}")
        return DTypeConstructor(str(op.convert(value).dtype))

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
        self.check_index_types(target, buffer, indices)
        exprs = [op.convert(index) for index in indices if isinstance(index, PrimExpr | int)]
        if isinstance(value, bool | int | float):
            stored = op.convert(value, buffer.dtype)
        elif isinstance(value, PrimExpr):
            stored = value
        else:
            raise self.error(
                node, f"cannot store a {type(value).__name__} into buffer {buffer.name}"
            )
        if stored.dtype.element != buffer.dtype.element and not (
            stored.dtype.is_handle or buffer.dtype.is_handle
        ):
            # As TVM's parser: a value of another numeric dtype is cast to the buffer's
            # (``A[i] = i`` into a float32 buffer stores ``T.Cast("float32", i)``).
            stored = op.cast(stored, buffer.dtype.element.with_lanes(stored.dtype.lanes))
        if stored.dtype.element != buffer.dtype.element:
            raise self.error(
                node,
                f"cannot store a {stored.dtype} value into buffer {buffer.name} of "
                f"{buffer.dtype}; expected {buffer.dtype} (cast with T.{buffer.dtype}(...))",
            )
        return BufferStore(buffer, stored, tuple(exprs), self.source.span(node))

    def _bind(
        self, target: ast.expr, value: object, node: ast.Assign | ast.AnnAssign
    ) -> Stmt | Wrap | None:
        if isinstance(value, EnclosingDirective):
            return self._enclose(target, value)
        if isinstance(value, AxisRemap):
            self._remap(target, value, node)
            return None
        if isinstance(value, MetaVar):
            self._bind_meta(target, value.value, node)
            return None
        if isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, tuple | list) or len(value) != len(target.elts):
                # Only ast.Assign has a tuple target (AnnAssign needs a name), so a value is there.
                source = cast(ast.expr, node.value)
                raise self.error(
                    node, f"cannot unpack {ast.unparse(source)} into {len(target.elts)} names"
                )
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
            block.iter_sources.append((node, False))
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
        is_call = isinstance(node.value, ast.Call)
        if isinstance(value, DTypeConstructor) and value.type.is_handle and is_call:
            # ``p = T.handle("float32")``: a pointer variable (for ``T.decl_buffer(data=p)``).
            self.scope.define(name, Var(name, value.type))
            return None
        if isinstance(value, PrimExpr):
            var = Var(name, value.dtype)
            self.scope.define(name, var)
            return Wrap(lambda rest: LetStmt(var, value, rest))
        self.scope.define(name, value)
        return None

    def _bind_meta(self, target: ast.expr, value: object, node: ast.Assign | ast.AnnAssign) -> None:
        if isinstance(target, ast.Name):
            self.scope.define(target.id, value)
            return None
        if not isinstance(target, ast.Tuple | ast.List) or not all(
            isinstance(item, ast.Name) for item in target.elts
        ):
            raise self.error(target, f"T.meta_var binds plain names, not {ast.unparse(target)}")
        if not isinstance(value, tuple | list) or len(value) != len(target.elts):
            raise self.error(
                node, f"cannot unpack T.meta_var's value {value!r} into {len(target.elts)} names"
            )
        for item, part in zip(target.elts, value):
            self.scope.define(cast(ast.Name, item).id, part)
        return None

    def _enclose(self, target: ast.expr, directive: EnclosingDirective) -> Wrap:
        many = isinstance(target, ast.Tuple | ast.List)
        names = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
        plain = [n for n in names if isinstance(n, ast.Name)]
        if len(plain) != len(names):
            raise self.error(
                target, f"expected plain names on the left, found {ast.unparse(target)}"
            )
        try:
            bound, make = directive.enclose([n.id for n in plain])
        except (TypeError, ValueError) as err:
            raise self.error(target, str(err)) from None
        # Given several names, enclose() binds a sequence of one value per name.
        values = cast("Sequence[object]", bound) if many else (bound,)
        for name, value in zip(plain, values):
            self.scope.define(name.id, value)
        return Wrap(make)

    def _loop_dom(self, binding: PrimExpr, node: ast.AST) -> Range:
        if not isinstance(binding, Var) or binding not in self.loop_ranges:
            raise self.error(node, f"T.axis.remap binds loop variables; {binding!r} is not one")
        return self.loop_ranges[binding]

    def _remap(self, target: ast.expr, value: AxisRemap, node: ast.stmt) -> None:
        names = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
        plain = [n for n in names if isinstance(n, ast.Name)]
        if len(names) != len(value.kinds) or len(plain) != len(names):
            raise self.error(
                target,
                f"T.axis.remap declares {len(value.kinds)} iterators; expected "
                f"{len(value.kinds)} names on the left, found {ast.unparse(target)}",
            )
        block = self._block(node, "T.axis.remap")
        for name, kind, binding in zip(plain, value.kinds, value.bindings):
            var = Var(name.id, binding.dtype)
            block.iter_vars.append(IterVar(var, self._loop_dom(binding, node), kind))
            block.iter_values.append(binding)
            block.iter_sources.append((node, True))
            self.scope.define(name.id, var)

    def _is_param(self, var: Var) -> bool:
        return any(var is p for p in self.func.params) or var in self.func.buffer_map

    def _declare_buffer(self, name: str, decl: BufferDecl, node: ast.stmt) -> Wrap | None:
        spec = decl.spec
        if decl.kind == "match" and spec.offset_factor and spec.elem_offset is None:
            # As in TVM: a match buffer given an offset factor starts anywhere (a multiple of
            # the factor) in what it matches; its offset is a variable the match binds.
            # (A printed script declares it first, as ``A_elem_offset = T.int32()``.)
            declared = self.scope.lookup(f"{name}_elem_offset", None)
            offset = declared if isinstance(declared, Var) else Var(f"{name}_elem_offset", int32)
            spec = dataclasses.replace(spec, elem_offset=offset)
        buffer = spec.make(name)
        self.scope.define(name, buffer)
        if decl.kind == "alloc":
            owner = self.blocks[-1].alloc_buffers if self.blocks else self.func.root_allocs
            owner.append(buffer)
            return None
        if decl.kind == "decl" and spec.data is not None:
            return Wrap(lambda rest: DeclBuffer(buffer, rest))
        if decl.kind == "decl":
            return Wrap(lambda rest: Allocate(buffer, rest))
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
