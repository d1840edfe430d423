"""Functions and modules to script text: parameters, attributes, shape variables, root block."""

from __future__ import annotations

from collections.abc import Mapping

from tilewright.ir.buffer import DEFAULT_ALIGN, Buffer
from tilewright.ir.dtype import int32
from tilewright.ir.expr import Let, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars, pre_order_visit
from tilewright.ir.module import IRModule
from tilewright.ir.node import Node
from tilewright.ir.printer.expr import is_const, is_true
from tilewright.ir.printer.names import free_names, sanitize
from tilewright.ir.printer.stmt import StmtPrinter
from tilewright.ir.stmt import Block, BlockRealize, LetStmt, SeqStmt, Stmt

HEADER_IR = "# from tilewright.script import ir as I"
HEADER_TIR = "# from tilewright.script import tir as T"


class FunctionPrinter(StmtPrinter):
    """Prints one ``PrimFunc``; its variables and buffers form one naming unit."""

    views: list[Buffer]

    def function(self, func: PrimFunc, name: str) -> None:
        # A shape that uses a variable declared in the body (`n = T.int32()`) cannot be
        # written in the parameter list, which is read before the body.
        scalars = {p for p in func.params if func.buffer_of(p) is None}
        inline = {p: b for p, b in func.buffer_map if _inline(p, b, scalars)}
        matched = [(p, b) for p, b in func.buffer_map if p not in inline]
        declared = self.name_definitions(func, inline, matched)
        params = []
        for param in func.params:
            buf = inline.get(param)
            if buf is not None:
                shape = self.shape(buf.shape)
                params.append(f"{self.buffer(buf)}: T.Buffer({shape}, {_quote(buf.dtype)})")
            else:
                params.append(f"{self.expr(param)}: T.{param.dtype}")
        self.emit("@T.prim_func(s_tir=True)" if func.spelling == "s_tir" else "@T.prim_func")
        self.emit(f"def {name}({', '.join(params)}):")
        with self.nested():
            if func.attrs:
                self.emit(f"T.func_attr({self.attr_dict(func.attrs)})")
            for var in declared:
                self.emit(f"{self.expr(var)} = T.{var.dtype}()")
            for param, buf in matched:
                args = self.buffer_args(buf, keep_dtype=True)
                self.emit(f"{self.buffer(buf)} = T.match_buffer({self.expr(param)}, {args})")
            for buf in self.views:
                # A buffer over a parameter's storage that nothing declares (a flattened
                # parameter, after lowering): declared here, as TVM prints it.
                args = self.buffer_args(buf, keep_dtype=True)
                self.emit(f"{self.buffer(buf)} = T.Buffer({args}, data={self.expr(buf.data)})")
            self.function_body(func.body)

    def name_definitions(
        self, func: PrimFunc, inline: dict[Var, Buffer], matched: list[tuple[Var, Buffer]]
    ) -> list[Var]:
        """Name the parameters, then what the body declares up front; returns the variables
        to declare with ``x = T.int32()``.

        Every parameter is named before any text is made, so that a shape may refer to a
        scalar parameter that comes later in the list.
        """
        for param in func.params:
            buf = inline.get(param)
            if buf is not None:
                self.namer.alias(param, self.define_buffer(buf))
            else:
                bound = func.buffer_of(param)
                same = bound is not None and param.name == bound.name
                self.define_var(param, f"{param.name}_handle" if same else None)
        for _, buf in matched:
            self.define_buffer(buf)
        storage = {b.data for _, b in func.buffer_map} | set(func.params)
        self.views = [b for b in free_names(func) if isinstance(b, Buffer) and b.data in storage]
        declared = self.claim_free(func)
        # `T.Let(body, where={x: value})` and `with T.let(x, value):` refer to a variable
        # declared beforehand.
        for var in let_vars(func.body):
            if var not in self.namer.names:
                self.define_var(var)
                declared.append(var)
        return declared

    def function_body(self, body: Stmt) -> None:
        root = implicit_root(body)
        if root is None:
            self.stmt(body)
            return
        self.emit(f'# with T.{self.block_word}("root"):')
        self.allocations(root.alloc_buffers)
        self.stmt(root.body)


def let_vars(tree: Node) -> list[Var]:
    """The variables that ``T.Let`` and ``with T.let`` bind in ``tree``, in order: those of
    ``Let`` expressions and of ``LetStmt`` not last in their sequence."""
    found: dict[Var, None] = {}

    def look(node: Node) -> None:
        if isinstance(node, Let):
            found.setdefault(node.var, None)
        elif isinstance(node, SeqStmt):
            for item in node.seq[:-1]:
                if isinstance(item, LetStmt):
                    found.setdefault(item.var, None)

    pre_order_visit(tree, look)
    return list(found)


def implicit_root(body: Stmt) -> Block | None:
    """The root block the parser would wrap around ``body``'s contents, or None."""
    if not isinstance(body, BlockRealize) or body.iter_values or not is_true(body.predicate):
        return None
    block = body.block
    plain = (
        block.name == "root"
        and not block.iter_vars
        and not block.reads
        and not block.writes
        and block.init is None
        and not block.match_buffers
        and not block.annotations
    )
    if not plain:
        return None
    inner = block.body
    if not block.alloc_buffers and isinstance(inner, BlockRealize) and not inner.iter_values:
        return None  # the parser would take that single block for the root itself
    return block if block.alloc_buffers or _holds_block(block.body) else None


def _holds_block(stmt: Stmt) -> bool:
    found = []

    def look(node: Node) -> bool:
        if isinstance(node, Block):
            found.append(node)
        return not found and isinstance(node, Stmt)

    pre_order_visit(stmt, look)
    return bool(found)


def _inline(param: Var, buf: Buffer, scalars: set[Var]) -> bool:
    """Whether the parameter prints as ``A: T.Buffer(shape, dtype)`` (all else default)."""
    return (
        all(v in scalars for v in collect_vars(buf.shape))
        and not buf.strides
        and is_const(buf.elem_offset, 0)
        and buf.elem_offset.dtype == int32
        and buf.scope == "global"
        and buf.align == DEFAULT_ALIGN
        and buf.offset_factor == 1
        and buf.layout is None
        and not buf.axis_separators
        and buf.data is not param
    )


def _quote(dtype: object) -> str:
    return f'"{dtype}"'


def print_function(
    func: PrimFunc,
    name: str | None = None,
    indent: int = 4,
    marks: Mapping[Node, str] | None = None,
) -> list[str]:
    """The lines of ``func`` as ``@T.prim_func def name(...)``.

    Outside a module (``name`` None) the function prints under the name of the ``def`` it was
    parsed from, else its ``global_symbol`` attribute as TVM does, else ``main``.
    """
    if name is None:
        symbol = func.attr("global_symbol")
        if func.name.isidentifier():
            name = func.name
        else:
            name = symbol if isinstance(symbol, str) and symbol.isidentifier() else "main"
    printer = FunctionPrinter(indent=indent, marks=marks)
    if func.spelling in ("sblock", "s_tir"):
        printer.block_word = "sblock"
    printer.function(func, sanitize(name))
    return printer.lines


def print_module(
    mod: IRModule, indent: int = 4, marks: Mapping[Node, str] | None = None
) -> list[str]:
    """The lines of ``mod`` as ``@I.ir_module class Module:``, one method per function."""
    step = " " * indent
    lines = ["@I.ir_module", "class Module:"]
    for position, (name, func) in enumerate(mod.functions):
        if position:
            lines.append("")
        lines.extend(
            step + line if line else line for line in print_function(func, name, indent, marks)
        )
    if not mod.functions:
        lines.append(step + "pass")
    return lines
