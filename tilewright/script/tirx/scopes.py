"""Kernel entry and execution-scope declarations of the tirx ``T`` namespace.

``T.device_entry()`` starts a kernel; ``bx = T.cta_id([n])``, ``T.warpgroup_id([g])``,
``T.warp_id([w])``, ``T.lane_id([32])`` and ``T.thread_id([t])`` declare the launch shape
and bind index variables for the rest of the body (``ScopeId`` statements that
``LowerTIRx`` lowers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tilewright.ir import IntImm, Stmt, Var
from tilewright.ir.dtype import int32
from tilewright.ir.tile import DeviceEntry, ScopeId
from tilewright.script.parser.frames import EnclosingDirective


class DeviceEntryDirective(EnclosingDirective):
    """What ``T.device_entry()`` returns: the rest of the body becomes a ``DeviceEntry``."""

    def enclose(self, names: list[str] | None) -> tuple[object, Callable[[Stmt], Stmt]]:
        if names:
            raise ValueError("T.device_entry() binds no name")
        return None, DeviceEntry


class ScopeIdDirective(EnclosingDirective):
    """What ``T.cta_id([...])`` and friends return: index variables over the rest."""

    def __init__(self, kind: str, extents: Sequence[object]) -> None:
        if isinstance(extents, int | IntImm):
            extents = [extents]
        values = []
        for extent in extents:
            value = extent.value if isinstance(extent, IntImm) else extent
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TypeError(f"T.{kind} takes a list of positive ints, got {list(extents)}")
            values.append(value)
        if not values:
            raise TypeError(f"T.{kind} takes a list of positive ints, got []")
        self.kind, self.extents = kind, tuple(values)

    def enclose(self, names: list[str] | None) -> tuple[object, Callable[[Stmt], Stmt]]:
        count = len(self.extents)
        if names is not None and len(names) != count:
            raise ValueError(f"T.{self.kind} with {count} extents binds {count} names")
        if names is None:
            names = [self.kind] if count == 1 else [f"{self.kind}_{i}" for i in range(count)]
        variables = tuple(Var(name, int32) for name in names)
        bound = variables[0] if count == 1 else variables
        return bound, lambda rest: ScopeId(variables, self.kind, self.extents, rest)


def device_entry() -> DeviceEntryDirective:
    """``T.device_entry()``: the rest of the function is a kernel launched on the device.

    Example::

        T.device_entry()
        T.cta_id([1]); T.lane_id([32]); T.thread_id([32])
    """
    return DeviceEntryDirective()


def cta_id(extents: Sequence[int]) -> ScopeIdDirective:
    """``bx = T.cta_id([n])``: ``n`` CTAs (up to 3 dims: ``bx, by = T.cta_id([4, 2])``)."""
    return ScopeIdDirective("cta_id", extents)


def warpgroup_id(extents: Sequence[int]) -> ScopeIdDirective:
    """``wg = T.warpgroup_id([2])``: 2 warpgroups (128 threads each) per CTA; ``wg`` is the
    running warpgroup's index, ``threadIdx.x // 128``.

    Example::

        wg = T.warpgroup_id([2])
        T.thread_id([256])
        Tx.warpgroup.gemm(acc, A_smem[wg * 64 : wg * 64 + 64, 0:64], B_smem, accum=True)
    """
    return ScopeIdDirective("warpgroup_id", extents)


def warp_id(extents: Sequence[int]) -> ScopeIdDirective:
    """``w = T.warp_id([4])``: 4 warps per CTA; ``w`` is the running warp's index."""
    return ScopeIdDirective("warp_id", extents)


def lane_id(extents: Sequence[int]) -> ScopeIdDirective:
    """``lane = T.lane_id([32])``: the running thread's lane within its warp."""
    return ScopeIdDirective("lane_id", extents)


def thread_id(extents: Sequence[int]) -> ScopeIdDirective:
    """``tid = T.thread_id([128])``: 128 threads per CTA; ``tid`` is the running thread."""
    return ScopeIdDirective("thread_id", extents)
