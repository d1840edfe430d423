"""``cp.async`` in kernels: a thread's asynchronous copies from global to shared memory, done
at the wait that covers them.

- ``tw.cuda.cp_async(dst, src, bytes[, predicate, fill])`` starts a copy (under a false
  predicate nothing is read, and with ``fill`` zeros are stored at once): it is checked
  (alignment, bounds) and its accesses logged for the race detector at once, as the
  hardware may move the bytes any time until the wait; the bytes move, logged again, at the
  wait. A thread that reads the
  destination before its wait sees what was there before (NaN in a fresh shared array).
- ``tw.cuda.cp_async_commit_group()`` closes the group of the copies the thread started since
  its last commit.
- ``tw.cuda.cp_async_wait_group(n)`` completes the thread's oldest committed groups until at
  most ``n`` are in flight. Copies never committed are never waited for.

Commits and waits still yield, as every barrier-like intrinsic does, so that the machine counts
them; they order no memory access of other threads (a barrier does).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from tilewright import ir
from tilewright.ir import intrinsics

from .memory import Address, check_transfer, copy_bytes

Copy = tuple[Address, Address, int]


class _Groups:
    """A thread's copies: started since the last commit, and committed groups, oldest first."""

    def __init__(self) -> None:
        self.open: list[Copy] = []
        self.committed: list[list[Copy]] = []


_THREADS: weakref.WeakKeyDictionary[object, _Groups] = weakref.WeakKeyDictionary()


def start(
    machine: Any,
    thread: Any,
    dst: Address,
    src: Address,
    nbytes: int,
    predicate: bool = True,
    fill: int = 0,
) -> None:
    machine.effects[intrinsics.CP_ASYNC] += 1
    nbytes = int(nbytes)
    if nbytes not in (4, 8, 16):
        raise AssertionError(f"cp.async copies 4, 8 or 16 bytes, not {nbytes}")
    if not predicate:  # nothing read; with fill, zeros stored now (a plain shared store)
        if fill:
            zeros = np.zeros(nbytes, np.uint8)
            check_transfer(dst, Address(zeros, 0), nbytes)
            dst.memory[dst.offset : dst.offset + nbytes] = zeros
        return
    check_transfer(dst, src, nbytes)
    _THREADS.setdefault(thread, _Groups()).open.append((dst, src, nbytes))


def commit(thread: Any) -> None:
    groups = _THREADS.setdefault(thread, _Groups())
    groups.committed.append(groups.open)
    groups.open = []


def wait(thread: Any, pending: int) -> None:
    groups = _THREADS.setdefault(thread, _Groups())
    while len(groups.committed) > int(pending):
        for dst, src, nbytes in groups.committed.pop(0):
            copy_bytes(dst, src, nbytes)


_ASYNC = (intrinsics.CP_ASYNC, intrinsics.CP_ASYNC_COMMIT, intrinsics.CP_ASYNC_WAIT)


class AsyncCopyTranslator:
    """Mixed into ``ThreadTranslator`` (it needs ``expr``, ``emit``, ``constant``)."""

    def stmt_Evaluate(self, s: ir.Evaluate) -> None:
        expr, emit, constant = self.expr, self.emit, self.constant  # type: ignore[attr-defined]
        call = s.value
        intrinsic = intrinsics.lookup_or_none(call.op) if isinstance(call, ir.Call) else None
        if intrinsic not in _ASYNC:
            super().stmt_Evaluate(s)  # type: ignore[misc]
            return
        assert isinstance(call, ir.Call) and intrinsic is not None
        intrinsic.check_arity(len(call.args))
        if intrinsic is intrinsics.CP_ASYNC:
            emit(f"{constant(start)}(_rt, _t, {', '.join(expr(a) for a in call.args)})")
            return
        if intrinsic is intrinsics.CP_ASYNC_COMMIT:
            emit(f"{constant(commit)}(_t)")
        else:
            emit(f"{constant(wait)}(_t, {expr(call.args[0])})")
        emit(f"yield {constant(intrinsic)}")
