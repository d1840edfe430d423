from __future__ import annotations

import io
import sys
from types import SimpleNamespace

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


def test_prim_func_has_a_jupyter_repr():
    html = matmul()["main"]._repr_html_()
    assert "<span" in html and "style=" in html and "prim_func" in html


class FakeShell:
    def __init__(self, kernel: object) -> None:
        self.kernel = kernel


class FakeHTML:
    def __init__(self, data: str) -> None:
        self.data = data


def fake_ipython(monkeypatch: pytest.MonkeyPatch, shell: FakeShell | None) -> list[FakeHTML]:
    """Install fake ``IPython`` and ``IPython.display`` modules; returns what gets displayed."""
    shown: list[FakeHTML] = []
    monkeypatch.setitem(sys.modules, "IPython", SimpleNamespace(get_ipython=lambda: shell))
    display = SimpleNamespace(HTML=FakeHTML, display=shown.append)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    return shown


def test_show_displays_html_in_a_jupyter_kernel(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    shown = fake_ipython(monkeypatch, FakeShell(kernel=object()))
    func = matmul()["main"]
    with config.scope(color=True):
        func.show()
    assert capsys.readouterr().out == ""
    assert len(shown) == 1
    data = shown[0].data
    assert data == func._repr_html_() and "<span" in data


def test_show_prints_text_outside_a_kernel(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    # A terminal IPython (a shell without a kernel), or IPython imported but not running.
    for shell in (FakeShell(kernel=None), None):
        shown = fake_ipython(monkeypatch, shell)
        with config.scope(color=True):
            highlight.show(TEXT)
        assert shown == [] and capsys.readouterr().out == TEXT + "\n"


def test_show_in_a_kernel_honours_no_color(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    shown = fake_ipython(monkeypatch, FakeShell(kernel=object()))
    with config.scope(color=False):
        highlight.show(TEXT)
    highlight.show(TEXT, color=False)
    assert shown == [] and capsys.readouterr().out == (TEXT + "\n") * 2
