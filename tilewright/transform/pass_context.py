"""``PassContext``: TVM's way of passing build options, as a context manager holding a config.

tilewright's own API takes options as typed parameters (``tw.build(mod, target,
bounds_check=True)``); this class accepts the spelling that TVM code uses, so that ported code
runs unchanged::

    with tw.transform.PassContext(config={"tir.instrument_bound_checkers": True}):
        rt_mod = tw.build(mod, target="c")

``tw.build`` reads the current context only for an option its caller did not give. The
config keys tilewright understands are listed in ``CONFIG_KEYS``, each with its type; any
other key is refused (a typo would otherwise be silently ignored).
"""

from __future__ import annotations

import contextvars
import difflib
from collections.abc import Mapping
from types import TracebackType

# Every config key a PassContext accepts: its type and what it does.
CONFIG_KEYS: dict[str, tuple[type, str]] = {
    "tir.instrument_bound_checkers": (
        bool,
        "check every buffer access at run time (tw.build's bounds_check)",
    ),
}


class PassContext:
    """Build options in effect inside a ``with`` block (TVM's ``tvm.transform.PassContext``).

    Arguments:
        opt_level: accepted for TVM compatibility; tilewright has one optimisation level.
        config: options by TVM's key (``CONFIG_KEYS``), such as
            ``{"tir.instrument_bound_checkers": True}``.

    Example::

        >>> with PassContext(config={"tir.instrument_bound_checkers": True}):
        ...     PassContext.current().config["tir.instrument_bound_checkers"]
        True
    """

    def __init__(self, opt_level: int = 2, config: Mapping[str, object] | None = None) -> None:
        self.opt_level = opt_level
        self.config: dict[str, object] = {}
        for key, value in (config or {}).items():
            if key not in CONFIG_KEYS:
                close = difflib.get_close_matches(key, list(CONFIG_KEYS), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(
                    f"PassContext: unknown config key {key!r}{hint}; "
                    f"known keys: {', '.join(CONFIG_KEYS)}"
                )
            kind = CONFIG_KEYS[key][0]
            if not isinstance(value, kind):
                raise TypeError(
                    f"PassContext: config {key!r} takes a {kind.__name__}, "
                    f"got {type(value).__name__}"
                )
            self.config[key] = value

    @staticmethod
    def current() -> PassContext:
        """The innermost context entered with ``with``, or a default one."""
        stack = _ENTERED.get()
        return stack[-1] if stack else PassContext()

    def __enter__(self) -> PassContext:
        _ENTERED.set((*_ENTERED.get(), self))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        stack = _ENTERED.get()
        _ENTERED.set(stack[:-1] if stack and stack[-1] is self else stack)

    def __repr__(self) -> str:
        return f"PassContext(opt_level={self.opt_level}, config={self.config!r})"


# The contexts entered, innermost last (per thread and per asyncio task).
_ENTERED: contextvars.ContextVar[tuple[PassContext, ...]] = contextvars.ContextVar(
    "tilewright_pass_context", default=()
)


def bounds_check_requested(bounds_check: bool | None) -> bool:
    """``bounds_check`` when given, else the current context's
    ``tir.instrument_bound_checkers`` (False by default).

    Example: ``bounds_check_requested(None)`` is True inside the ``with`` block above.
    """
    if bounds_check is not None:
        return bounds_check
    return bool(PassContext.current().config.get("tir.instrument_bound_checkers", False))


__all__ = ["CONFIG_KEYS", "PassContext", "bounds_check_requested"]
