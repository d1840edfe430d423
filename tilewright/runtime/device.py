"""``Device``: a (DLPack device type, index) pair naming where arrays live and kernels run.

What differs between kinds of device (whether one is present, how to wait for it, how to
allocate on it) is one ``DeviceKind`` record each in the ``DEVICE_KINDS`` table; the rest
of the runtime asks the record instead of comparing kind names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


def _cuda_count() -> int:
    from tilewright.runtime.cuda_runtime.driver import device_count

    return device_count()


def _cuda_sync(index: int) -> None:
    from tilewright.runtime.cuda_runtime.driver import synchronize

    synchronize(index)


def _cuda_allocator() -> Any:
    from tilewright.runtime.cuda_runtime.memory import DeviceAllocation

    return DeviceAllocation


def _opencl_count() -> int:
    from tilewright.runtime import opencl_runtime

    return opencl_runtime.device_count() if opencl_runtime.available() else 0


def _opencl_sync(index: int) -> None:
    from tilewright.runtime.opencl_runtime import synchronize

    synchronize(index)


def _opencl_allocator() -> Any:
    from tilewright.runtime.opencl_runtime import CLBuffer

    return CLBuffer


@dataclasses.dataclass(frozen=True)
class DeviceKind:
    """One kind of device.

    Attributes:
        name: ``cpu``, ``cuda``, ``opencl`` or ``metal``.
        code: DLPack's ``DLDeviceType`` code.
        aliases: other spellings accepted by ``device()``.
        is_host: arrays live in host memory (every index is the same memory).
        count: how many such devices this process can use (the runtime imported on demand:
            the device runtimes are optional packages).
        sync: wait for the work queued on device ``index``.
        allocator: the buffer class of device memory (``None``: arrays are numpy arrays).
        cuda_pointers: kernels take CUDA device pointers (torch / cupy tensors directly).
    """

    name: str
    code: int
    aliases: tuple[str, ...] = ()
    is_host: bool = False
    count: Callable[[], int] = lambda: 0
    sync: Callable[[int], None] = lambda index: None
    allocator: Callable[[], Any] | None = None
    cuda_pointers: bool = False


DEVICE_KINDS: tuple[DeviceKind, ...] = (
    DeviceKind("cpu", 1, ("c", "llvm"), is_host=True, count=lambda: 1),
    DeviceKind("cuda", 2, ("gpu",), count=_cuda_count, sync=_cuda_sync,
               allocator=_cuda_allocator, cuda_pointers=True),
    DeviceKind("opencl", 4, ("cl",), count=_opencl_count, sync=_opencl_sync,
               allocator=_opencl_allocator),
    DeviceKind("metal", 8, ("mtl",)),
)  # fmt: skip
# DLPack's DLDeviceType codes by kind name.
DEVICE_TYPES: dict[str, int] = {k.name: k.code for k in DEVICE_KINDS}
_BY_CODE = {k.code: k for k in DEVICE_KINDS}
_BY_NAME = {name: k for k in DEVICE_KINDS for name in (k.name, *k.aliases)}


@dataclasses.dataclass(frozen=True)
class Device:
    """A device: its DLPack type code and index.

    Example::

        >>> cuda(1)
        cuda(1)
        >>> cuda(1).device_type, cuda(1).device_id
        (2, 1)
    """

    device_type: int
    device_id: int = 0

    @property
    def kind(self) -> str:
        """``cpu``, ``cuda``, ``opencl`` or ``metal``."""
        known = _BY_CODE.get(self.device_type)
        return known.name if known else f"device{self.device_type}"

    @property
    def kind_info(self) -> DeviceKind | None:
        """The record of this device's kind (``None`` for a DLPack type tilewright lacks)."""
        return _BY_CODE.get(self.device_type)

    @property
    def is_host(self) -> bool:
        """Whether arrays on this device live in host memory."""
        info = self.kind_info
        return info is not None and info.is_host

    @property
    def exist(self) -> bool:
        """Whether this process can use the device (a CUDA GPU or OpenCL device is present)."""
        info = self.kind_info
        return info is not None and self.device_id < info.count()

    def same_memory(self, other: Device) -> bool:
        """Whether an array on ``other`` is reachable by a kernel on this device (every host
        array is reachable from a host kernel, whatever its index)."""
        if self.device_type != other.device_type:
            return False
        return self.is_host or self.device_id == other.device_id

    def sync(self) -> None:
        """Wait for work queued on the device (a no-op on the CPU)."""
        info = self.kind_info
        if info is not None:
            info.sync(self.device_id)

    def allocator(self) -> Any:
        """The buffer class of this device's memory; ``RuntimeError`` when there is none."""
        info = self.kind_info
        if info is None or info.allocator is None:
            raise RuntimeError(
                f"tilewright has no runtime for {self}; arrays live on "
                + ", ".join(k.name for k in DEVICE_KINDS if k.is_host or k.allocator)
            )
        return info.allocator()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self.device_type, self.device_id)

    def __repr__(self) -> str:
        return f"{self.kind}({self.device_id})"

    __str__ = __repr__


def device(kind: str | int, index: int = 0) -> Device:
    """The device named ``kind`` (``"cpu"``, ``"cuda"``, ``"opencl"``, ``"metal"`` or a DLPack
    code) with index ``index``.

    Example::

        >>> device("cuda", 0) == cuda(0)
        True
    """
    if isinstance(kind, int):
        if kind not in _BY_CODE:
            raise ValueError(f"unknown DLPack device type {kind}; known: {DEVICE_TYPES}")
        return Device(kind, index)
    if kind not in _BY_NAME:
        known = [k.name for k in DEVICE_KINDS] + [a for k in DEVICE_KINDS for a in k.aliases]
        raise ValueError(f"unknown device kind {kind!r}; known kinds: {', '.join(known)}")
    if index < 0:
        raise ValueError(f"device index must be >= 0, got {index}")
    return Device(_BY_NAME[kind].code, index)


def cpu(index: int = 0) -> Device:
    """The host CPU. Example: ``tw.nd.array(x, tw.cpu(0))``."""
    return device("cpu", index)


def cuda(index: int = 0) -> Device:
    """NVIDIA GPU number ``index``. Example: ``tw.cuda(0)``."""
    return device("cuda", index)


def opencl(index: int = 0) -> Device:
    """OpenCL device number ``index``. Example: ``tw.opencl(0)``."""
    return device("opencl", index)


def metal(index: int = 0) -> Device:
    """Metal GPU number ``index``. Example: ``tw.metal(0)``."""
    return device("metal", index)
