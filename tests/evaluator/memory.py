"""Storage the evaluated code reads and writes: flat numpy arrays, byte addresses, byte copies,
and the shared arrays of a thread block, which catch races between its threads.

Shared memory keeps, per element, which thread last wrote it and read it and in which phase (a
phase ends at a barrier). A thread that reads an element another thread wrote in the same
phase, or writes one another thread read, gets (or leaves) NaN: a missing barrier shows up as a
wrong result whatever order the threads run in. Where there is no NaN to leave (integers, byte
copies) the race raises ``SharedMemoryRace``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tilewright.ir import DataType

SEVERAL = -2  # the reader of an element that several threads read in this phase
Value = Any  # what evaluated code computes: a Python or numpy scalar, or an array of lanes
Offset = int | np.ndarray  # an element, or one element per lane


class SharedMemoryRace(AssertionError):
    """Two threads of a block touched one shared element in a phase, one of them writing."""


def np_dtype(dt: DataType) -> np.dtype:
    return np.dtype("bool" if dt.is_bool else str(dt.element))


def allocate(size: int, dtype: np.dtype) -> np.ndarray:
    """Fresh storage; floats start as NaN, so reading an element nobody wrote poisons results."""
    return np.full(size, np.nan if dtype.kind == "f" else 0, dtype=dtype)


def out_of_range(index: Value, extent: int, name: str) -> None:
    raise IndexError(f"{name}: index {index} out of [0, {extent})")


def check_lanes(index: np.ndarray, extent: int, name: str) -> np.ndarray:
    if not (np.all(index >= 0) and np.all(index < extent)):
        out_of_range(index, extent, name)
    return index


@dataclass(frozen=True, slots=True)
class Address:
    """``&buffer[i]``: a byte offset into the bytes of some storage (``tw.address_of``)."""

    memory: np.ndarray  # uint8 view of the storage
    offset: int
    shared: SharedArray | None = None
    thread: int = 0


def address(storage: np.ndarray, index: int) -> Address:
    return Address(storage.view(np.uint8), int(index) * storage.itemsize)


def copy_bytes(dst: Address, src: Address, nbytes: int) -> None:
    """``tw.cuda.copy_bytes``: one aligned transfer of ``nbytes`` bytes."""
    for side in (dst, src):
        if side.offset % nbytes:
            raise AssertionError(f"misaligned {nbytes}-byte copy at byte {side.offset}")
        if not 0 <= side.offset <= side.memory.size - nbytes:
            out_of_range(side.offset + nbytes - 1, side.memory.size, "copy_bytes")
    if src.shared is not None:
        src.shared.read_bytes(src.offset, nbytes, src.thread)
    if dst.shared is not None:
        dst.shared.write_bytes(dst.offset, nbytes, dst.thread)
    dst.memory[dst.offset : dst.offset + nbytes] = src.memory[src.offset : src.offset + nbytes]


class Block:
    """What the threads of one thread block share: the phase and the shared arrays."""

    def __init__(self) -> None:
        self.phase = 0
        self.shared: dict[str, SharedArray] = {}

    def shared_array(self, key: str, name: str, size: int, dtype: np.dtype) -> SharedArray:
        """The block's array ``key``; the first thread to get here allocates it."""
        if key not in self.shared:
            self.shared[key] = SharedArray(self, name, size, dtype)
        return self.shared[key]


class SharedArray:
    """One shared buffer of a block, with its race tables."""

    def __init__(self, block: Block, name: str, size: int, dtype: np.dtype) -> None:
        self.block = block
        self.name = name
        self.data = allocate(size, dtype)
        self.bytes = self.data.view(np.uint8)
        self.writer, self.write_phase, self.reader, self.read_phase = (
            np.full(size, -1, dtype=np.int64) for _ in range(4)
        )

    def load(self, offset: Offset, thread: int) -> Value:
        if isinstance(offset, np.ndarray):
            values = self.data[offset]
            raced = self._note_reads(offset, thread)
            return self._poison(values, raced) if raced.any() else values
        phase = self.block.phase
        value = self.data[offset]
        raced = self.write_phase[offset] == phase and self.writer[offset] != thread
        if self.read_phase[offset] != phase:
            self.read_phase[offset], self.reader[offset] = phase, thread
        elif self.reader[offset] != thread:
            self.reader[offset] = SEVERAL
        return self._poison(value, True) if raced else value

    def store(self, offset: Offset, value: Value, thread: int) -> None:
        phase = self.block.phase
        if isinstance(offset, np.ndarray):
            raced = (self.read_phase[offset] == phase) & (self.reader[offset] != thread)
            if raced.any():
                value = self._poison(np.broadcast_to(value, offset.shape), raced)
        elif self.read_phase[offset] == phase and self.reader[offset] != thread:
            value = self._poison(value, True)
        self.data[offset] = value
        self.writer[offset], self.write_phase[offset] = thread, phase

    def address(self, index: int, thread: int) -> Address:
        return Address(self.bytes, int(index) * self.data.itemsize, self, thread)

    def read_bytes(self, start: int, nbytes: int, thread: int) -> None:
        if self._note_reads(self._elements(start, nbytes), thread).any():
            raise SharedMemoryRace(f"{self.name}: a byte copy reads what another thread wrote")

    def write_bytes(self, start: int, nbytes: int, thread: int) -> None:
        at, phase = self._elements(start, nbytes), self.block.phase
        if np.any((self.read_phase[at] == phase) & (self.reader[at] != thread)):
            raise SharedMemoryRace(f"{self.name}: a byte copy overwrites what another thread read")
        self.writer[at], self.write_phase[at] = thread, phase

    def _elements(self, start: int, nbytes: int) -> slice:
        size = self.data.itemsize
        return slice(start // size, (start + nbytes - 1) // size + 1)

    def _note_reads(self, at: np.ndarray | slice, thread: int) -> np.ndarray:
        """Records that ``thread`` read elements ``at``; which of them another thread wrote."""
        phase = self.block.phase
        raced = (self.write_phase[at] == phase) & (self.writer[at] != thread)
        again = (self.read_phase[at] == phase) & (self.reader[at] != thread)
        self.reader[at] = np.where(again, SEVERAL, thread)
        self.read_phase[at] = phase
        return raced

    def _poison(self, values: Value, raced: Value) -> Value:
        if self.data.dtype.kind != "f":
            raise SharedMemoryRace(f"{self.name}: two threads race on an element in one phase")
        return np.where(raced, np.nan, values).astype(self.data.dtype)[()]
