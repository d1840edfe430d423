"""The runtime: devices, arrays, and modules of compiled kernels (C through ctypes; CUDA and
OpenCL device modules under a host launcher, in ``gpu_module``)."""

from tilewright.runtime.arguments import check_arguments
from tilewright.runtime.c_compiler import CompileError, compile_c
from tilewright.runtime.device import DEVICE_TYPES, Device, cpu, cuda, device, metal, opencl
from tilewright.runtime.gpu_module import GPUModule, build_gpu_module
from tilewright.runtime.module import (
    CModule,
    Module,
    PackedFunc,
    SourceModule,
    build_c_module,
    load_module,
)
from tilewright.runtime.ndarray import NDArray, array, empty, from_dlpack
from tilewright.runtime.time_evaluator import ProfileResult

__all__ = [
    "DEVICE_TYPES",
    "CModule",
    "CompileError",
    "Device",
    "GPUModule",
    "Module",
    "NDArray",
    "PackedFunc",
    "ProfileResult",
    "SourceModule",
    "array",
    "build_c_module",
    "build_gpu_module",
    "check_arguments",
    "compile_c",
    "cpu",
    "cuda",
    "device",
    "empty",
    "from_dlpack",
    "load_module",
    "metal",
    "opencl",
]
