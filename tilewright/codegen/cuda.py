"""Lowered IRModule → CUDA C: one ``extern "C" __global__`` function per device kernel.

The output reads like hand-written CUDA: ``__launch_bounds__`` from the block size,
``__restrict__`` pointers, ``__shared__`` arrays, ``__syncthreads()``, ``float4`` vector
accesses, and half / bfloat16 through ``cuda_fp16.h`` / ``cuda_bf16.h``. Dynamic shared
memory (scope ``shared.dyn``) is one ``extern __shared__`` byte array; each such allocation
takes the next 16-byte aligned offset in it.
"""

from __future__ import annotations

import math
from typing import ClassVar, cast

from tilewright.arith import Analyzer, simplify
from tilewright.codegen.c_like import (
    PREC_ADD,
    PREC_UNARY,
    CodegenError,
    Emitter,
    Expr,
    StatementEmitter,
)
from tilewright.codegen.cuda_hopper import (
    HOPPER_EMITTERS,
    HOPPER_STATEMENT_EMITTERS,
    TENSOR_MAP_STRUCT,
    TENSOR_MAP_TYPE,
    HopperEmitters,
)
from tilewright.codegen.device_printer import (
    DevicePrinter,
    DeviceSource,
    print_kernels,
    thread_extents,
)
from tilewright.ir import (
    Buffer,
    BufferLoad,
    Call,
    Cast,
    DataType,
    FloatImm,
    IntImm,
    IRModule,
    Let,
    PrimExpr,
    PrimFunc,
    StringImm,
    Var,
    intrinsics,
    op,
    substitute,
)
from tilewright.ir.dtype import int32
from tilewright.ir.intrinsics import Intrinsic

# float32 pairs to 16-bit pairs, rounding to nearest: an epilogue's two-element stores.
_PAIR_CASTS = {"float16": "__floats2half2_rn", "bfloat16": "__floats2bfloat162_rn"}

_INT_TYPES = {
    "bool": "bool",
    "int8": "signed char",
    "int16": "short",
    "int32": "int",
    "int64": "long long",
    "uint8": "unsigned char",
    "uint16": "unsigned short",
    "uint32": "unsigned int",
    "uint64": "unsigned long long",
}
_COMPONENTS = "xyzw"
# Vectors of half values without a CUDA vector type: copied as raw bits, never computed on.
_RAW_VECTORS = {("float16", 4), ("float16", 8), ("bfloat16", 4), ("bfloat16", 8)}


# tw.cuda.copy_bytes: bytes → the type one aligned load/store of that size moves.
_COPY_TYPES = {16: "uint4", 8: "uint2", 4: "unsigned", 2: "unsigned short", 1: "unsigned char"}


class CUDAPrinter(HopperEmitters, DevicePrinter):
    """The CUDA C printer (the Hopper intrinsics' spellings from ``cuda_hopper``)."""

    target_name = "cuda"
    restrict = "__restrict__"
    tensor_map_params = True
    helper_qualifier = "static __device__ __forceinline__"
    reserved_words: ClassVar[frozenset[str]] = frozenset(
        ["threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"]
    )
    value_types: ClassVar[dict[str, str]] = {
        **_INT_TYPES,
        "float16": "half",
        "bfloat16": "nv_bfloat16",
        "float32": "float",
        "float64": "double",
        "handle": "void*",
    }
    thread_index: ClassVar[dict[str, str]] = {
        f"{kind}.{axis}": f"{kind}.{axis}" for kind in ("blockIdx", "threadIdx") for axis in "xyz"
    }
    barrier = "__syncthreads()"
    scope_qualifiers: ClassVar[dict[str, str]] = {
        "shared": "__shared__",
        "shared.dyn": "",
        "local": "",
    }
    vector_types: ClassVar[dict[tuple[str, int], str]] = {
        ("float32", 2): "float2",
        ("float32", 4): "float4",
        ("int32", 2): "int2",
        ("int32", 4): "int4",
        ("uint32", 2): "uint2",
        ("uint32", 4): "uint4",
        ("float16", 2): "half2",
        ("float16", 4): "uint2",  # copied as raw bits: CUDA has no half4
        ("float16", 8): "uint4",
        ("bfloat16", 2): "nv_bfloat162",
        ("bfloat16", 4): "uint2",
        ("bfloat16", 8): "uint4",
    }

    def __init__(self) -> None:
        super().__init__()
        self.dyn_offset = 0

    def expr_Var(self, e: Var) -> Expr:
        if e in self.tensor_maps:  # a tensor map parameter: the kernel uses its address
            return Expr(f"&{self.name_of(e)}", PREC_UNARY)
        return super().expr_Var(e)

    def expr_FloatImm(self, e: FloatImm) -> Expr:
        # CUDA's device code has no INFINITY / NAN macros without math headers.
        if math.isinf(e.value) or math.isnan(e.value):
            bits = "0x7fc00000" if math.isnan(e.value) else "0x7f800000"
            text = f"__int_as_float({bits})"
            if math.isinf(e.value) and e.value < 0:
                text = "-" + text
            if e.dtype.bits == 64:
                text = f"(double){text}"
            return Expr(text)
        return super().expr_FloatImm(e)

    def call_intrinsic(self, name: str, dtype: DataType, args: tuple) -> Expr:
        if not (dtype.is_float and dtype.bits == 16):
            return super().call_intrinsic(name, dtype, args)
        # CUDA's math library works in float: convert in, and the result back to half.
        single = self.math_templates[name][0]
        texts = [f"(float){self.operand(a, PREC_UNARY)}" for a in args]
        return Expr(f"(({self.value_type(dtype)}){single.format(*texts)})")

    def expr_Let(self, e: Let) -> Expr:
        if e.var.dtype.lanes != 1:
            raise self.vector_error(e)
        # NVRTC has no GNU statement expressions: an immediately called lambda binds the value.
        value = self.expr_text(e.value)
        name = self.define(e.var)
        if self.is_nonneg(e.value):
            self.nonneg.add(e.var)
        ctype = self.value_type(e.var.dtype)
        body = self.expr_text(e.body)
        return Expr(f"[&]() {{ {ctype} {name} = {value}; return {body}; }}()")

    def emit_address_of(self, e: Call) -> Expr:
        if not isinstance(e.args[0], BufferLoad):
            raise CodegenError(f"{self.func_name}: {e.op} takes a buffer element, not {e.args[0]}")
        return Expr(f"&{self.expr_text(e.args[0])}", PREC_UNARY)

    def emit_copy_bytes(self, call: Call) -> None:
        dst, src, size = call.args
        if not isinstance(size, IntImm) or size.value not in _COPY_TYPES:
            raise CodegenError(
                f"{self.func_name}: {call.op} copies 1, 2, 4, 8 or 16 bytes, not {size}"
            )
        ctype = _COPY_TYPES[size.value]
        self.emit(f"*({ctype}*)({self.expr_text(dst)}) = *(const {ctype}*)({self.expr_text(src)});")

    def emit_cp_async(self, call: Call) -> None:
        dst, src, size = call.args[:3]
        if not isinstance(size, IntImm) or size.value not in (4, 8, 16):
            raise CodegenError(f"{self.func_name}: cp.async copies 4, 8 or 16 bytes, not {size}")
        # 16 bytes may bypass L1 (.cg); smaller copies go through it (.ca).
        cache = "cg" if size.value == 16 else "ca"
        copy = f"cp.async.{cache}.shared.global [%0], [%1], {size.value};"
        operands = (
            f'"r"((unsigned)__cvta_generic_to_shared({self.expr_text(dst)})), '
            f'"l"({self.expr_text(src)})'
        )
        if len(call.args) == 3:
            self.emit(f'asm volatile("{copy}\\n" :: {operands} : "memory");')
            return
        predicate, fill = call.args[3:5]
        # Under a predicate: a false one reads nothing from src, and with fill zeroes dst.
        zeros = {4: "st.shared.u32 [%0], 0;", 8: "st.shared.v2.u32 [%0], {0, 0};",
                 16: "st.shared.v4.u32 [%0], {0, 0, 0, 0};"}[size.value]  # fmt: skip
        parts = ["{ .reg .pred p;", "setp.ne.b32 p, %2, 0;", f"@p {copy}"]
        if isinstance(fill, IntImm) and fill.value:
            parts.append(f"@!p {zeros}")
        text = " ".join([*parts, "}"])
        self.emit(
            f'asm volatile("{text}\\n" :: {operands}, '
            f'"r"((int)({self.expr_text(predicate)})) : "memory");'
        )

    def emit_cp_async_wait(self, call: Call) -> None:
        (count,) = call.args
        if not isinstance(count, IntImm):
            raise CodegenError(f"{self.func_name}: cp.async.wait_group needs a constant count")
        self.emit(f'asm volatile("cp.async.wait_group {count.value};\\n" ::: "memory");')

    def emit_ldmatrix(self, call: Call) -> None:
        trans, num, _, local, local_offset, smem, smem_offset = call.args
        if not isinstance(num, IntImm) or num.value not in (1, 2, 4):
            raise CodegenError(f"{self.func_name}: ldmatrix loads 1, 2 or 4 matrices, not {num}")
        count = num.value
        shape = f"m8n8.x{count}{'.trans' if _flag(trans) else ''}"
        regs = ", ".join(f"%{i}" for i in range(count))
        dst = f"(unsigned*)({self.expr_text(local)} + {self.operand(local_offset, PREC_ADD)})"
        outs = ", ".join(f'"=r"(({dst})[{i}])' for i in range(count))
        src = f"{self.expr_text(smem)} + {self.operand(smem_offset, PREC_ADD)}"
        self.emit(
            f'asm volatile("ldmatrix.sync.aligned.{shape}.shared.b16 {{{regs}}}, [%{count}];\\n" '
            f': {outs} : "r"((unsigned)__cvta_generic_to_shared({src})));'
        )

    def emit_mma(self, call: Call) -> None:
        shape, a_layout, b_layout, a_type, b_type, c_type = (_text(a) for a in call.args[:6])
        a, a_off, b, b_off, c, c_off = call.args[6:12]
        if shape != "m16n8k16" or (a_type, b_type) not in (("fp16", "fp16"), ("bf16", "bf16")):
            raise CodegenError(
                f"{self.func_name}: mma.sync {shape} with {a_type} x {b_type} inputs is not "
                "supported (m16n8k16 with fp16 or bf16 inputs)"
            )
        if c_type not in ("fp32", "fp16") or (a_type == "bf16" and c_type != "fp32"):
            raise CodegenError(f"{self.func_name}: mma.sync cannot accumulate {a_type} in {c_type}")
        ptx = {"fp16": "f16", "bf16": "bf16", "fp32": "f32"}
        types = f"{ptx[c_type]}.{ptx[a_type]}.{ptx[b_type]}.{ptx[c_type]}"

        def regs(ptr: PrimExpr, offset: PrimExpr, ctype: str) -> str:
            return f"(({ctype}*)({self.expr_text(ptr)} + {self.operand(offset, PREC_ADD)}))"

        accumulators = 4 if c_type == "fp32" else 2
        cs = regs(c, c_off, "float" if c_type == "fp32" else "unsigned")
        kind = "f" if c_type == "fp32" else "r"
        outs = ", ".join(f'"+{kind}"({cs}[{i}])' for i in range(accumulators))
        a_regs, b_regs = regs(a, a_off, "unsigned"), regs(b, b_off, "unsigned")
        ins = ", ".join([*(f'"r"({a_regs}[{i}])' for i in range(4)),
                         *(f'"r"({b_regs}[{i}])' for i in range(2))])  # fmt: skip
        n = accumulators
        d = ", ".join(f"%{i}" for i in range(n))
        av = ", ".join(f"%{n + i}" for i in range(4))
        bv = ", ".join(f"%{n + 4 + i}" for i in range(2))
        self.emit(
            f'asm volatile("mma.sync.aligned.m16n8k16.{a_layout}.{b_layout}.{types} '
            f'{{{d}}}, {{{av}}}, {{{bv}}}, {{{d}}};\\n" : {outs} : {ins});'
        )

    def emit_mma_fill(self, call: Call) -> None:
        size, ptr, offset = call.args
        zero = self.expr_text(
            FloatImm(0.0, call.dtype) if call.dtype.is_float else IntImm(0, call.dtype)
        )
        base = f"{self.expr_text(ptr)}[{self.expr_text(offset)} + tw_i]"
        self.emit("#pragma unroll")
        self.emit(f"for (int tw_i = 0; tw_i < {self.expr_text(size)}; ++tw_i) {base} = {zero};")

    def emit_mma_store(self, call: Call) -> None:
        """A 16x16 accumulator tile to memory: each lane's 8 registers, as 4 pairs of
        adjacent columns (one 8- or 4-byte store a pair) when the destination, its row
        stride and the register offset are even, else one element at a time."""
        m, n, dst, src, offset, stride = call.args
        if _const(m) != 16 or _const(n) != 16:
            raise CodegenError(f"{self.func_name}: mma_store stores 16x16 fragments, not {m}x{n}")
        ctype = self.value_type(call.dtype)
        out = f"(({ctype}*)({self.expr_text(dst)}))"
        pair = PAIR_TYPES.get(ctype)
        if pair is not None and all(_even(x) for x in (_pointer_offset(dst), offset, stride)):
            row = "(8 * (tw_p % 2) + (int)threadIdx.x / 4)"
            col = "(8 * (tw_p / 2) + (int)threadIdx.x % 4 * 2)"
            value = (
                f"*({pair}*)({self.expr_text(src)} + {self.operand(offset, PREC_ADD)} + 2 * tw_p)"
            )
            self.emit("#pragma unroll")
            self.emit(
                "for (int tw_p = 0; tw_p < 4; ++tw_p) "
                f"*({pair}*)(&{out}[{row} * {self.operand(stride, PREC_ADD)} + {col}]) = {value};"
            )
            return
        row = "(8 * (tw_i % 4 / 2) + (int)threadIdx.x / 4)"
        col = "(8 * (tw_i / 4) + (int)threadIdx.x % 4 * 2 + tw_i % 2)"
        value = f"{self.expr_text(src)}[{self.expr_text(offset)} + tw_i]"
        self.emit("#pragma unroll")
        self.emit(
            "for (int tw_i = 0; tw_i < 8; ++tw_i) "
            f"{out}[{row} * {self.operand(stride, PREC_ADD)} + {col}] = {value};"
        )

    def emit_shuffle_xor(self, e: Call) -> Expr:
        mask, value, lane_mask, width = (self.expr_text(a) for a in e.args)
        return Expr(f"__shfl_xor_sync({mask}, {value}, {lane_mask}, {width})")

    emitters: ClassVar[dict[Intrinsic, Emitter]] = {
        **DevicePrinter.emitters,
        intrinsics.ADDRESS_OF: lambda p, e: cast(CUDAPrinter, p).emit_address_of(e),
        intrinsics.WARP_SHUFFLE_XOR: lambda p, e: cast(CUDAPrinter, p).emit_shuffle_xor(e),
        **HOPPER_EMITTERS,
    }
    statement_emitters: ClassVar[dict[Intrinsic, StatementEmitter]] = {
        **DevicePrinter.statement_emitters,
        intrinsics.COPY_BYTES: lambda p, e: cast(CUDAPrinter, p).emit_copy_bytes(e),
        intrinsics.CP_ASYNC: lambda p, e: cast(CUDAPrinter, p).emit_cp_async(e),
        intrinsics.CP_ASYNC_COMMIT: lambda p, e: p.emit(
            'asm volatile("cp.async.commit_group;\\n" ::: "memory");'
        ),
        intrinsics.CP_ASYNC_WAIT: lambda p, e: cast(CUDAPrinter, p).emit_cp_async_wait(e),
        intrinsics.PTX_LDMATRIX: lambda p, e: cast(CUDAPrinter, p).emit_ldmatrix(e),
        intrinsics.PTX_MMA: lambda p, e: cast(CUDAPrinter, p).emit_mma(e),
        intrinsics.MMA_FILL: lambda p, e: cast(CUDAPrinter, p).emit_mma_fill(e),
        intrinsics.MMA_STORE: lambda p, e: cast(CUDAPrinter, p).emit_mma_store(e),
        **HOPPER_STATEMENT_EMITTERS,
    }

    def vector_arithmetic(self, dtype: DataType, lanes: int) -> bool:
        return (str(dtype.element), lanes) not in _RAW_VECTORS

    def vector_operator_used(self, vtype: str, lanes: int, symbol: str) -> None:
        if vtype in ("half2", "nv_bfloat162"):
            return  # cuda_fp16.h / cuda_bf16.h define these operators
        # CUDA's vector types have no operators: define the one used, element-wise.
        fields = ", ".join(f"a.{c} {symbol} b.{c}" for c in _COMPONENTS[:lanes])
        self.helper(
            f"{vtype} operator{symbol}",
            f"static __device__ __forceinline__ {vtype} operator{symbol}({vtype} a, {vtype} b) "
            f"{{ return make_{vtype}({fields}); }}\n",
        )

    def vector_value(self, e: PrimExpr, lanes: int) -> str | None:
        if (
            isinstance(e, Cast)
            and lanes == 2
            and str(e.dtype.element) in _PAIR_CASTS
            and str(e.value.dtype.element) == "float32"
        ):
            # Each lane as a scalar (registers stay registers: no float2 load from a local
            # array), converted and packed by one intrinsic.
            lane = Var("lane", int32)
            per_lane = self.lanes(e.value, lane)
            analyzer = Analyzer()
            a, b = (
                self.expr_text(analyzer.simplify(substitute(per_lane, {lane: IntImm(k, int32)})))
                for k in range(2)
            )
            return f"{_PAIR_CASTS[str(e.dtype.element)]}({a}, {b})"
        return super().vector_value(e, lanes)

    def vector_load(self, pointer: str, vtype: str, data: Var, lanes: int) -> str:
        return f"*({vtype}*)({pointer})"

    def vector_store(self, pointer: str, value: str, vtype: str, data: Var, lanes: int) -> str:
        return f"*({vtype}*)({pointer}) = {value};"

    def broadcast(self, scalar: str, vtype: str, lanes: int) -> str:
        if vtype == "half2":
            return f"__half2half2({scalar})"
        if vtype == "nv_bfloat162":
            return f"__bfloat162bfloat162({scalar})"
        return f"make_{vtype}({', '.join([scalar] * lanes)})"

    def declare_array(self, scope: str, ctype: str, name: str, count: int, buf: Buffer) -> str:
        if scope == "shared" and buf.data in self.vector_accessed:
            # 16-byte vector accesses need 16-byte aligned storage; a float array has 4.
            align = max(16, min(buf.align, 128))
            return f"__shared__ __align__({align}) {ctype} {name}[{count}];"
        if scope == "local" and buf.data in self.vector_accessed:
            # A register array read as float2/float4 (an epilogue's pair stores) must be
            # aligned like the vector should it live in local memory.
            return f"__align__(16) {ctype} {name}[{count}];"
        if scope != "shared.dyn":
            return super().declare_array(scope, ctype, name, count, buf)
        # Each allocation starts at its alignment (16 bytes at least; up to 1024, what TMA's
        # 128-byte swizzle needs) from a base aligned to 1024.
        align = min(max(16, buf.align), 1024)
        offset = -(-self.dyn_offset // align) * align
        size = count * buf.dtype.bytes
        self.dyn_offset = offset + (size + 15) // 16 * 16
        if not any(line.startswith("extern __shared__") for line in self.hoisted):
            self.hoisted.insert(
                0, "extern __shared__ __align__(1024) unsigned char tw_dyn_shared[];"
            )
        place = "tw_dyn_shared" if offset == 0 else f"(tw_dyn_shared + {offset})"
        return f"{ctype}* {name} = ({ctype}*){place};"

    def kernel_head(
        self, name: str, func: PrimFunc, params: list[tuple[Var, str, str | None]]
    ) -> str:
        texts = [
            f"const __grid_constant__ {TENSOR_MAP_TYPE} {cname}"
            if var in self.tensor_maps
            else self.scalar_param(var, cname)
            if ctype is None
            else f"{ctype}* {self.restrict} {cname}"
            for var, cname, ctype in params
        ]
        extents = thread_extents(func)
        threads = math.prod(v for k, v in extents.items() if k.startswith("threadIdx"))
        bounds = f"__launch_bounds__({threads}) " if threads > 1 else ""
        return f'extern "C" __global__ void {bounds}{name}({", ".join(texts)}) {{'


# Two adjacent accumulator elements as one store (mma_store).
PAIR_TYPES = {"float": "float2", "half": "half2", "__nv_bfloat16": "__nv_bfloat162"}


def _pointer_offset(pointer: object) -> object:
    """The element offset a ``tvm_access_ptr`` adds to its storage (whose data pointer is
    allocated aligned); None for other pointers (nothing known)."""
    if isinstance(pointer, Call) and intrinsics.ACCESS_PTR.matches(pointer):
        return pointer.args[1]
    return None


def _even(value: object) -> bool:
    """Whether an int or expression is provably a multiple of 2."""
    if isinstance(value, int):
        return value % 2 == 0
    if not isinstance(value, PrimExpr):
        return False
    rest = simplify(op.floormod(value, 2))
    return isinstance(rest, IntImm) and rest.value == 0


def _text(value: object) -> str:
    if not isinstance(value, StringImm):
        raise CodegenError(f"expected a string argument, found {value}")
    return value.value


def _flag(value: object) -> bool:
    if not isinstance(value, IntImm):
        raise CodegenError(f"expected a constant flag, found {value}")
    return bool(value.value)


def _const(value: object) -> int | None:
    return value.value if isinstance(value, IntImm) else None


def generate_cuda(mod: IRModule) -> DeviceSource:
    """CUDA C for the device kernels of a lowered module (host functions are skipped).

    Arguments:
        mod: a module lowered for cuda: device PrimFuncs carry ``tir.is_kernel``.

    Example::

        >>> print(generate_cuda(lowered).text)
        extern "C" __global__ void __launch_bounds__(128) main_kernel(float* __restrict__ A, ...
    """
    body, kernels, printers = print_kernels(mod, "cuda", CUDAPrinter)
    uses = set().union(*(p.uses for p in printers.values()))
    lines = ["// Generated by tilewright for the cuda target."]
    if "float16" in uses:
        lines.append("#include <cuda_fp16.h>")
    if "bfloat16" in uses:
        lines.append("#include <cuda_bf16.h>")
    if any(p.tensor_maps for p in printers.values()):
        lines.append(TENSOR_MAP_STRUCT)
    dynamic = {name: p.dyn_offset for name, p in printers.items()}
    # wgmma and setmaxnreg exist on the architecture-specific sm_90a only.
    arch = "sm_90a" if any(p.arch_specific for p in printers.values()) else ""
    return DeviceSource("\n".join(lines) + "\n\n" + body, "cuda", kernels, dynamic, arch)


def codegen_cuda(mod: IRModule) -> str:
    """The CUDA source of a lowered module. Example: ``print(codegen_cuda(lowered))``."""
    return generate_cuda(mod).text
