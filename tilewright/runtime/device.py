"""``Device``: a (DLPack device type, index) pair naming where arrays live and kernels run."""

from __future__ import annotations

import dataclasses

# DLPack's DLDeviceType codes.
DEVICE_TYPES: dict[str, int] = {"cpu": 1, "cuda": 2, "opencl": 4, "metal": 8}
_KIND_OF_CODE = {code: kind for kind, code in DEVICE_TYPES.items()}
_ALIASES = {"c": "cpu", "llvm": "cpu", "gpu": "cuda", "cl": "opencl", "mtl": "metal"}


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
        return _KIND_OF_CODE.get(self.device_type, f"device{self.device_type}")

    @property
    def exist(self) -> bool:
        """Whether this process can use the device (a CUDA GPU or OpenCL device is present)."""
        if self.kind == "cuda":
            from tilewright.runtime.cuda_runtime.driver import device_count

            return self.device_id < device_count()
        if self.kind == "opencl":
            from tilewright.runtime import opencl_runtime as opencl

            return opencl.available() and self.device_id < opencl.device_count()
        return self.kind == "cpu" and self.device_id == 0

    def sync(self) -> None:
        """Wait for work queued on the device (a no-op on the CPU)."""
        # The device runtimes are optional packages: import them only when asked.
        if self.kind == "cuda":
            from tilewright.runtime.cuda_runtime.driver import synchronize

            synchronize(self.device_id)
        elif self.kind == "opencl":
            from tilewright.runtime.opencl_runtime import synchronize as cl_synchronize

            cl_synchronize(self.device_id)

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
        if kind not in _KIND_OF_CODE:
            raise ValueError(f"unknown DLPack device type {kind}; known: {DEVICE_TYPES}")
        return Device(kind, index)
    name = _ALIASES.get(kind, kind)
    if name not in DEVICE_TYPES:
        known = ", ".join([*DEVICE_TYPES, *_ALIASES])
        raise ValueError(f"unknown device kind {kind!r}; known kinds: {known}")
    if index < 0:
        raise ValueError(f"device index must be >= 0, got {index}")
    return Device(DEVICE_TYPES[name], index)


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
