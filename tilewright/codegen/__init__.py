"""Code generation: lowered IR → source text for C, CUDA, OpenCL and Metal (one shared printer).

GPU kernels are device PrimFuncs (``tir.is_kernel``) whose thread-bound loops bind a variable
to the thread index; the barrier is ``intrinsics.SYNC_THREADS`` (TVM's ``tvm_storage_sync``
is accepted too).
Each printer spells an intrinsic of ``tilewright.ir.intrinsics`` through its ``emitters``
(expressions) and ``statement_emitters`` (statements) tables.
"""

from tilewright.codegen.c import CPrinter, CSource, c_symbol, codegen_c, generate_c
from tilewright.codegen.c_like import CLikePrinter, CodegenError
from tilewright.codegen.cuda import CUDAPrinter, codegen_cuda, generate_cuda
from tilewright.codegen.device_printer import DevicePrinter, DeviceSource
from tilewright.codegen.metal import MetalPrinter, codegen_metal, generate_metal
from tilewright.codegen.opencl import OpenCLPrinter, codegen_opencl, generate_opencl
from tilewright.codegen.signature import FuncSignature, ParamSpec, SignatureError, func_signature

__all__ = [
    "CLikePrinter",
    "CPrinter",
    "CSource",
    "CUDAPrinter",
    "CodegenError",
    "DevicePrinter",
    "DeviceSource",
    "MetalPrinter",
    "OpenCLPrinter",
    "codegen_cuda",
    "codegen_metal",
    "codegen_opencl",
    "generate_cuda",
    "generate_metal",
    "generate_opencl",
    "FuncSignature",
    "ParamSpec",
    "SignatureError",
    "c_symbol",
    "codegen_c",
    "func_signature",
    "generate_c",
]
