"""The runtime: devices, arrays, and modules of compiled kernels (C through ctypes for now)."""

from tilewright.runtime.arguments import check_arguments
from tilewright.runtime.c_compiler import CompileError, compile_c
from tilewright.runtime.device import DEVICE_TYPES, Device, cpu, cuda, device, metal, opencl
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
    "Module",
    "NDArray",
    "PackedFunc",
    "ProfileResult",
    "SourceModule",
    "array",
    "build_c_module",
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
