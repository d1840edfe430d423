"""The script printer: any IR node to TVMScript text that parses back to an equal node.

The format is docs/script-format.md. ``node.script()`` and ``repr(node)`` call ``script``.
"""

from __future__ import annotations

from collections.abc import Mapping

from tilewright.ir.expr import PrimExpr
from tilewright.ir.function import PrimFunc
from tilewright.ir.module import IRModule
from tilewright.ir.node import Node
from tilewright.ir.printer.expr import ExprPrinter
from tilewright.ir.printer.function import (
    HEADER_IR,
    HEADER_TIR,
    print_function,
    print_module,
)
from tilewright.ir.printer.stmt import StmtPrinter
from tilewright.ir.printer.tirx import HEADER_TIRX, uses_tirx
from tilewright.ir.stmt import MatchBufferRegion, Stmt

__all__ = ["script"]


def script(
    node: Node,
    *,
    indent: int = 4,
    header: bool = True,
    marks: Mapping[Node, str] | None = None,
) -> str:
    """``node`` as script text, the same text every time for the same IR.

    Args:
        node: an ``IRModule``, ``PrimFunc``, statement, expression, buffer, region, range
            or iterator. Variables a statement or expression uses without defining print by
            name; distinct variables sharing a name in one scope get ``_1``, ``_2`` suffixes.
        indent: spaces per indentation level.
        header: start modules and functions with the ``# from tilewright.script import ...``
            comments.
        marks: a comment for the line that opens each given statement (a loop, a block or
            its realize, ...), e.g. ``{block: "<-- here"}`` to point at the offending block.

    Example::

        >>> print(script(mod))
        # from tilewright.script import ir as I
        # from tilewright.script import tir as T
        ...
        >>> script(i * 128 + j)
        'i * 128 + j'
        >>> print(script(loop, marks={loop: "<-- here"}))
        for i in range(8):  # <-- here
        ...
    """
    if isinstance(node, IRModule | PrimFunc) and header and uses_tirx(node):
        # A tile program re-parses only against the tirx namespaces: real imports.
        lines = [HEADER_IR.lstrip("# ")] if isinstance(node, IRModule) else []
        body = (
            print_module(node, indent, marks)
            if isinstance(node, IRModule)
            else print_function(node, indent=indent, marks=marks)
        )
        return "\n".join([*lines, *HEADER_TIRX, "", "", *body])
    if isinstance(node, IRModule):
        heading = [HEADER_IR, HEADER_TIR, "", ""] if header else []
        return "\n".join(heading + print_module(node, indent, marks))
    if isinstance(node, PrimFunc):
        heading = [HEADER_TIR, ""] if header else []
        return "\n".join(heading + print_function(node, indent=indent, marks=marks))
    if isinstance(node, Stmt | MatchBufferRegion):
        printer = StmtPrinter(indent=indent, marks=marks)
        if isinstance(node, MatchBufferRegion):
            # The view is defined by this very line; only its source and shape are used.
            printer.claim_free((node.source, node.buffer.shape))
            printer.match_buffer(node)
        else:
            printer.claim_free(node)
            printer.stmt(node)
        return printer.text()
    if not isinstance(node, Node):
        raise TypeError(f"script() prints IR nodes, not {type(node).__name__}")
    expr_printer = ExprPrinter()
    expr_printer.claim_free(node)
    if isinstance(node, PrimExpr):
        return expr_printer.expr(node)
    return expr_printer.ranked(node)[0]
