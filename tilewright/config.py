"""Every environment knob of tilewright, typed and documented, with scoped overrides.

No other module reads ``os.environ``. A value is converted to its knob's declared type
whether it comes from the environment or from ``scope``/``set``: a string or ``os.PathLike``
becomes a ``Path`` (``~`` expanded), ``1/true/yes/on`` and ``0/false/no/off`` (any case) a
bool, a decimal string an int. A value of the wrong type raises ``TypeError``, a string that
does not parse ``ValueError``, an unknown knob ``TypeError``; each message names the knob
(and the environment variable). Example::

    >>> from tilewright import config
    >>> with config.scope(dump_dir="/tmp/ir"):
    ...     tw.build(mod, target="c")   # writes each lowering stage's IR under /tmp/ir
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path

_T = typing.TypeVar("_T")

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _env_value(knob: str, variable: str) -> object | None:
    """``variable`` converted to ``knob``'s type; None when it is unset or empty."""
    raw = os.environ.get(variable, "")
    return _convert(knob, raw, variable) if raw else None


def _from_env(knob: str, variable: str, default: _T) -> Callable[[], _T]:
    """A default factory: ``variable`` converted to ``knob``'s type, else ``default``."""

    def read() -> _T:
        value = _env_value(knob, variable)
        return default if value is None else typing.cast(_T, value)

    return read


def _default_cache_dir() -> Path:
    explicit = _env_value("cache_dir", "TILEWRIGHT_CACHE_DIR")
    if explicit is not None:
        return typing.cast(Path, explicit)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "tilewright"


def _ci_default() -> bool:
    # CI belongs to the CI system, not to tilewright: some set it to a name ("woodpecker"),
    # so any value but an empty or false one means "on CI".
    return os.environ.get("CI", "").strip().lower() not in ("", *_FALSE)


@dataclasses.dataclass
class Config:
    """The settings in force; each field's default comes from the environment variable named.

    Every assignment, the constructor's included, converts the value to the field's type.
    """

    # TILEWRIGHT_CACHE_DIR: where compiled kernels are cached by content hash
    # (default $XDG_CACHE_HOME/tilewright, else ~/.cache/tilewright).
    cache_dir: Path = dataclasses.field(default_factory=_default_cache_dir)
    # TILEWRIGHT_DUMP_DIR: when set, every lowering stage writes its IR as <kernel>.<stage>.txt.
    dump_dir: Path | None = dataclasses.field(
        default_factory=_from_env("dump_dir", "TILEWRIGHT_DUMP_DIR", None)
    )
    # TILEWRIGHT_CC: the C compiler for the CPU target (a command line, split like a shell's).
    cc: str = dataclasses.field(default_factory=_from_env("cc", "TILEWRIGHT_CC", "cc"))
    # TILEWRIGHT_FUZZ_CASES: how many random schedules the differential fuzz tests draw.
    fuzz_cases: int = dataclasses.field(
        default_factory=_from_env("fuzz_cases", "TILEWRIGHT_FUZZ_CASES", 200)
    )
    # TILEWRIGHT_SLOW_TESTS: run the tests marked slow (1/0, true/false, yes/no, on/off).
    slow_tests: bool = dataclasses.field(
        default_factory=_from_env("slow_tests", "TILEWRIGHT_SLOW_TESTS", False)
    )
    # CI: set by continuous integration; a missing OpenCL platform fails instead of skipping.
    ci: bool = dataclasses.field(default_factory=_ci_default)
    # NO_COLOR / TERM: whether show() may colour its output.
    color: bool = dataclasses.field(
        default_factory=lambda: "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    )

    def __setattr__(self, name: str, value: object) -> None:
        super().__setattr__(name, _convert(name, value))


_TYPES: dict[str, object] = typing.get_type_hints(Config)


def _check_knob(knob: str) -> None:
    if knob not in _TYPES:
        close = difflib.get_close_matches(knob, _TYPES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise TypeError(f"config has no knob {knob!r}{hint}; the knobs are {', '.join(_TYPES)}")


def _convert(knob: str, value: object, variable: str | None = None) -> object:
    """``value`` as ``knob``'s declared type; ``variable`` names its environment variable."""
    _check_knob(knob)
    declared = _TYPES[knob]
    optional = typing.get_origin(declared) in (typing.Union, types.UnionType)
    if optional:
        declared = next(t for t in typing.get_args(declared) if t is not type(None))
    what, parse = _PARSERS[typing.cast(type, declared)]
    where = f"config.{knob}" + (f" (from ${variable})" if variable else "")
    if value is None:
        if optional:
            return None
        raise TypeError(f"{where}: expected {what}, got None")
    try:
        return parse(value)
    except (TypeError, ValueError) as err:
        # A wrong Python type is a TypeError, a string that does not parse a ValueError.
        raise type(err)(f"{where}: expected {what}, got {value!r}") from None


def _parse_path(value: object) -> Path:
    if not isinstance(value, str | os.PathLike):
        raise TypeError
    if os.fspath(value) == "":
        raise ValueError
    return Path(value).expanduser()


def _parse_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if not isinstance(value, str):
        raise TypeError
    word = value.strip().lower()
    if word not in _TRUE + _FALSE:
        raise ValueError
    return word in _TRUE


def _parse_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError  # True is an int to Python, but never a count
    return int(value)


def _parse_str(value: object) -> str:
    if isinstance(value, Path):
        return str(value)
    if not isinstance(value, str):
        raise TypeError
    return value


_PARSERS: dict[type, tuple[str, Callable[[object], object]]] = {
    Path: ("a path", _parse_path),
    bool: (f"a bool ({'/'.join(_TRUE)} or {'/'.join(_FALSE)})", _parse_bool),
    int: ("an integer", _parse_int),
    str: ("a string", _parse_str),
}

_current = Config()


def get() -> Config:
    """The settings in force."""
    return _current


def __getattr__(name: str) -> object:
    return getattr(_current, name)


def _changed(base: Config, changes: dict[str, object]) -> Config:
    for knob in changes:
        _check_knob(knob)  # before dataclasses.replace, whose error lists no knobs
    fields: dict[str, typing.Any] = changes  # Config.__setattr__ converts each value
    return dataclasses.replace(base, **fields)


@contextlib.contextmanager
def scope(**changes: object) -> Iterator[Config]:
    """Override settings for the duration of a ``with`` block.

    Args:
        changes: knob names and values; each value is converted to the knob's type.

    Example::

        >>> with config.scope(dump_dir="/tmp/ir", fuzz_cases="20"):
        ...     config.get().fuzz_cases
        20
    """
    global _current
    saved = _current
    _current = _changed(saved, changes)
    try:
        yield _current
    finally:
        _current = saved


def set(**changes: object) -> Config:
    """Change settings for the rest of the process, or until the enclosing ``scope`` ends.

    Args:
        changes: knob names and values; each value is converted to the knob's type.

    Example::

        >>> config.set(slow_tests="1").slow_tests
        True
    """
    global _current
    _current = _changed(_current, changes)
    return _current
