"""Nested name scopes of a script: loop, block-iterator, let and buffer names to values."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

_MISSING = object()


class Scope:
    """A stack of name tables; inner tables shadow outer ones.

    Example::

        >>> scope = Scope()
        >>> scope.define("i", 1)
        >>> with scope.nested():
        ...     scope.define("i", 2)
        ...     scope.lookup("i")
        2
        >>> scope.lookup("i")
        1
    """

    def __init__(self) -> None:
        self._frames: list[dict[str, object]] = [{}]

    @contextlib.contextmanager
    def nested(self) -> Iterator[None]:
        """A new innermost table for the duration of the ``with`` block."""
        self._frames.append({})
        try:
            yield
        finally:
            self._frames.pop()

    def define(self, name: str, value: object) -> None:
        """Bind ``name`` in the innermost table."""
        self._frames[-1][name] = value

    def lookup(self, name: str, default: object = _MISSING) -> object:
        """The innermost binding of ``name``; ``KeyError`` (or ``default``) when unbound."""
        for frame in reversed(self._frames):
            if name in frame:
                return frame[name]
        if default is _MISSING:
            raise KeyError(name)
        return default

    def __contains__(self, name: str) -> bool:
        return any(name in frame for frame in self._frames)

    def names(self) -> list[str]:
        """Every bound name, for "did you mean" suggestions."""
        return sorted({name for frame in self._frames for name in frame})
