"""The runtime: devices, arrays, and modules of compiled kernels (C through ctypes for now)."""

from __future__ import annotations

from tilewright.codegen.c import generate_c
from tilewright.ir import IRModule
from tilewright.runtime.arguments import check_arguments
from tilewright.runtime.c_compiler import CompileError, compile_c
from tilewright.runtime.device import DEVICE_TYPES, Device, cpu, cuda, device, metal, opencl
from tilewright.runtime.module import CModule, Module, PackedFunc, SourceModule, load_module
from tilewright.runtime.ndarray import NDArray, array, empty, from_dlpack
from tilewright.runtime.time_evaluator import ProfileResult


def build_c_module(mod: IRModule, name: str = "main", target: str = "c") -> CModule:
    """Generate C for a lowered module, compile it (cached) and load it.

    Arguments:
        mod: the output of ``tilewright.transform.pipeline.lower_module(mod, "c")``.
        name: a label for compile errors and the cached source file.
        target: the target's spelling, recorded in exported libraries.

    Example::

        >>> rt_mod = build_c_module(lowered)
        >>> rt_mod["main"](a, b, c)
    """
    source = generate_c(mod)
    library = compile_c(source.text, name)
    return CModule(library, source.text, source.signatures, target)


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
