"""Source positions: where in the user's script a statement was written."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A statement's place in its script: file, 1-based line and column, and the line's text.

    Statements carry one as an optional ``span`` field set by the parser; it is a hint for
    messages and takes no part in structural equality, hashing or printing.

    Example::

        >>> Span("kernel.py", 7, 9, "C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]")
    """

    file: str
    line: int
    column: int
    text: str = ""

    def __str__(self) -> str:
        where = f"{self.file}, line {self.line}"
        return f"{where}: {self.text}" if self.text else where
