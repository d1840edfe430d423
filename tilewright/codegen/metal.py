"""Lowered IRModule → Metal Shading Language: one ``kernel void`` function per device kernel.

Buffers are ``device`` pointers bound with ``[[buffer(i)]]``, scalars ``constant`` references,
shared memory is ``threadgroup`` storage, thread indices come from the ``uint3`` arguments
``blockIdx [[threadgroup_position_in_grid]]`` and ``threadIdx
[[thread_position_in_threadgroup]]``, and contiguous vector accesses go through packed
vector types (``packed_float4``), which need no more than the element's alignment.
"""

from __future__ import annotations

from typing import ClassVar, cast

from tilewright.codegen.c_like import Emitter, Expr
from tilewright.codegen.device_printer import DevicePrinter, DeviceSource, print_kernels
from tilewright.ir import Buffer, Call, IRModule, PrimFunc, Var, intrinsics
from tilewright.ir.intrinsics import Intrinsic

_TYPES = {
    "bool": "bool",
    "int8": "char",
    "int16": "short",
    "int32": "int",
    "int64": "long",
    "uint8": "uchar",
    "uint16": "ushort",
    "uint32": "uint",
    "uint64": "ulong",
    "float16": "half",
    "bfloat16": "bfloat",
    "float32": "float",
    "handle": "void*",
}
_UNARY = (
    "exp", "exp2", "exp10", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan",
    "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "floor", "ceil",
    "trunc", "fabs", "isnan", "isinf", "isfinite",
)  # fmt: skip
_BINARY = ("pow", "atan2", "fmod", "copysign")


class MetalPrinter(DevicePrinter):
    """The Metal Shading Language printer."""

    target_name = "metal"
    restrict = ""
    helper_qualifier = "inline"
    reserved_words: ClassVar[frozenset[str]] = frozenset(
        ["kernel", "device", "threadgroup", "constant", "thread", "using", "namespace", "metal"]
    )
    value_types: ClassVar[dict[str, str]] = _TYPES
    math_templates: ClassVar[dict[str, tuple[str, str]]] = {
        **{name: (f"{name}({{0}})", f"{name}({{0}})") for name in _UNARY},
        **{name: (f"{name}({{0}}, {{1}})", f"{name}({{0}}, {{1}})") for name in _BINARY},
        "abs": ("fabs({0})", "fabs({0})"),
        "round": ("rint({0})", "rint({0})"),
        "nearbyint": ("rint({0})", "rint({0})"),
        "sigmoid": ("(1.0f / (1.0f + exp(-({0}))))", "(1.0f / (1.0f + exp(-({0}))))"),
    }
    thread_index: ClassVar[dict[str, str]] = {
        f"{kind}.{axis}": f"{kind}.{axis}" for kind in ("blockIdx", "threadIdx") for axis in "xyz"
    }
    barrier = "threadgroup_barrier(mem_flags::mem_threadgroup)"
    scope_qualifiers: ClassVar[dict[str, str]] = {
        "shared": "threadgroup",
        "shared.dyn": "threadgroup",
        "local": "thread",
    }
    vector_types: ClassVar[dict[tuple[str, int], str]] = {
        (dt, lanes): f"{_TYPES[dt]}{lanes}"
        for dt in ("float32", "int32", "uint32", "float16", "int8", "uint8", "int16")
        for lanes in (2, 4)
    }

    def __init__(self) -> None:
        super().__init__()
        self.address_spaces: dict[Var, str] = {}

    def emit_shuffle_xor(self, e: Call) -> Expr:
        # A SIMD-group spans the warp: every lane takes part, so the mask and width (a power
        # of two above every lane_mask used) need no spelling.
        value, lane_mask = self.expr_text(e.args[1]), self.expr_text(e.args[2])
        return Expr(f"simd_shuffle_xor({value}, (ushort){lane_mask})")

    emitters: ClassVar[dict[Intrinsic, Emitter]] = {
        **DevicePrinter.emitters,
        intrinsics.WARP_SHUFFLE_XOR: lambda p, e: cast(MetalPrinter, p).emit_shuffle_xor(e),
    }

    def declare_array(self, scope: str, ctype: str, name: str, count: int, buf: Buffer) -> str:
        self.address_spaces[buf.data] = self.scope_qualifiers[scope]
        return super().declare_array(scope, ctype, name, count, buf)

    def vector_load(self, pointer: str, vtype: str, data: Var, lanes: int) -> str:
        space = self.address_spaces.get(data, "device")
        return f"{vtype}(*({space} packed_{vtype}*)({pointer}))"

    def vector_store(self, pointer: str, value: str, vtype: str, data: Var, lanes: int) -> str:
        space = self.address_spaces.get(data, "device")
        return f"*({space} packed_{vtype}*)({pointer}) = {value};"

    def broadcast(self, scalar: str, vtype: str, lanes: int) -> str:
        return f"{vtype}({scalar})"

    def kernel_head(
        self, name: str, func: PrimFunc, params: list[tuple[Var, str, str | None]]
    ) -> str:
        texts = []
        for slot, (var, cname, ctype) in enumerate(params):
            if ctype is None:
                texts.append(f"constant {self.value_type(var.dtype)}& {cname} [[buffer({slot})]]")
            else:
                texts.append(f"device {ctype}* {cname} [[buffer({slot})]]")
        texts.append("uint3 blockIdx [[threadgroup_position_in_grid]]")
        texts.append("uint3 threadIdx [[thread_position_in_threadgroup]]")
        joined = ",\n    ".join(texts)
        return f"kernel void {name}(\n    {joined}\n) {{"


def generate_metal(mod: IRModule) -> DeviceSource:
    """Metal Shading Language for the device kernels of a lowered module.

    Arguments:
        mod: a module lowered for metal: device PrimFuncs carry ``tir.is_kernel``.

    Example::

        >>> print(generate_metal(lowered).text)
        kernel void main_kernel(
            device float* A [[buffer(0)]], ...
    """
    body, kernels, _ = print_kernels(mod, "metal", MetalPrinter)
    lines = [
        "// Generated by tilewright for the metal target.",
        "#include <metal_stdlib>",
        "using namespace metal;",
    ]
    return DeviceSource("\n".join(lines) + "\n\n" + body, "metal", kernels)


def codegen_metal(mod: IRModule) -> str:
    """The Metal source of a lowered module. Example: ``print(codegen_metal(lowered))``."""
    return generate_metal(mod).text
