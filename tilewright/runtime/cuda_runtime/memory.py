"""Device memory: ``DeviceAllocation`` (cuMemAlloc'ed, freed with its owner) and host copies.

An ``NDArray`` on ``cuda(i)`` owns one allocation; ``.numpy()`` copies it back.
"""

from __future__ import annotations

import numpy as np

from tilewright.runtime.cuda_runtime.driver import activate, call


class DeviceAllocation:
    """``nbytes`` of global memory on CUDA device ``index``; freed when garbage collected.

    Example::

        >>> buf = DeviceAllocation(1024, 0)
        >>> buf.copy_from_host(np.zeros(256, "float32"))
    """

    def __init__(self, nbytes: int, index: int = 0) -> None:
        activate(index)
        self.index = index
        self.nbytes = int(nbytes)
        (self._ptr,) = call("cuMemAlloc", max(self.nbytes, 1))
        self.ptr = int(self._ptr)

    def copy_from_host(self, host: np.ndarray) -> None:
        """Copy a C-contiguous host array of exactly ``nbytes`` bytes into the allocation."""
        data = np.ascontiguousarray(host)
        if data.nbytes != self.nbytes:
            raise ValueError(f"copy of {data.nbytes} bytes into a {self.nbytes}-byte allocation")
        activate(self.index)
        if self.nbytes:
            call("cuMemcpyHtoD", self._ptr, data.ctypes.data, self.nbytes)

    def copy_to_host(self, host: np.ndarray) -> None:
        """Copy the allocation into a C-contiguous, writable host array of ``nbytes`` bytes."""
        if host.nbytes != self.nbytes or not host.flags.c_contiguous:
            raise ValueError("copy_to_host needs a C-contiguous array of the same byte size")
        activate(self.index)
        if self.nbytes:
            call("cuMemcpyDtoH", host.ctypes.data, self._ptr, self.nbytes)

    def __del__(self) -> None:
        try:
            activate(self.index)
            call("cuMemFree", self._ptr)
        except Exception:  # at interpreter exit the driver may already be gone
            pass


def to_device(host: np.ndarray, index: int = 0) -> DeviceAllocation:
    """A new allocation on device ``index`` holding a copy of ``host``.

    Example::

        >>> to_device(np.arange(4, dtype="float32")).nbytes
        16
    """
    out = DeviceAllocation(host.nbytes, index)
    out.copy_from_host(host)
    return out
