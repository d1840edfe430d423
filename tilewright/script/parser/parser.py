"""The script parser: a ``@T.prim_func`` function's ``ast`` to a ``PrimFunc``.

Statements dispatch on their ``ast`` class (``visit_For``, ``visit_With``, ...; see
``statements.py`` and ``assignments.py``). Values of ``T.`` calls that are directives
(``frames.py``) are applied to the loop, block or function being built.
"""

from __future__ import annotations

import ast

from tilewright.ir.dtype import bool_, handle
from tilewright.ir.expr import IntImm, PrimExpr, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.stmt import (
    Block,
    BlockRealize,
    Stmt,
    attrs,
)
from tilewright.script.parser.assignments import AssignmentParser
from tilewright.script.parser.frames import (
    BufferType,
    DTypeConstructor,
)


class Parser(AssignmentParser):
    """Parses one function definition; create one per function.

    Example::

        >>> tree = ast.parse(text)
        >>> func = Parser(SourceMap("<string>", tuple(text.splitlines())), env).parse_function(
        ...     tree.body[0])
    """

    def parse_function(self, node: ast.FunctionDef) -> PrimFunc:
        """The ``PrimFunc`` of a ``def`` whose parameters are annotated with ``T`` types."""
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
        return PrimFunc(
            tuple(self.func.params),
            body,
            buffer_map,
            attrs(self.func.attrs),
            name=node.name,
            spelling=_spelling(node),
        )

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
            # The body already is the root block: regions the script left out stay empty.
            no_reads, no_writes = self.inferred_access.get(id(body.block), (False, False))
            root = body.block.replace(
                reads=() if no_reads else body.block.reads,
                writes=() if no_writes else body.block.writes,
            )
            return body if root == body.block else body.replace(block=root)
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


# TVM's newer names of the block statements; a function written with any prints with them.
_NEWER_BLOCK_NAMES = frozenset({"sblock", "sblock_attr", "sblock_alloc_buffer"})


def _spelling(node: ast.FunctionDef) -> str:
    """How ``node`` spells blocks: "s_tir" (``@T.prim_func(s_tir=True)``), "sblock" or ""."""
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and any(
            k.arg == "s_tir" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in decorator.keywords
        ):
            return "s_tir"
    newer = any(
        isinstance(n, ast.Attribute) and n.attr in _NEWER_BLOCK_NAMES for n in ast.walk(node)
    )
    return "sblock" if newer else ""
