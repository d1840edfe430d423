"""The race detector of a kernel launch: every access to memory several threads see (the
launch's global arrays that the kernel writes, each block's shared arrays) is logged, and the
logs are checked when the launch ends (or fails).

The rule, on global and shared memory alike: two accesses to one element by different threads,
one of them a write, race unless a barrier (``tw.sync_threads``, ``tw.cuda.cta_sync``) lies
between them; a barrier orders the threads of its block only, and threads of different blocks of
one launch are never ordered. Warp shuffles and allreduces exchange values but order no memory
access. A race raises ``DataRace`` (``SharedMemoryRace`` on shared memory) naming the buffer,
the element, both threads and the kind, ``write/write`` or ``read/write``. A thread reading or
rewriting what it wrote itself does not race. Two threads writing the same value do, as the CUDA
memory model has it, though compute-sanitizer's racecheck, which compares values, lets such
writes pass (seen on an H200, CUDA 13: 64 threads writing 1.0 to one shared float gave no
report, 64 different values a WAW hazard): such a kernel is right by accident of its values.
Launches are ordered (the host waits for each). Elements are the storage's: a vector access or a
byte copy touches each element it covers, and an access through a view of another element type
each storage element it overlaps (coarser than the hardware for narrower types).

The machine runs a block's threads one after another between barriers, so the accesses one
thread makes between two of them are contiguous in each array's log: at each thread's turn the
launch marks the log lengths with the thread and the phase (``turn``), and ``check`` sorts the
entries by element, phase and thread to find two writers of one element (in one phase, or in
two blocks), then looks up what each read element's writer was.
"""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from .memory import Watched

Place = tuple[tuple[int, int, int], tuple[int, int, int]]  # (block index, thread index)


class DataRace(AssertionError):
    """Two threads of one launch touch one element, one of them writing, with no barrier that
    orders them.

    ``buffer`` and ``index`` (in elements of the storage) name the element, ``kind`` is
    ``"write/write"`` or ``"read/write"``, ``threads`` the two threads as (block, thread)
    index triples (x, y, z), the reader first in a read/write race.
    """

    def __init__(self, buffer: str, index: int, kind: str, threads: tuple[Place, Place]) -> None:
        (block_a, thread_a), (block_b, thread_b) = threads
        same = block_a == block_b
        a = f"thread {thread_a} of block {block_a}"
        b = f"thread {thread_b}" if same else f"thread {thread_b} of block {block_b}"
        who = (
            f"{a} and {b} both write it"
            if kind == "write/write"
            else f"{a} reads it and {b} writes it"
        )
        why = (
            "with no barrier between them"
            if same
            else "and threads of different blocks are never ordered"
        )
        super().__init__(f"{buffer}[{index}]: {kind} race: {who} {why}")
        self.buffer, self.index, self.kind, self.threads = buffer, index, kind, threads


class SharedMemoryRace(DataRace):
    """A ``DataRace`` on a block's shared memory."""


class AccessLog:
    """What the threads of a launch did to one array (or to every block's copy of one shared
    array): the elements read and written, in the order the threads ran, and at each thread's
    turn (launch-wide thread id, phase, reads so far, writes so far)."""

    def __init__(self, name: str, shared: bool) -> None:
        self.name = name
        self.shared = shared
        self.reads: list[int] = []
        self.writes: list[int] = []
        self.marks: list[int] = []  # flat, four numbers a turn

    def mark(self, thread: int, epoch: int) -> None:
        self.marks.extend((thread, epoch, len(self.reads), len(self.writes)))


class Launch:
    """The accesses of one kernel launch over a grid of ``grid`` blocks (x, y, z) of ``block``
    threads (x, y, z), and their check."""

    def __init__(self, grid: list[int], block: list[int]) -> None:
        self.grid = grid
        self.block = block
        self.threads = int(np.prod(block))  # per block
        self.blocks = int(np.prod(grid))
        self.logs: list[AccessLog] = []
        self.shared: dict[str, AccessLog] = {}  # by allocation: one log for every block's copy
        self.thread = 0  # launch-wide id of the thread whose turn it is
        self.first = 0  # launch-wide id of the running block's first thread
        self.epoch = 0  # bumped by every barrier, and between blocks

    def watch(self, data: np.ndarray, name: str, shared: str | None = None) -> Watched:
        """``data`` with its accesses logged: a global array of the launch, or the running
        block's copy of shared allocation ``shared``."""
        log = self.shared.get(shared) if shared is not None else None
        if log is None:
            log = AccessLog(name, shared is not None)
            log.mark(self.thread, self.epoch)  # a shared array appears during some thread's turn
            self.logs.append(log)
            if shared is not None:
                self.shared[shared] = log
        return Watched(data, name, log)

    def begin_block(self, index: int) -> None:
        self.first = index * self.threads
        self.epoch += 1

    def turn(self, thread: int) -> None:
        """``thread`` (of the running block) runs until its next barrier or exchange."""
        self.thread = now = self.first + thread
        epoch = self.epoch
        for log in self.logs:
            log.marks.extend((now, epoch, len(log.reads), len(log.writes)))

    def barrier(self) -> None:
        """Every thread of the running block has reached a barrier."""
        self.epoch += 1

    def check(self) -> None:
        """Raises ``DataRace`` if two accesses made so far race."""
        for log in self.logs:
            if log.reads or log.writes:
                self._check(log)

    def _check(self, log: AccessLog) -> None:
        if not log.writes:
            return  # reads alone never race
        marks = np.array(log.marks, dtype=np.int64).reshape(-1, 4)
        read, reader, read_at = _entries(log.reads, marks, 2)
        written, writer, written_at = _entries(log.writes, marks, 3)
        if log.shared:  # each block has its own copy: an element is also a block
            read = read * self.blocks + reader // self.threads
            written = written * self.blocks + writer // self.threads
        order = np.lexsort((writer, written_at, written))
        written, writer, written_at = written[order], writer[order], written_at[order]
        # Writes to one element: by two threads in one phase, or by two blocks.
        same = written[1:] == written[:-1]
        twice = same & (written_at[1:] == written_at[:-1]) & (writer[1:] != writer[:-1])
        twice |= same & (writer[1:] // self.threads != writer[:-1] // self.threads)
        for i in np.flatnonzero(twice)[:1]:
            self._race(log, written[i], "write/write", writer[i], writer[i + 1])
        # So one thread writes an element in a phase, and one block in the launch. Reads of
        # what another thread writes in the same phase:
        phases = self.epoch + 1
        keys = written * phases + written_at
        at = np.minimum(np.searchsorted(keys, read * phases + read_at), keys.size - 1)
        raced = (keys[at] == read * phases + read_at) & (writer[at] != reader)
        if not log.shared:
            # Reads of what another block writes:
            at_element = np.minimum(np.searchsorted(written, read), written.size - 1)
            other = writer[at_element] // self.threads != reader // self.threads
            elsewhere = (written[at_element] == read) & other
            at = np.where(raced, at, at_element)
            raced |= elsewhere
        for i in np.flatnonzero(raced)[:1]:
            self._race(log, read[i], "read/write", reader[i], writer[at[i]])

    def _race(self, log: AccessLog, element: int, kind: str, a: int, b: int) -> NoReturn:
        if log.shared:
            element //= self.blocks
        race = SharedMemoryRace if log.shared else DataRace
        raise race(log.name, int(element), kind, (self._place(a), self._place(b)))

    def _place(self, thread: int) -> Place:
        block, thread = divmod(int(thread), self.threads)
        return (_unravel(block, self.grid), _unravel(thread, self.block))


def _entries(log: list[int], marks: np.ndarray, column: int) -> tuple[np.ndarray, ...]:
    """(elements, thread of each, phase of each) of one log of the launch."""
    elements = np.fromiter(log, dtype=np.int64, count=len(log))
    counts = np.diff(marks[:, column], append=len(log))
    return elements, np.repeat(marks[:, 0], counts), np.repeat(marks[:, 1], counts)


def _unravel(index: int, extents: list[int]) -> tuple[int, int, int]:
    """The (x, y, z) of a linear index that runs x fastest."""
    rest, x = divmod(int(index), extents[0])
    z, y = divmod(rest, extents[1])
    return (x, y, z)
