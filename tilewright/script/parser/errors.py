"""Parse errors: ``ParseError`` and the source map that points them at the user's file."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tilewright.ir.span import Span


class ParseError(SyntaxError):
    """A script that cannot become IR.

    It is a ``SyntaxError`` so that tools treat it as a problem of the source text:
    ``filename``, ``lineno`` and ``offset`` (1-based column) point into the user's file, and
    ``str(error)`` is the full message with the offending line and a caret under it.

    Example::

        >>> from_source("@T.prim_func\\ndef f():\\n    T.gird(4)\\n")
        Traceback (most recent call last):
        ParseError: <string>, line 3, column 5: unknown name 'T.gird' (did you mean 'T.grid'?)
    """

    def __init__(
        self,
        message: str,
        filename: str = "<string>",
        lineno: int = 1,
        column: int = 1,
        line_text: str = "",
        width: int = 1,
    ) -> None:
        self.width = max(width, 1)
        # The end column lets Python's own traceback underline the whole culprit.
        end = column + min(self.width, max(len(line_text.rstrip()) - column + 1, 1))
        super().__init__(message, (filename, lineno, column, line_text, lineno, end))
        self.message = message

    def __str__(self) -> str:
        where = f"{self.filename}, line {self.lineno}, column {self.offset}"
        text = f"{where}: {self.message}"
        if self.text:
            line = self.text.rstrip("\n")
            stripped = line.lstrip()
            indent = len(line) - len(stripped)
            caret_col = max((self.offset or 1) - 1 - indent, 0)
            width = min(self.width, max(len(stripped) - caret_col, 1))
            text += f"\n    {stripped}\n    {' ' * caret_col}{'^' * width}"
        return text


class ArgumentError(ValueError):
    """A ``T.`` function's keyword argument is wrong: the parser points at that argument's
    value instead of the whole call.

    Example::

        raise ArgumentError("T.alloc_buffer: unknown storage scope 'shard'", keyword="scope")
    """

    def __init__(self, message: str, *, keyword: str) -> None:
        super().__init__(message)
        self.keyword = keyword


@dataclass(frozen=True)
class SourceMap:
    """Where parsed text came from: the file, and the offsets of the dedented snippet in it.

    ``lines`` are the file's original lines of the snippet (for the caret display);
    ``line_offset`` is the file line of the snippet's first line minus one; ``col_offset`` the
    indentation that ``textwrap.dedent`` removed.
    """

    filename: str
    lines: tuple[str, ...]
    line_offset: int = 0
    col_offset: int = 0

    def error(self, node: ast.AST | None, message: str) -> ParseError:
        """A ``ParseError`` at ``node`` (its first line and column)."""
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", lineno)
        end_col = getattr(node, "end_col_offset", col + 1)
        width = end_col - col if end_line == lineno else 1
        text = self._line(lineno)
        return ParseError(
            message,
            self.filename,
            lineno + self.line_offset,
            col + self._shift(text) + 1,
            text,
            width,
        )

    def span(self, node: ast.stmt) -> Span:
        """Where statement ``node`` starts in the user's file, with that line's text."""
        text = self._line(node.lineno)
        column = node.col_offset + self._shift(text) + 1
        return Span(self.filename, node.lineno + self.line_offset, column, text.strip())

    def _line(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    def _shift(self, text: str) -> int:
        # Columns in the dedented snippet shift by the removed indentation on indented lines.
        return self.col_offset if text.strip() else 0
