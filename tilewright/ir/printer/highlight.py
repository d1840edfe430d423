"""Script text to the screen: Pygments colours on a terminal, HTML in Jupyter, plain otherwise."""

from __future__ import annotations

import html
import importlib
import sys
from collections.abc import Callable
from typing import TextIO

from tilewright import config


def _pygments() -> tuple | None:
    """The Pygments pieces used here, or None when Pygments is not installed."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter, TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return None
    return highlight, PythonLexer, TerminalFormatter, HtmlFormatter


def colorize(text: str) -> str:
    """``text`` with ANSI colour codes (Python syntax); unchanged without Pygments.

    Example::

        >>> colorize("x = 1")   # '\\x1b[...]x\\x1b[...] = ...'
    """
    parts = _pygments()
    if parts is None:
        return text
    highlight, lexer, terminal, _ = parts
    return highlight(text, lexer(), terminal()).rstrip("\n")


def show(text: str, *, color: bool | None = None, file: TextIO | None = None) -> None:
    """Print script ``text``, highlighted when writing to a terminal; in a Jupyter kernel,
    display it as highlighted HTML.

    Args:
        text: the script, e.g. ``mod.script()``.
        color: force colours on (True) or off (False); by default they are used when the
            output is a TTY or a notebook and ``tilewright.config.get().color`` is true
            (``NO_COLOR`` unset).
        file: where to write; ``sys.stdout`` (or the notebook) by default.

    Example::

        >>> show(mod.script())            # coloured in a terminal or notebook, plain in a pipe
        >>> show(mod.script(), color=False)
    """
    if file is None and color is not False:
        display = _notebook_display()
        if display is not None and (color or config.get().color):
            display(to_html(text))
            return
    out = sys.stdout if file is None else file
    if color is None:
        isatty = getattr(out, "isatty", None)
        color = bool(isatty and isatty()) and config.get().color
    print(colorize(text) if color else text, file=out)


def to_html(text: str) -> str:
    """Script ``text`` as HTML for Jupyter: inline-styled spans, or an escaped ``<pre>``.

    Example::

        >>> to_html("x = 1")[:4]
        '<div'
    """
    parts = _pygments()
    if parts is None:
        return f"<pre>{html.escape(text)}</pre>"
    highlight, lexer, _, formatter = parts
    return highlight(text, lexer(), formatter(noclasses=True))


def _notebook_display() -> Callable[[str], None] | None:
    """A function showing HTML in the running Jupyter kernel, or None outside one."""
    # A kernel has imported IPython already; a plain script must not pay for importing it.
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    if shell is None or getattr(shell, "kernel", None) is None:
        return None  # a terminal IPython has no kernel: ANSI colours suit it
    display_module = importlib.import_module("IPython.display")
    html_type, display = display_module.HTML, display_module.display
    return lambda html: display(html_type(html))
