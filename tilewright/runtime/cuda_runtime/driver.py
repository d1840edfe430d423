"""The CUDA driver API through cuda-bindings: device discovery, contexts, modules, launches,
events. Every call is checked; a failure raises ``CUDAError`` naming the call and the kernel.

tilewright uses each device's primary context, the one torch and cupy use, so pointers and
streams from those libraries are valid in tilewright's launches and the other way round.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

_NO_DEVICE = "no CUDA device"


class _Result(Protocol):
    CUDA_SUCCESS: object


class _DeviceAttribute(Protocol):
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: object
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: object


class _FunctionAttribute(Protocol):
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: object


class _Driver(Protocol):
    """What this module names of cuda-bindings' ``driver`` (the package ships no stubs);
    every other driver function is reached through ``call`` by name."""

    CUresult: _Result
    CUdevice_attribute: _DeviceAttribute
    CUfunction_attribute: _FunctionAttribute

    def CUstream(self, handle: int) -> object: ...
    def cuInit(self, flags: int) -> tuple[object]: ...
    def cuGetErrorName(self, result: object) -> tuple[object, bytes]: ...
    def cuGetErrorString(self, result: object) -> tuple[object, bytes]: ...


class CUDAError(RuntimeError):
    """A CUDA driver call failed, or no CUDA device is available."""


@functools.cache
def _driver() -> _Driver:
    try:
        try:
            from cuda.bindings import driver
        except ImportError:  # cuda-python before 12.6 named the module cuda.cuda
            from cuda import cuda as driver
    except ImportError as err:
        raise CUDAError(
            f"{_NO_DEVICE}: the cuda-bindings package is not installed "
            "(pip install 'tilewright[cuda]')"
        ) from err
    try:
        (result,) = driver.cuInit(0)
    except Exception as err:  # the driver library itself is missing on machines without a GPU
        raise CUDAError(f"{_NO_DEVICE}: the NVIDIA driver could not be loaded ({err})") from None
    if result != driver.CUresult.CUDA_SUCCESS:
        raise CUDAError(f"{_NO_DEVICE}: cuInit failed with {_error_name(driver, result)}")
    return driver


def _error_name(driver: _Driver, result: object) -> str:
    try:
        _, name = driver.cuGetErrorName(result)
        _, text = driver.cuGetErrorString(result)
        return f"{name.decode()} ({text.decode()})"
    except Exception:  # an unknown code: print it as it is
        return str(result)


def enum(kind: str, member: str) -> object:
    """The driver enum value ``kind.member`` (``enum("CUtensorMapSwizzle",
    "CU_TENSOR_MAP_SWIZZLE_128B")``)."""
    return getattr(getattr(_driver(), kind), member)


def scalar(kind: str, value: int) -> object:
    """``value`` as the binding's integer type ``kind`` (``scalar("cuuint32_t", 64)``), where
    a driver function's array argument refuses plain ints."""
    return getattr(_driver(), kind)(value)


def call(name: str, *args: object, kernel: str = "") -> tuple:
    """Call driver function ``name`` and return its outputs; raise ``CUDAError`` on failure.

    Example::

        >>> (count,) = call("cuDeviceGetCount")
    """
    driver = _driver()
    out = getattr(driver, name)(*args)
    result, rest = out[0], tuple(out[1:])
    if result != driver.CUresult.CUDA_SUCCESS:
        where = f" for kernel {kernel}" if kernel else ""
        raise CUDAError(f"{name}{where} failed: {_error_name(driver, result)}")
    return rest


def device_count() -> int:
    """How many CUDA devices this process sees (0 without a driver). Example: ``device_count()``."""
    try:
        (count,) = call("cuDeviceGetCount")
    except CUDAError:
        return 0
    return int(count)


def require_device(index: int = 0) -> None:
    """Raise ``CUDAError`` ("no CUDA device ...") unless device ``index`` exists."""
    count = device_count()
    if index >= count:
        have = "no CUDA device is available" if count == 0 else f"only {count} CUDA devices"
        raise CUDAError(
            f"{_NO_DEVICE} {index}: {have} on this machine; the module was built, but its "
            "kernels can only run where a GPU is (the source is in imported_modules[0])"
        )


@functools.cache
def context(index: int = 0) -> object:
    """Device ``index``'s primary context, retained once; ``activate`` makes it current."""
    require_device(index)
    (dev,) = call("cuDeviceGet", index)
    (ctx,) = call("cuDevicePrimaryCtxRetain", dev)
    return ctx


def activate(index: int = 0) -> None:
    """Make device ``index``'s primary context current on this thread."""
    call("cuCtxSetCurrent", context(index))


def device_arch(index: int = 0) -> str | None:
    """``"sm_90"`` for device ``index``, or None when there is no such device."""
    if device_count() <= index:
        return None
    driver = _driver()
    (dev,) = call("cuDeviceGet", index)
    attr = driver.CUdevice_attribute
    (major,) = call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    (minor,) = call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    return f"sm_{major}{minor}"


def synchronize(index: int = 0) -> None:
    """Wait for all work on device ``index``."""
    activate(index)
    call("cuCtxSynchronize")


class LoadedModule:
    """A cubin loaded into device ``index``'s context; ``function(name)`` finds kernels."""

    def __init__(self, cubin: bytes, index: int = 0, label: str = "") -> None:
        activate(index)
        self.index = index
        (self.handle,) = call("cuModuleLoadData", cubin, kernel=label)
        self._functions: dict[str, object] = {}
        self._dynamic: dict[str, int] = {}

    def function(self, name: str, dyn_shared_bytes: int = 0) -> object:
        """The kernel ``name``, allowed ``dyn_shared_bytes`` of dynamic shared memory."""
        if name not in self._functions:
            (self._functions[name],) = call(
                "cuModuleGetFunction", self.handle, name.encode(), kernel=name
            )
            self._dynamic[name] = 0
        if dyn_shared_bytes > max(self._dynamic[name], 48 * 1024):
            attr = _driver().CUfunction_attribute
            call(
                "cuFuncSetAttribute",
                self._functions[name],
                attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                dyn_shared_bytes,
                kernel=name,
            )
            self._dynamic[name] = dyn_shared_bytes
        return self._functions[name]


class KernelArgs:
    """Kernel arguments packed as the ``void**`` array cuLaunchKernel reads (kept alive here):
    scalars and pointers, and byte arrays for parameters passed by value (tensor maps)."""

    def __init__(self, values: Sequence[ctypes._SimpleCData | ctypes.Array]) -> None:
        self.values = list(values)
        self.pointers = (ctypes.c_void_p * max(1, len(self.values)))(
            *[ctypes.addressof(v) for v in self.values]
        )

    @property
    def address(self) -> int:
        return ctypes.addressof(self.pointers)


def launch(
    function: object,
    name: str,
    grid: Sequence[int],
    block: Sequence[int],
    dyn_shared_bytes: int,
    stream: int,
    args: KernelArgs,
) -> None:
    """Launch ``function`` (kernel ``name``) on ``stream`` (0: the legacy default stream)."""
    if min(*grid, *block) <= 0:
        return  # an empty grid runs nothing
    driver = _driver()
    call(
        "cuLaunchKernel",
        function,
        *grid,
        *block,
        dyn_shared_bytes,
        driver.CUstream(stream),
        args.address,
        0,
        kernel=name,
    )


@functools.cache
def _libcuda() -> ctypes.CDLL | None:
    """The driver library itself, for the two calls of a repeated launch (``RawLauncher``);
    None where it cannot be opened by name (then launches go through cuda-bindings)."""
    _driver()  # the same library, initialised; raises CUDAError without a device
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
        lib.cuCtxSetCurrent.restype = ctypes.c_int
        lib.cuLaunchKernel.argtypes = (
            [ctypes.c_void_p]
            + [ctypes.c_uint] * 7
            + [
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_void_p,
            ]
        )
        lib.cuLaunchKernel.restype = ctypes.c_int
        return lib
    return None


class RawLauncher:
    """``cuCtxSetCurrent`` + ``cuLaunchKernel`` called through ctypes on handles resolved once:
    the hot path of a repeated call (``LaunchCache``), about a microsecond per launch.

    Example::

        >>> raw = RawLauncher.create(0)
        >>> raw.launch(function, "main_kernel", (8, 1, 1), (128, 1, 1), 0, stream, args)
    """

    def __init__(self, lib: ctypes.CDLL, index: int) -> None:
        self.lib = lib
        self.context = int(context(index))  # type: ignore[call-overload]

    @staticmethod
    def create(index: int) -> RawLauncher | None:
        """A launcher for device ``index``, or None where the driver library cannot be opened."""
        lib = _libcuda()
        return RawLauncher(lib, index) if lib is not None else None

    def activate(self) -> None:
        self._check(self.lib.cuCtxSetCurrent(self.context), "cuCtxSetCurrent", "")

    def launch(
        self,
        function: int,
        name: str,
        grid: Sequence[int],
        block: Sequence[int],
        dyn_shared_bytes: int,
        stream: int,
        args: KernelArgs,
    ) -> None:
        """Launch kernel handle ``function`` (``name`` for errors) on ``stream``."""
        result = self.lib.cuLaunchKernel(
            function, *grid, *block, dyn_shared_bytes, stream, args.address, None
        )
        self._check(result, "cuLaunchKernel", name)

    @staticmethod
    def _check(result: int, call_name: str, kernel: str) -> None:
        if result:
            driver: Any = _driver()
            where = f" for kernel {kernel}" if kernel else ""
            error = _error_name(driver, driver.CUresult(result))
            raise CUDAError(f"{call_name}{where} failed: {error}")


class EventTimer:
    """Times work queued on a stream with a pair of CUDA events (milliseconds → seconds)."""

    def __init__(self, stream: int = 0, label: str = "") -> None:
        driver = _driver()
        (self.start,) = call("cuEventCreate", 0, kernel=label)  # 0: CU_EVENT_DEFAULT
        (self.end,) = call("cuEventCreate", 0, kernel=label)
        self.stream = driver.CUstream(stream)
        self.label = label

    def measure(self, run: Callable[[], None], count: int) -> float:
        """Seconds for ``count`` calls of ``run``, measured on the device."""
        call("cuEventRecord", self.start, self.stream, kernel=self.label)
        for _ in range(count):
            run()
        call("cuEventRecord", self.end, self.stream, kernel=self.label)
        call("cuEventSynchronize", self.end, kernel=self.label)
        (ms,) = call("cuEventElapsedTime", self.start, self.end, kernel=self.label)
        return float(ms) / 1e3

    def close(self) -> None:
        for event in (self.start, self.end):
            call("cuEventDestroy", event)
