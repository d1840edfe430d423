"""The runtime: devices, arrays, and modules of compiled kernels loaded from artifacts (C
through ctypes; CUDA and OpenCL device modules under host launch plans, in ``gpu_module``).
It reads ``tilewright.artifact`` data and never generates code."""

from tilewright.runtime.arguments import check_arguments
from tilewright.runtime.bounds import BoundsError
from tilewright.runtime.c_compiler import CompileError, compile_c
from tilewright.runtime.device import (
    DEVICE_KINDS,
    DEVICE_TYPES,
    Device,
    DeviceKind,
    cpu,
    cuda,
    device,
    metal,
    opencl,
)
from tilewright.runtime.gpu_module import DeviceModule, DeviceSourceModule, GPUModule
from tilewright.runtime.loader import LOADERS, Loader, load, load_module
from tilewright.runtime.module import CModule, Module, PackedFunc, SourceModule
from tilewright.runtime.ndarray import NDArray, array, empty, from_dlpack
from tilewright.runtime.time_evaluator import ProfileResult

__all__ = [
    "BoundsError",
    "DEVICE_KINDS",
    "DEVICE_TYPES",
    "LOADERS",
    "CModule",
    "CompileError",
    "Device",
    "DeviceKind",
    "DeviceModule",
    "DeviceSourceModule",
    "GPUModule",
    "Loader",
    "Module",
    "NDArray",
    "PackedFunc",
    "ProfileResult",
    "SourceModule",
    "array",
    "check_arguments",
    "compile_c",
    "cpu",
    "cuda",
    "device",
    "empty",
    "from_dlpack",
    "load",
    "load_module",
    "metal",
    "opencl",
]
