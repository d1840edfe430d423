"""``CUDAModule``: CUDA source and its cubin; loads into the GPU on first use and launches.

Building needs no GPU (the cubin is compiled for the target's arch); running does, and
without one every call raises ``CUDAError`` ("no CUDA device ..."). A kernel's tensor-map
parameters are encoded from their arrays when the launch is packed (``tensor_map_args``).
"""

from __future__ import annotations

import ctypes
import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tilewright.artifact import TENSOR_MAP, Artifact, FuncSignature, Launch
from tilewright.ir.dtype import numpy_scalar_type
from tilewright.runtime.cuda_runtime import driver
from tilewright.runtime.cuda_runtime.launch_cache import CUDARunner, LaunchCache, torch_stream
from tilewright.runtime.cuda_runtime.memory import DeviceAllocation
from tilewright.runtime.cuda_runtime.tensor_map_args import TensorMapCache
from tilewright.runtime.device import Device
from tilewright.runtime.gpu_module import DeviceModule
from tilewright.runtime.module import Runner
from tilewright.runtime.ndarray import NDArray

_CTYPES: dict[str, type[ctypes._SimpleCData[Any]]] = {
    "bool": ctypes.c_bool,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


# Floating-point dtypes without a ctypes type: (the integer view of their bits, its ctype).
_BITS: dict[str, tuple[type[np.generic], type[ctypes._SimpleCData[Any]]]] = {
    "float16": (np.uint16, ctypes.c_uint16),
    "bfloat16": (np.uint16, ctypes.c_uint16),
    "float8_e4m3fn": (np.uint8, ctypes.c_uint8),
    "float8_e5m2": (np.uint8, ctypes.c_uint8),
}


class CUDAModule(DeviceModule):
    """Device code for CUDA: ``get_source()`` is the CUDA C, ``cubin`` its binary.

    Example::

        >>> dev_mod = rt_mod.imported_modules[0]
        >>> print(dev_mod.get_source())
        >>> dev_mod.arch, len(dev_mod.cubin)
    """

    type_key = "cuda"

    def __init__(self, artifact: Artifact, dev: Device) -> None:
        super().__init__(artifact, dev)
        self.cubin = artifact.binary
        self.arch = artifact.arch
        self._loaded: driver.LoadedModule | None = None
        self.maps = TensorMapCache()  # encoded tensor maps, shared with the launch cache
        self._ready = False  # prepare() passed once: the device and its arch do not change

    def prepare(self) -> None:
        """Raise ``CUDAError`` unless a GPU can run these kernels."""
        if self._ready:
            return
        driver.require_device(self.device.device_id)
        have = driver.device_arch(self.device.device_id)
        # sm_90a is sm_90 with its architecture-specific instructions (wgmma, setmaxnreg):
        # cubins for it run on exactly the sm_90 devices.
        if have != self.arch.removesuffix("a"):
            raise driver.CUDAError(
                f"the kernels were compiled for {self.arch} but cuda({self.device.device_id}) "
                f"is {have}; rebuild with target 'cuda' on this machine"
            )
        self._ready = True

    def loaded(self) -> driver.LoadedModule:
        if self._loaded is None:
            label = ", ".join(self.kernels)
            self._loaded = driver.LoadedModule(self.cubin, self.device.device_id, label)
        return self._loaded

    def runner(self, launches: Sequence[Launch], values: Sequence[object]) -> Callable[[], None]:
        """A function running ``launches`` on the caller's current stream."""
        stream = current_stream(values)
        module = self.loaded()
        steps = []
        for item in launches:
            info = self.kernels[item.kernel]
            types = info.params
            if len(types) != len(item.args):
                raise driver.CUDAError(
                    f"kernel {item.kernel} takes {len(types)} arguments; the host passes "
                    f"{len(item.args)}"
                )
            maps = {m.index: m for m in info.tensor_maps}
            packed = driver.KernelArgs(
                [
                    self.maps.argument(maps[i], v, item.kernel)
                    if t == TENSOR_MAP
                    else _ctype(v, t, item.kernel)
                    for i, (v, t) in enumerate(zip(item.args, types))
                ]
            )
            shared = max(item.dyn_shared_bytes, self.kernels[item.kernel].dyn_shared_bytes)
            function = module.function(item.kernel, shared)
            steps.append((function, dataclasses.replace(item, dyn_shared_bytes=shared), packed))
        index = self.device.device_id

        def run() -> None:
            driver.activate(index)
            for function, item, packed in steps:
                driver.launch(
                    function, item.kernel, item.grid, item.block, item.dyn_shared_bytes,
                    stream, packed,
                )  # fmt: skip

        return CUDARunner(run, values, stream, steps)

    def call_cache(self, sig: FuncSignature) -> LaunchCache | None:
        """A ``LaunchCache`` for calls of ``sig`` (None with bounds checks, or where the driver
        library cannot be opened directly)."""
        if sig.bounds_checks:
            return None
        launcher = driver.RawLauncher.create(self.device.device_id)
        if launcher is None:
            return None
        return LaunchCache(sig, launcher, kernels=self.kernels, maps=self.maps)

    def measure(self, run: Callable[[], None], count: int) -> float:
        """Seconds for ``count`` calls of ``run``, from CUDA events on its stream."""
        stream = run.stream if isinstance(run, Runner) else 0
        timer = driver.EventTimer(stream, ", ".join(self.kernels))
        try:
            return timer.measure(run, count)
        finally:
            timer.close()


def current_stream(values: Sequence[object]) -> int:
    """The current stream of the library that made the arguments (torch, cupy), else 0."""
    for value in values:
        package = type(value).__module__.split(".")[0]
        # Every torch object among checked arguments is a tensor: it has a device.
        if package == "torch" and "torch" in sys.modules and hasattr(value, "device"):
            return torch_stream(value)
        if package == "cupy" and "cupy" in sys.modules:
            return int(sys.modules["cupy"].cuda.get_current_stream().ptr)
    return 0


def _ctype(value: object, dtype: str | None, kernel: str) -> ctypes._SimpleCData:
    if dtype is None:
        return ctypes.c_void_p(_pointer(value, kernel))
    if dtype in _BITS:  # passed as its bit pattern, as the kernel's parameter holds it
        kind = numpy_scalar_type(dtype)
        bits, storage = _BITS[dtype]
        return storage(int(np.array(value, dtype=kind).view(bits)))
    if dtype not in _CTYPES:
        raise driver.CUDAError(f"kernel {kernel}: no CUDA argument type for dtype {dtype}")
    return _CTYPES[dtype](value)


def _pointer(value: object, kernel: str) -> int:
    if isinstance(value, NDArray):
        buffer = value.buffer
        assert isinstance(buffer, DeviceAllocation)  # check_arguments: the array is on a GPU
        return int(buffer.ptr)
    # A torch tensor (the only torch objects among checked arguments).
    if type(value).__module__.startswith("torch") and hasattr(value, "data_ptr"):
        return int(value.data_ptr())
    if hasattr(value, "__cuda_array_interface__"):
        return int(value.__cuda_array_interface__["data"][0])
    if isinstance(value, int):
        return value
    raise driver.CUDAError(f"kernel {kernel}: cannot pass {type(value).__name__} as a pointer")
