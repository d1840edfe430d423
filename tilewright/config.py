"""Every environment knob of tilewright, typed and documented, with scoped overrides.

No other module reads ``os.environ``. Example::

    >>> from tilewright import config
    >>> with config.scope(dump_dir="/tmp/ir"):
    ...     tw.build(mod, target="c")   # writes each lowering stage's IR under /tmp/ir
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _env_path(name: str, default: Path | None) -> Path | None:
    value = os.environ.get(name)
    return Path(value) if value else default


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


@dataclasses.dataclass
class Config:
    """The settings in force; each field's default comes from the environment variable named."""

    # TILEWRIGHT_CACHE_DIR: where compiled kernels are cached by content hash.
    cache_dir: Path = dataclasses.field(
        default_factory=lambda: (
            _env_path(
                "TILEWRIGHT_CACHE_DIR",
                Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tilewright",
            )
            or Path.home() / ".cache" / "tilewright"
        )
    )
    # TILEWRIGHT_DUMP_DIR: when set, every lowering stage writes its IR as <kernel>.<stage>.txt.
    dump_dir: Path | None = dataclasses.field(
        default_factory=lambda: _env_path("TILEWRIGHT_DUMP_DIR", None)
    )
    # TILEWRIGHT_CC: the C compiler for the CPU target.
    cc: str = dataclasses.field(default_factory=lambda: os.environ.get("TILEWRIGHT_CC", "cc"))
    # TILEWRIGHT_FUZZ_CASES: how many random schedules the differential fuzz tests draw.
    fuzz_cases: int = dataclasses.field(
        default_factory=lambda: _env_int("TILEWRIGHT_FUZZ_CASES", 200)
    )
    # TILEWRIGHT_SLOW_TESTS: run the tests marked slow.
    slow_tests: bool = dataclasses.field(
        default_factory=lambda: os.environ.get("TILEWRIGHT_SLOW_TESTS", "") not in ("", "0")
    )
    # CI: set by continuous integration; a missing OpenCL platform fails instead of skipping.
    ci: bool = dataclasses.field(
        default_factory=lambda: os.environ.get("CI", "") not in ("", "0", "false")
    )
    # NO_COLOR / TERM: whether show() may colour its output.
    color: bool = dataclasses.field(
        default_factory=lambda: "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    )


_current = Config()


def get() -> Config:
    """The settings in force."""
    return _current


def __getattr__(name: str) -> object:
    return getattr(_current, name)


@contextlib.contextmanager
def scope(**changes: object) -> Iterator[Config]:
    """Override settings for the duration of a ``with`` block."""
    global _current
    saved = _current
    # dataclasses.replace checks the names; each value is the caller's to get right.
    fields: dict[str, Any] = changes
    _current = dataclasses.replace(saved, **fields)
    try:
        yield _current
    finally:
        _current = saved
