"""The OpenCL runtime through pyopencl: one context on the first platform, device buffers,
program builds and kernel launches (PoCL runs them on the CPU in the test suite)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from tilewright.artifact import Artifact, Launch
from tilewright.ir import DataType
from tilewright.runtime.device import Device
from tilewright.runtime.gpu_module import DeviceModule
from tilewright.runtime.module import Runner
from tilewright.runtime.ndarray import NDArray

# Each numpy scalar type converts the argument value itself (or refuses it).
_SCALARS: dict[str, Callable[[Any], np.generic]] = {
    "bool": np.int8,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
}


class _Queue(Protocol):
    """A pyopencl ``CommandQueue``, as far as used here (pyopencl ships no stubs)."""

    def finish(self) -> None: ...


class _Kernel(Protocol):
    """A pyopencl ``Kernel``, as far as used here."""

    def set_args(self, *args: object) -> None: ...


class OpenCLError(RuntimeError):
    """No OpenCL platform, a failed program build (with its log), or a failed launch."""


@functools.cache
def _runtime() -> tuple[Any, Any, list[Any]]:
    # Any: pyopencl's module, platform and devices are used dynamically (it is optional).
    try:
        import pyopencl as cl
    except ImportError as err:
        raise OpenCLError(
            "no OpenCL runtime: pyopencl is not installed (pip install 'tilewright[opencl]')"
        ) from err
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        platforms = []
    if not platforms:
        raise OpenCLError(
            "no OpenCL platform found: install an ICD such as PoCL "
            "(apt-get install pocl-opencl-icd ocl-icd-libopencl1)"
        )
    devices = platforms[0].get_devices()
    if not devices:
        raise OpenCLError(f"OpenCL platform {platforms[0].name!r} has no devices")
    return cl, platforms[0], devices


def available() -> bool:
    """Whether an OpenCL platform with a device is present. Example: ``available()``."""
    try:
        _runtime()
    except OpenCLError:
        return False
    return True


@functools.cache
def context(index: int = 0) -> tuple[object, _Queue]:
    """The (context, profiling command queue) of device ``index`` of the first platform."""
    cl, platform, devices = _runtime()
    if index >= len(devices):
        raise OpenCLError(
            f"no OpenCL device {index}: platform {platform.name!r} has {len(devices)}"
        )
    ctx = cl.Context([devices[index]])
    props = cl.command_queue_properties.PROFILING_ENABLE
    return ctx, cl.CommandQueue(ctx, properties=props)


def device_count() -> int:
    """How many devices the first OpenCL platform has (0 without a platform)."""
    return len(_runtime()[2]) if available() else 0


def device_name(index: int = 0) -> str:
    """The name of OpenCL device ``index``."""
    return str(_runtime()[2][index].name)


class CLBuffer:
    """A buffer of ``nbytes`` on OpenCL device ``index``.

    Example::

        >>> buf = CLBuffer(64, 0)
        >>> buf.copy_from_host(np.zeros(16, "float32"))
    """

    def __init__(self, nbytes: int, index: int = 0) -> None:
        cl = _runtime()[0]
        self.index = index
        self.nbytes = int(nbytes)
        ctx, self.queue = context(index)
        self.buffer = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(self.nbytes, 1))

    def copy_from_host(self, host: np.ndarray) -> None:
        cl = _runtime()[0]
        data = np.ascontiguousarray(host)
        if data.nbytes != self.nbytes:
            raise ValueError(f"copy of {data.nbytes} bytes into a {self.nbytes}-byte buffer")
        if self.nbytes:
            cl.enqueue_copy(self.queue, self.buffer, data, is_blocking=True)

    def copy_to_host(self, host: np.ndarray) -> None:
        cl = _runtime()[0]
        if host.nbytes != self.nbytes or not host.flags.c_contiguous:
            raise ValueError("copy_to_host needs a C-contiguous array of the same byte size")
        if self.nbytes:
            cl.enqueue_copy(self.queue, host, self.buffer, is_blocking=True)


def to_device(host: np.ndarray, index: int = 0) -> CLBuffer:
    """A new OpenCL buffer holding a copy of ``host``. Example: ``to_device(np.ones(4))``."""
    out = CLBuffer(host.nbytes, index)
    out.copy_from_host(host)
    return out


class CLProgram:
    """OpenCL C built for device ``index``; ``launch`` runs one of its kernels."""

    def __init__(self, source: str, kernels: Sequence[str], index: int = 0) -> None:
        cl = _runtime()[0]
        self.index = index
        ctx, self.queue = context(index)
        try:
            self.program = cl.Program(ctx, source).build()
        except cl.RuntimeError as err:
            raise OpenCLError(
                f"OpenCL build of kernel {', '.join(kernels)} failed:\n{err}\n--- source ---\n"
                + "\n".join(f"{i:4d}  {line}" for i, line in enumerate(source.splitlines(), 1))
            ) from None
        self._kernels: dict[str, _Kernel] = {}

    def kernel(self, name: str) -> _Kernel:
        if name not in self._kernels:
            self._kernels[name] = getattr(self.program, name)
        return self._kernels[name]

    def launch(
        self,
        name: str,
        grid: Sequence[int],
        block: Sequence[int],
        args: Sequence[object],
        dtypes: Sequence[str | None],
    ) -> object | None:
        """Enqueue kernel ``name``; ``dtypes[i]`` is None for a buffer, else the scalar dtype."""
        cl = _runtime()[0]
        if min(*grid, *block) <= 0:
            return None
        values = [
            (a.buffer if isinstance(a, CLBuffer) else a) if dt is None else _scalar(a, dt)
            for a, dt in zip(args, dtypes)
        ]
        kernel = self.kernel(name)
        kernel.set_args(*values)
        size = tuple(g * b for g, b in zip(grid, block))
        try:
            return cl.enqueue_nd_range_kernel(self.queue, kernel, size, tuple(block))
        except cl.Error as err:
            raise OpenCLError(f"launch of OpenCL kernel {name} failed: {err}") from None


def _scalar(value: object, dtype: str) -> object:
    kind = _SCALARS.get(str(DataType.parse(dtype)))
    if kind is None:
        raise OpenCLError(f"OpenCL kernels take no scalar of dtype {dtype}")
    return kind(value)


def synchronize(index: int = 0) -> None:
    """Wait for the work queued on OpenCL device ``index``."""
    context(index)[1].finish()


def measure(run: Callable[[], None], count: int, index: int = 0) -> float:
    """Seconds for ``count`` calls of ``run`` (wall clock between two queue drains)."""
    queue = context(index)[1]
    queue.finish()
    start = time.perf_counter()
    for _ in range(count):
        run()
    queue.finish()
    return time.perf_counter() - start


class OpenCLModule(DeviceModule):
    """Device code for OpenCL: ``get_source()`` is the OpenCL C; built on first use.

    Example::

        >>> print(rt_mod.imported_modules[0].get_source())
    """

    type_key = "opencl"

    def __init__(self, artifact: Artifact, dev: Device) -> None:
        super().__init__(artifact, dev)
        self._program: CLProgram | None = None

    def prepare(self) -> None:
        """Raise ``OpenCLError`` unless an OpenCL device can run these kernels."""
        if self._program is None:
            self._program = CLProgram(self._source, list(self.kernels), self.device.device_id)

    def runner(self, launches: Sequence[Launch], values: Sequence[object]) -> Callable[[], None]:
        """A function enqueueing ``launches`` on the device's queue."""
        self.prepare()
        program = self._program
        assert program is not None
        for item in launches:
            if len(self.kernels[item.kernel].params) != len(item.args):
                raise OpenCLError(
                    f"kernel {item.kernel} takes {len(self.kernels[item.kernel].params)} "
                    f"arguments; the host passes {len(item.args)}"
                )
        for value in values:
            if isinstance(value, NDArray) and not isinstance(value.buffer, CLBuffer):
                raise OpenCLError(f"an argument on {value.device} is not an OpenCL buffer")

        def run() -> None:
            for item in launches:
                program.launch(
                    item.kernel,
                    item.grid,
                    item.block,
                    [a.buffer if isinstance(a, NDArray) else a for a in item.args],
                    list(self.kernels[item.kernel].params),
                )

        return Runner(run, values)

    def measure(self, run: Callable[[], None], count: int) -> float:
        return measure(run, count, self.device.device_id)
