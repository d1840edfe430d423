"""Calls in, outcomes out: a pool of child processes that survives the calls it runs.

A call that raises gives its exception's type and message; one that outlives its timeout
gets its process killed; one whose process dies (a segfault, ``os._exit``, ``abort()``) is
reported with the signal or exit code. In each case the process is replaced and the other
calls proceed. ``LocalBuilder`` builds through a pool of one process per core,
``LocalRunner`` measures through a pool of one.

Example::

    >>> pool = WorkerPool(2, what="builder")
    >>> pool.map(math.factorial, [(5,), (-1,)], timeout_sec=10.0)
    [Outcome(value=120, error=None),
     Outcome(value=None, error='ValueError: factorial() not defined for negative values')]
    >>> pool.close()
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

# A child that has not said it is ready after this long (imports, start-up) counts as dead.
STARTUP_TIMEOUT_SEC = 120.0
# Children that die before they are ready, in a row, before the pool gives up.
MAX_FAILED_STARTS = 3
# Lines of an exception message kept in an error.
ERROR_LINES = 8


@dataclasses.dataclass(frozen=True)
class Outcome:
    """The result of one call: ``value`` when it returned, else ``error`` says why not."""

    value: Any = None
    error: str | None = None


def describe_error(err: BaseException) -> str:
    """``Type: message``, cut to the message's first lines."""
    message = str(err).strip()
    lines = message.splitlines()
    if len(lines) > ERROR_LINES:
        message = "\n".join([*lines[:ERROR_LINES], "..."])
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def describe_exit(exitcode: int | None) -> str:
    """How a process ended, from its exit code: ``signal 11 SIGSEGV`` or ``exit code 1``."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"signal {-exitcode} {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit code {exitcode}"


def _serve(conn: Connection) -> None:
    """The child's loop: receive ``(fn, args)``, send back ``("ok", value)`` or
    ``("error", text)``; stop on ``None`` or when the parent goes away."""
    conn.send(("ready", None))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        fn, args = request
        try:
            reply: tuple[str, Any] = ("ok", fn(*args))
        except BaseException as err:  # every failure, even SystemExit, becomes an outcome
            reply = ("error", describe_error(err))
            if not isinstance(err, Exception):
                conn.send(reply)
                raise
        try:
            conn.send(reply)
        except Exception as err:  # the value did not pickle
            conn.send(("error", f"the result could not be sent back: {describe_error(err)}"))


class ChildProcess:
    """One worker process and the pipe to it.

    The worker is a fresh interpreter (``python -c``) rather than a ``multiprocessing``
    child: that way it never re-imports the user's main script (which ``spawn`` and
    ``forkserver`` do, and which fails for a script without an ``if __name__ ==
    "__main__"`` guard) and inherits no CUDA context. It receives this process's
    ``sys.path`` first, so functions of any module importable here unpickle there.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.conn, child_conn = multiprocessing.Pipe()
        fd = child_conn.fileno()
        self.process = subprocess.Popen(
            [sys.executable, "-c", _CHILD_MAIN, str(fd)], pass_fds=(fd,), close_fds=True
        )
        child_conn.close()
        self.conn.send(list(sys.path))
        self.started = time.monotonic()
        self.ready = False
        self.task: int | None = None  # index of the call it runs
        self.deadline = 0.0

    @property
    def exitcode(self) -> int | None:
        return self.process.poll()

    def send(self, task: int, fn: Callable[..., Any], args: Sequence[Any], timeout: float) -> None:
        self.conn.send((fn, tuple(args)))
        self.task = task
        self.deadline = time.monotonic() + timeout

    def receive(self) -> tuple[str, Any] | None:
        """The next message, or None when the pipe broke (the process died)."""
        try:
            message: tuple[str, Any] = self.conn.recv()
        except (EOFError, OSError):
            return None
        return message

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.conn.close()

    def stop(self) -> None:
        """Ask the process to leave, then make sure it did."""
        try:
            self.conn.send(None)
            self.process.wait(timeout=2)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        self.kill()


_CHILD_MAIN = (
    "import sys; from tilewright.meta_schedule.builder.process_pool import child_main; "
    "child_main(int(sys.argv[1]))"
)


def child_main(fd: int) -> None:
    """The worker's entry point: take the parent's ``sys.path``, then serve calls."""
    conn = Connection(fd)
    for entry in conn.recv():
        if entry not in sys.path:
            sys.path.append(entry)
    _serve(conn)


class WorkerPool:
    """``size`` worker processes, started on first use and kept between ``map`` calls.

    Arguments:
        size: how many calls run at once.
        what: names the processes in errors (``"builder process died (signal 11 SIGSEGV)"``).
    """

    def __init__(self, size: int, what: str = "worker") -> None:
        if size < 1:
            raise ValueError(f"{what} pool: size must be >= 1, got {size}")
        self.size = size
        self.what = what
        self._children: list[ChildProcess] = []
        self._count = 0

    def _spawn(self) -> ChildProcess:
        self._count += 1
        return ChildProcess(f"tilewright-{self.what}-{self._count}")

    def map(
        self,
        fn: Callable[..., Any],
        arg_list: Sequence[Sequence[Any]],
        timeout_sec: float,
    ) -> list[Outcome]:
        """Run ``fn(*args)`` for each entry of ``arg_list`` in the workers; one ``Outcome``
        per entry, in order. ``fn`` and the arguments must pickle (a top-level function).

        The timeout of a call runs from when a ready worker receives it, so starting a
        process does not count against it.
        """
        try:
            return self._map(fn, arg_list, timeout_sec)
        except BaseException:
            # Interrupted (Ctrl-C): a busy worker would answer the next map with this one's
            # result, so none is kept.
            self.restart()
            raise

    def _map(
        self, fn: Callable[..., Any], arg_list: Sequence[Sequence[Any]], timeout_sec: float
    ) -> list[Outcome]:
        results: list[Outcome | None] = [None] * len(arg_list)
        pending = deque(range(len(arg_list)))
        while len(self._children) < min(self.size, len(arg_list)):
            self._children.append(self._spawn())
        failed_starts = 0
        while pending or any(c.task is not None for c in self._children):
            for child in self._children:
                if child.ready and child.task is None and pending:
                    index = pending.popleft()
                    try:
                        child.send(index, fn, arg_list[index], timeout_sec)
                    except (BrokenPipeError, ConnectionResetError):
                        pending.appendleft(index)  # it died idle: _poll replaces it
                    except Exception as err:  # the call does not pickle (a lambda, say)
                        error = f"the call could not be sent: {describe_error(err)}"
                        results[index] = Outcome(error=error)
            now = time.monotonic()
            deadlines = [c.deadline for c in self._children if c.task is not None]
            deadlines += [c.started + STARTUP_TIMEOUT_SEC for c in self._children if not c.ready]
            # A dying worker closes its end of the pipe: its connection turns readable.
            waitables: list[Any] = [c.conn for c in self._children]
            wait(waitables, timeout=max(0.0, min(deadlines, default=now + 1.0) - now))
            for position, child in enumerate(self._children):
                outcome, dead = self._poll(child, timeout_sec)
                if outcome is not None and child.task is not None:
                    results[child.task] = outcome
                    child.task = None
                if dead:
                    if not child.ready:
                        failed_starts += 1
                        if failed_starts >= MAX_FAILED_STARTS:
                            self.close()
                            raise RuntimeError(
                                f"{self.what} processes die as they start "
                                f"({describe_exit(child.exitcode)}); see stderr"
                            )
                    child.kill()
                    self._children[position] = self._spawn()
        return [r if r is not None else Outcome(error="not run") for r in results]

    def _poll(self, child: ChildProcess, timeout_sec: float) -> tuple[Outcome | None, bool]:
        """What ``child`` has to say now: an outcome of its call, and whether it must be
        replaced (it died, or outlived a deadline)."""
        while child.conn.poll():
            message = child.receive()
            if message is None:  # the pipe broke: the process is dying
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.process.wait(timeout=5)
                break
            kind, payload = message
            if kind == "ready":
                child.ready = True
            elif kind == "ok":
                return Outcome(value=payload), False
            else:
                return Outcome(error=payload), child.exitcode is not None
        if child.exitcode is not None:
            cause = describe_exit(child.exitcode)
            return Outcome(error=f"{self.what} process died ({cause})"), True
        if time.monotonic() < child.deadline or child.task is None:
            late_start = not child.ready and time.monotonic() > child.started + STARTUP_TIMEOUT_SEC
            return None, late_start
        return Outcome(error=f"timeout after {timeout_sec:g} s"), True

    def restart(self) -> None:
        """Replace every worker (after a device fault poisoned a process's state)."""
        for child in self._children:
            child.kill()
        self._children = []

    def close(self) -> None:
        """Stop the workers; a later ``map`` starts new ones."""
        for child in self._children:
            child.stop()
        self._children = []

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown
            self.close()
