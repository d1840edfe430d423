"""Block and loop references (random variables, in TVM's words) handed out by a ``Schedule``."""

from __future__ import annotations

import itertools

_ids = itertools.count()


class _Ref:
    """A handle compared by identity; the schedule maps it to the IR node it stands for."""

    __slots__ = ("_id",)
    prefix = "?"

    def __init__(self) -> None:
        self._id = next(_ids)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(#{self._id})"


class BlockRV(_Ref):
    """A reference to a block; stays valid while the block exists (by its name)."""

    __slots__ = ()
    prefix = "b"


class LoopRV(_Ref):
    """A reference to a loop; stays valid while the loop (its loop variable) exists."""

    __slots__ = ()
    prefix = "l"


class ExprRV(_Ref):
    """A reference to an integer chosen by a sampling instruction (used by the tuner)."""

    __slots__ = ()
    prefix = "v"
