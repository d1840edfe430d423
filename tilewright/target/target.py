"""``Target``: parse a target string, dict or tag into a kind and the attributes a build reads."""

from __future__ import annotations

import contextvars
import os
import shlex
from collections.abc import Mapping

from tilewright.target.tags import KIND_ALIASES, TAGS, KindSpec

_INT_ATTRS = (
    "max_num_threads",
    "max_shared_memory_per_block",
    "max_static_shared_memory_per_block",
    "thread_warp_size",
    "num_cores",
    "max_thread_z",  # per-axis limits; 0: none beyond max_num_threads
    "max_grid_y",
    "max_grid_z",
)
_STR_ATTRS = ("arch", "mcpu", "mtriple", "keys", "libs", "model", "device")
# Targets made current by `with Target(...)`, innermost last.
_current: contextvars.ContextVar[tuple[Target, ...]] = contextvars.ContextVar(
    "tilewright_target", default=()
)


class TargetKind(str):
    """A target kind name; ``kind.name`` gives the same string (TVM spells it that way)."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return str(self)


class Target:
    """Where a program runs: a kind (``c``, ``cuda``, ``opencl``, ``metal``) and its limits.

    Arguments:
        target: a string such as ``"c"``, ``"llvm"`` (an alias of ``"c"``), ``"cuda"``,
            ``"cuda -arch=sm_80"``, a tag such as ``"nvidia/h200"``, a dict with a ``"kind"``
            (or ``"tag"``) key and attributes, another ``Target``, or a ``KindSpec`` (a kind
            that a backend row defines, with its defaults).
        host: the target of the host code for a device target; ``Target("c")`` by default.

    Example::

        >>> t = Target("nvidia/tesla-p100")
        >>> t.kind, t.arch, t.max_shared_memory_per_block
        ('cuda', 'sm_60', 49152)
        >>> with Target("cuda"):
        ...     Target.current().kind
        'cuda'
    """

    kind: TargetKind
    kind_spec: KindSpec
    spelling: str
    tag: str
    arch: str
    max_num_threads: int
    max_shared_memory_per_block: int
    max_static_shared_memory_per_block: int
    thread_warp_size: int
    num_cores: int
    max_thread_z: int
    max_grid_y: int
    max_grid_z: int
    mcpu: str
    mtriple: str
    keys: str
    libs: str
    model: str
    device: str
    host: Target | None

    def __init__(
        self,
        target: str | Mapping[str, str | int] | Target | KindSpec,
        host: str | Mapping[str, str | int] | Target | None = None,
    ) -> None:
        if isinstance(target, Target):
            self.__dict__.update({k: v for k, v in target.__dict__.items() if k != "_tokens"})
            if host is not None:
                self.host = Target(host)
            return
        tag = ""
        options: dict[str, str]
        settings: dict[str, str | int]
        if isinstance(target, KindSpec):
            spec, head, options, settings = target, target.name, {}, {}
            kind_spelling = spec.name
        else:
            head, options = _split(target)
            if head in TAGS:
                tag = head
                settings = dict(TAGS[head])
                kind_spelling = str(settings.pop("kind"))
            elif head in KIND_ALIASES:
                kind_spelling = head
                settings = {}
            else:
                raise ValueError(
                    f"unknown target {head!r}; known kinds: {', '.join(KIND_ALIASES)}; "
                    f"known tags: {', '.join(sorted(TAGS))}"
                )
            spec = KIND_ALIASES[kind_spelling]
        values: dict[str, str | int] = {key: "" for key in _STR_ATTRS}
        values.update(dict.fromkeys(_INT_ATTRS, 0))
        values.update(spec.defaults)
        values.update(settings)
        for key, value in options.items():
            values[key] = _coerce(head, key, value)
        if spec.host_kind is None and not values["num_cores"]:
            values["num_cores"] = os.cpu_count() or 1
        self.kind = TargetKind(spec.name)
        self.kind_spec = spec
        self.spelling = kind_spelling
        self.tag = tag
        self._options = dict(options)
        for key in (*_STR_ATTRS, *_INT_ATTRS):
            setattr(self, key, values[key])
        if host is not None:
            self.host = Target(host)
        else:
            self.host = None if spec.host_kind is None else Target(spec.host_kind)

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The innermost target made current by ``with target:``; ``None`` outside one.

        Example::

            >>> with Target("c"):
            ...     Target.current().kind
            'c'
        """
        stack = _current.get()
        if stack:
            return stack[-1]
        if allow_none:
            return None
        raise ValueError("no current target: use `with tilewright.target.Target(...):`")

    def __enter__(self) -> Target:
        self.__dict__.setdefault("_tokens", []).append(_current.set((*_current.get(), self)))
        return self

    def __exit__(self, *exc: object) -> None:
        _current.reset(self.__dict__["_tokens"].pop())

    def attrs(self) -> dict[str, str | int]:
        """Every attribute by name (the kind, tag and limits).

        Example::

            >>> Target("nvidia/a100").attrs()["arch"]
            'sm_80'
        """
        out: dict[str, str | int] = {"kind": str(self.kind), "tag": self.tag}
        for key in (*_STR_ATTRS, *_INT_ATTRS):
            out[key] = getattr(self, key)
        return out

    def __str__(self) -> str:
        words = [self.tag or self.spelling]
        words += [f"-{key}={value}" for key, value in self._options.items()]
        return " ".join(words)

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Target):
            return NotImplemented
        return self.attrs() == other.attrs() and self.host == other.host

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.attrs().items())))


def _split(target: str | Mapping[str, str | int]) -> tuple[str, dict[str, str]]:
    if isinstance(target, Mapping):
        items = dict(target)
        head = str(items.pop("tag", "") or items.pop("kind", ""))
        items.pop("kind", None)
        return head, {k.replace("-", "_"): str(v) for k, v in items.items()}
    if not isinstance(target, str):
        raise TypeError(f"a target is a string, dict or Target, got {type(target).__name__}")
    words = shlex.split(target)
    if not words:
        raise ValueError("empty target string; expected a kind such as 'c' or 'cuda'")
    options: dict[str, str] = {}
    for word in words[1:]:
        key, sep, value = word.lstrip("-").partition("=")
        if not word.startswith("-") or not sep:
            raise ValueError(f"target {target!r}: option {word!r} must read -key=value")
        options[key.replace("-", "_")] = value
    return words[0], options


def _coerce(head: str, key: str, value: str) -> str | int:
    if key in _STR_ATTRS:
        return value
    if key in _INT_ATTRS:
        try:
            return int(value)
        except ValueError:
            raise ValueError(
                f"target {head!r}: option {key} takes an integer, got {value!r}"
            ) from None
    known = ", ".join((*_STR_ATTRS, *_INT_ATTRS))
    raise ValueError(f"target {head!r}: unknown option {key!r}; known options: {known}")
