from __future__ import annotations

import io

import pytest
from printer_programs import matmul

from tilewright import config
from tilewright.ir.printer import highlight

TEXT = 'for i in range(8):\n    A[i] = T.float32(1.0)  # "x" < y'


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_text_when_not_a_terminal():
    out = io.StringIO()
    highlight.show(TEXT, file=out)
    assert out.getvalue() == TEXT + "\n"


def test_colours_on_a_terminal():
    out = FakeTerminal()
    with config.scope(color=True):
        highlight.show(TEXT, file=out)
    text = out.getvalue()
    assert "\x1b[" in text
    assert "range" in text and text.endswith("\n")


def test_no_colours_on_a_terminal_when_config_says_no():
    out = FakeTerminal()
    with config.scope(color=False):
        highlight.show(TEXT, file=out)
    assert out.getvalue() == TEXT + "\n"


def test_colours_can_be_forced_either_way():
    out = io.StringIO()
    highlight.show(TEXT, color=True, file=out)
    assert "\x1b[" in out.getvalue()
    out = FakeTerminal()
    with config.scope(color=True):
        highlight.show(TEXT, color=False, file=out)
    assert out.getvalue() == TEXT + "\n"


def test_colorize_keeps_the_text():
    import re

    plain = re.sub(r"\x1b\[[0-9;]*m", "", highlight.colorize(TEXT))
    assert plain == TEXT


def test_html_has_styled_spans():
    html = highlight.to_html(TEXT)
    assert "<span" in html and "style=" in html
    # Pygments versions differ in whether they escape quotes in text; "<" is always escaped.
    assert any(q in html for q in ('"x"', "&quot;x&quot;", "&#34;x&#34;"))
    assert "&lt;" in html and '# "x" <' not in html


def test_without_pygments(monkeypatch):
    monkeypatch.setattr(highlight, "_pygments", lambda: None)
    assert highlight.to_html(TEXT) == (
        "<pre>for i in range(8):\n    A[i] = T.float32(1.0)  # &quot;x&quot; &lt; y</pre>"
    )
    out = FakeTerminal()
    with config.scope(color=True):
        highlight.show(TEXT, file=out)
    assert out.getvalue() == TEXT + "\n"


def test_node_show_and_jupyter_repr(capsys: pytest.CaptureFixture[str]):
    mod = matmul()
    mod.show()
    assert capsys.readouterr().out == mod.script() + "\n"
    html = mod._repr_html_()
    assert "<span" in html and "prim_func" in html
