"""Storage the evaluated code reads and writes: flat numpy arrays, byte addresses, byte copies,
and the shared arrays of a thread block. What several threads see (a launch's global arrays, a
block's shared ones) is ``races.Watched``: its accesses are checked for races.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tilewright.ir import DataType

if TYPE_CHECKING:
    from .races import AccessLog, Launch

Value = Any  # what evaluated code computes: a Python or numpy scalar, or an array of lanes


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
    watched: Watched | None = None  # the storage, where other threads see it


def address(storage: np.ndarray | Watched | WatchedView, index: int) -> Address:
    if isinstance(storage, np.ndarray):
        return Address(storage.view(np.uint8), int(index) * storage.itemsize)
    root = storage.root if isinstance(storage, WatchedView) else storage
    return Address(root.data.view(np.uint8), int(index) * storage.itemsize, root)


def copy_bytes(dst: Address, src: Address, nbytes: int) -> None:
    """``tw.cuda.copy_bytes``: one aligned transfer of ``nbytes`` bytes."""
    check_transfer(dst, src, nbytes)
    dst.memory[dst.offset : dst.offset + nbytes] = src.memory[src.offset : src.offset + nbytes]


def check_transfer(dst: Address, src: Address, nbytes: int) -> None:
    """Checks an aligned transfer of ``nbytes`` bytes and logs its accesses."""
    for side in (dst, src):
        if side.offset % nbytes:
            raise AssertionError(f"misaligned {nbytes}-byte copy at byte {side.offset}")
        if not 0 <= side.offset <= side.memory.size - nbytes:
            out_of_range(side.offset + nbytes - 1, side.memory.size, "copy_bytes")
    if src.watched is not None:
        src.watched.touch_bytes(src.offset, nbytes, write=False)
    if dst.watched is not None:
        dst.watched.touch_bytes(dst.offset, nbytes, write=True)


@dataclass(frozen=True, slots=True)
class Pointer:
    """A region's storage seen from element ``offset`` (``tw.region_data``, ``tvm_access_ptr``):
    what an intrinsic reads or writes through it must lie inside the region, elements
    ``first`` to ``last`` of the storage that the region's two loads name, and be allowed by
    the access mask (1: read, 2: write)."""

    storage: np.ndarray | Watched | WatchedView
    first: int
    last: int
    name: str
    offset: int = 0
    mask: int = 3

    @property
    def dtype(self) -> np.dtype:
        storage = self.storage
        return storage.dtype if isinstance(storage, np.ndarray) else storage.data.dtype

    def shifted(self, offset: int, mask: int) -> Pointer:
        """``tvm_access_ptr(self, offset, extent, mask)``."""
        return Pointer(self.storage, self.first, self.last, self.name, self.offset + offset, mask)

    def read(self, start: int, count: int) -> np.ndarray:
        """Elements ``start .. start + count`` past the pointer."""
        return self.storage[self._elements(int(start) + np.arange(count), 1, "read")]

    def write(self, elements: np.ndarray | int, values: Value) -> None:
        """Stores ``values`` at ``elements`` past the pointer."""
        self.storage[self._elements(np.asarray(elements), 2, "write")] = values

    def _elements(self, elements: np.ndarray, bit: int, what: str) -> np.ndarray:
        if not self.mask & bit:
            raise AssertionError(f"{self.name}: a {what} through a pointer of mask {self.mask}")
        elements = elements + self.offset
        low, high = int(elements.min()), int(elements.max())
        if low < self.first or high > self.last:
            raise IndexError(
                f"{self.name}: elements {low}..{high} outside the region {self.first}..{self.last}"
            )
        return elements


def region(
    storage: np.ndarray | Watched | WatchedView, first: int, last: int, name: str
) -> Pointer:
    """``tw.region_data(first load, last load)``: the storage, bounded by the region."""
    return Pointer(storage, int(first), int(last), name)


def whole(storage: np.ndarray | Watched | WatchedView, name: str) -> Pointer:
    """A data variable as a pointer: its whole storage is the region."""
    data = storage if isinstance(storage, np.ndarray) else storage.data
    return Pointer(storage, 0, data.size - 1, name)


class Watched:
    """An array other threads see, whose accesses go to a ``races.AccessLog``: a global array
    of a launch (the generated code indexes it as a plain array) or a block's shared array
    (through ``load``, ``store`` and ``address``, as ``threads.py`` spells shared accesses)."""

    __slots__ = ("data", "log", "name", "reads", "writes")

    def __init__(self, data: np.ndarray, name: str, log: AccessLog) -> None:
        self.data = data
        self.name = name
        self.log = log
        self.reads, self.writes = log.reads, log.writes

    @property
    def itemsize(self) -> int:
        return self.data.itemsize

    def __getitem__(self, offset: int | np.ndarray) -> Value:
        if isinstance(offset, np.ndarray):
            self.reads.extend(offset.tolist())
        else:
            self.reads.append(offset)
        return self.data[offset]

    def __setitem__(self, offset: int | np.ndarray, value: Value) -> None:
        if isinstance(offset, np.ndarray):
            self.writes.extend(offset.tolist())
        else:
            self.writes.append(offset)
        self.data[offset] = value

    # The thread argument of the shared spelling is redundant: the launch knows whose turn it is
    # (``races.Launch.turn``) and marks the logs there.
    def load(self, offset: int | np.ndarray, thread: int) -> Value:
        return self[offset]

    def store(self, offset: int | np.ndarray, value: Value, thread: int) -> None:
        self[offset] = value

    def address(self, index: int, thread: int) -> Address:
        return address(self, index)

    def view(self, dtype: np.dtype) -> WatchedView:
        """The storage as elements of another type (``bind_storage``'s views)."""
        return WatchedView(self, dtype)

    def touch_bytes(self, start: int, nbytes: int, write: bool) -> None:
        """Logs a byte copy's access to bytes ``[start, start + nbytes)``."""
        size = self.data.itemsize
        elements = range(start // size, (start + nbytes - 1) // size + 1)
        (self.writes if write else self.reads).extend(elements)


class WatchedView:
    """A ``Watched`` array seen as another element type: accesses log the elements of the
    storage they cover."""

    __slots__ = ("data", "root")

    def __init__(self, root: Watched, dtype: np.dtype) -> None:
        self.root = root
        self.data = root.data.view(dtype)

    @property
    def itemsize(self) -> int:
        return self.data.itemsize

    def __getitem__(self, offset: int | np.ndarray) -> Value:
        self._touch(offset, write=False)
        return self.data[offset]

    def __setitem__(self, offset: int | np.ndarray, value: Value) -> None:
        self._touch(offset, write=True)
        self.data[offset] = value

    def _touch(self, offset: int | np.ndarray, write: bool) -> None:
        size = self.data.itemsize
        for element in np.atleast_1d(offset).tolist():
            self.root.touch_bytes(element * size, size, write)


class Block:
    """What the threads of one thread block share: their shared arrays, watched by the launch."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.shared: dict[str, Watched] = {}

    def shared_array(self, key: str, name: str, size: int, dtype: np.dtype) -> Watched:
        """The block's array ``key``; the first thread to get here allocates it."""
        if key not in self.shared:
            self.shared[key] = self.launch.watch(allocate(size, dtype), name, shared=key)
        return self.shared[key]
