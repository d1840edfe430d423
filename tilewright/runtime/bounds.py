"""A ``bounds_check`` kernel's error record → ``BoundsError`` naming buffer, index and kernel.

A function built with ``tw.build(..., bounds_check=True)`` takes a hidden last argument: an
``int64`` record of two elements per checked access (``FuncSignature.bounds_checks``), a
flag and the index that went out of range. The kernel skips the faulting access and fills
the record; after the call the runtime reads it, clears it and raises.
"""

from __future__ import annotations

import numpy as np

from tilewright.artifact import BoundsCheck, FuncSignature
from tilewright.runtime.device import Device
from tilewright.runtime.ndarray import NDArray, array

# Further failing accesses named in one message.
_LISTED = 3


class BoundsError(IndexError):
    """A kernel built with ``bounds_check=True`` indexed a buffer out of range.

    The faulting access was skipped (nothing was read or written out of bounds); the results
    of the call are not meaningful. ``buffer``, ``index`` and ``kernel`` describe the first
    failing access.

    Example::

        >>> try:
        ...     rt_mod["main"](a, bad_idx, b)
        ... except tw.runtime.BoundsError as err:
        ...     err.buffer, err.index, err.kernel
        ('A', 1030, 'main')
    """

    def __init__(self, message: str, buffer: str, index: int, kernel: str) -> None:
        super().__init__(message)
        self.buffer = buffer
        self.index = index
        self.kernel = kernel


def new_record(sig: FuncSignature, dev: Device) -> NDArray:
    """A cleared error record for one call of ``sig`` on ``dev``."""
    return array(np.zeros(2 * len(sig.bounds_checks), dtype=np.int64), dev)


def raise_recorded(sig: FuncSignature, record: NDArray) -> None:
    """Raise ``BoundsError`` if the last call set a flag of ``record``, clearing it first.

    Example: ``raise_recorded(sig, record)`` after the kernel ran.
    """
    record.device.sync()
    values = record.host_array() if record.device.is_host else record.numpy()
    hits = [i for i in range(len(sig.bounds_checks)) if values[2 * i] != 0]
    if not hits:
        return
    found = [(sig.bounds_checks[i], int(values[2 * i + 1])) for i in hits]
    record.copyfrom(np.zeros_like(values))
    first, index = found[0]
    kernel = first.kernel or sig.name
    message = f"{sig.name}: kernel {kernel} {_describe(first, index)}; the access was skipped"
    if len(found) > 1:
        others = "; ".join(_describe(check, i) for check, i in found[1 : 1 + _LISTED])
        more = f" and {len(found) - 1 - _LISTED} more" if len(found) - 1 > _LISTED else ""
        message += f". Other accesses out of range: {others}{more}"
    raise BoundsError(message, first.buffer, index, kernel)


def _describe(check: BoundsCheck, index: int) -> str:
    shape = f", shape {check.shape}" if len(check.shape) > 1 else ""
    element = ""
    if len(check.shape) > 1 and index >= 0:
        # The row-major coordinates the flat index stands for (past the end: in the first dim).
        coords = []
        rest = index
        for extent in reversed(check.shape[1:]):
            coords.append(rest % extent)
            rest //= extent
        element = f" (element [{', '.join(str(c) for c in [rest, *reversed(coords)])}])"
    return (
        f"accessed buffer {check.buffer} at index {index}{element}, outside [0, {check.extent})"
        f" ({check.extent} elements{shape}); index expression: {check.index}"
    )


__all__ = ["BoundsError", "new_record", "raise_recorded"]
