"""CUDA spellings of the Hopper intrinsics (``ir/intrinsics_hopper.py``): inline PTX, with
small ``static __device__`` helpers for the ones that take a loop or several instructions
(the mbarrier wait, ``elect.sync``, the wgmma descriptor).

``HopperEmitters`` is mixed into the CUDA printer; ``HOPPER_STATEMENT_EMITTERS`` and
``HOPPER_EMITTERS`` join its emitter tables. A kernel that uses ``wgmma`` or ``setmaxnreg``
marks its printer ``arch_specific``: it compiles for sm_90a only.

A TMA map that the lowering made a kernel parameter (``tw.cuda.tensor_map``) is declared
``const __grid_constant__ tw_tensor_map name`` (``TENSOR_MAP_STRUCT`` defines the type) and
the copies take its address, ``&name``.

Example (what ``T.evaluate(T.call_intrin("int32", "tw.cuda.wgmma_fence"))`` prints)::

    asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from tilewright.codegen.c_like import PREC_ADD, CodegenError, Emitter, Expr, StatementEmitter
from tilewright.ir import Call, IntImm, PrimExpr, StringImm
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.ir.intrinsics import Intrinsic

if TYPE_CHECKING:
    from tilewright.codegen.c_like import CLikePrinter

# wgmma accumulates m64nNk16 tiles; N from 8 to 256 in steps of 8.
WGMMA_N = tuple(range(8, 257, 8))
_AB_TYPES = ("f16", "bf16")
# The descriptor's layout field (bits 62-63) by swizzle width in bytes.
_SWIZZLE_MODES = {0: 0, 128: 1, 64: 2, 32: 3}

_WAIT = (
    "QUAL void tw_mbarrier_wait(unsigned bar, unsigned parity) {\n"
    "  unsigned done = 0;\n"
    "  while (!done) {\n"
    '    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; '
    'selp.u32 %0, 1, 0, p; }\\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");\n'
    "  }\n"
    "}\n"
)
_ELECT = (
    "QUAL bool tw_elect_sync() {\n"
    "  unsigned elected;\n"
    '  asm volatile("{ .reg .pred p; .reg .b32 r; elect.sync r|p, 0xffffffff; '
    'selp.u32 %0, 1, 0, p; }\\n" : "=r"(elected));\n'
    "  return elected != 0;\n"
    "}\n"
)
_DESCRIPTOR = (
    "QUAL unsigned long long tw_wgmma_descriptor(\n"
    "    const void* address, unsigned leading, unsigned stride, unsigned long long mode) {\n"
    "  unsigned start = (unsigned)__cvta_generic_to_shared(address);\n"
    "  return (unsigned long long)((start & 0x3FFFF) >> 4)\n"
    "       | ((unsigned long long)((leading & 0x3FFFF) >> 4) << 16)\n"
    "       | ((unsigned long long)((stride & 0x3FFFF) >> 4) << 32)\n"
    "       | (mode << 62);\n"
    "}\n"
)


# A TMA tensor map passed by value (``const __grid_constant__``): the 128 opaque bytes
# cuTensorMapEncodeTiled writes, 64-byte aligned as the hardware reads them (NVRTC has no
# cuda.h and so no CUtensorMap).
TENSOR_MAP_TYPE = "tw_tensor_map"
TENSOR_MAP_STRUCT = f"struct __align__(64) {TENSOR_MAP_TYPE} {{ unsigned long long opaque[16]; }};"


def _const(value: PrimExpr, what: str, func: str) -> int:
    if not isinstance(value, IntImm):
        raise CodegenError(f"{func}: {what} must be a constant, found {value}")
    return value.value


def _text(value: PrimExpr, what: str, func: str) -> str:
    if not isinstance(value, StringImm):
        raise CodegenError(f"{func}: {what} must be a string, found {value}")
    return value.value


class HopperEmitters:
    """The emitters of the Hopper intrinsics (mixed into ``CUDAPrinter``)."""

    arch_specific: bool = False  # set once the kernel uses an sm_90a-only instruction

    if TYPE_CHECKING:  # provided by the printer this class is mixed into
        func_name: str

        def emit(self, line: str) -> None: ...
        def expr_text(self, e: PrimExpr) -> str: ...
        def operand(self, e: PrimExpr, prec: int, right: bool = False) -> str: ...
        def helper(self, name: str, definition: str) -> str: ...

    def shared(self, address: PrimExpr) -> str:
        """The 32-bit shared-window address of a generic pointer to shared memory."""
        return f"(unsigned)__cvta_generic_to_shared({self.expr_text(address)})"

    def emit_mbarrier(self, call: Call) -> None:
        bar = self.shared(call.args[0])
        if hopper.MBARRIER_INIT.matches(call):
            count = self.expr_text(call.args[1])
            self.emit(
                f'asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\\n" :: "r"({bar}), '
                f'"r"((unsigned)({count})) : "memory");'
            )
        elif hopper.MBARRIER_ARRIVE.matches(call):
            self.emit(
                f'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\\n" :: "r"({bar}) '
                ': "memory");'
            )
        elif hopper.MBARRIER_ARRIVE_EXPECT_TX.matches(call):
            count = self.expr_text(call.args[1])
            self.emit(
                'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n" :: '
                f'"r"({bar}), "r"((unsigned)({count})) : "memory");'
            )
        else:  # MBARRIER_WAIT
            self.helper("tw_mbarrier_wait", _WAIT)
            self.emit(f"tw_mbarrier_wait({bar}, (unsigned)({self.expr_text(call.args[1])}));")

    def emit_tma(self, call: Call) -> None:
        load = hopper.TMA_LOAD.matches(call)
        coords = call.args[3:] if load else call.args[2:]
        if not 1 <= len(coords) <= 5:
            raise CodegenError(f"{self.func_name}: a TMA copy takes 1 to 5 coordinates")
        n = len(coords)
        tensor_map = call.args[1] if load else call.args[0]
        # Operands: [the shared destination], the tensor map, the coordinates, [the barrier
        # or the shared source].
        ins = [f'"r"({self.shared(call.args[0])})'] if load else []
        ins.append(f'"l"((unsigned long long)({self.expr_text(tensor_map)}))')
        ins += [f'"r"((int)({self.expr_text(c)}))' for c in coords]
        ins.append(f'"r"({self.shared(call.args[2] if load else call.args[1])})')
        first = len(ins) - n - 1  # the first coordinate's operand number
        box = ", ".join(f"%{first + i}" for i in range(n))
        if load:
            text = (
                f"cp.async.bulk.tensor.{n}d.shared::cluster.global.mbarrier::complete_tx::bytes "
                f"[%0], [%1, {{{box}}}], [%{first + n}];"
            )
        else:
            text = (
                f"cp.async.bulk.tensor.{n}d.global.shared::cta.bulk_group [%0, {{{box}}}], "
                f"[%{first + n}];"
            )
        self.emit(f'asm volatile("{text}\\n" :: {", ".join(ins)} : "memory");')

    def emit_bulk_wait(self, call: Call) -> None:
        count = _const(call.args[0], "the bulk wait count", self.func_name)
        self.emit(f'asm volatile("cp.async.bulk.wait_group.read {count};\\n" ::: "memory");')

    def emit_wgmma_wait(self, call: Call) -> None:
        self.arch_specific = True
        count = _const(call.args[0], "the wgmma wait count", self.func_name)
        self.emit(f'asm volatile("wgmma.wait_group.sync.aligned {count};\\n" ::: "memory");')

    def emit_wgmma_simple(self, instruction: str) -> None:
        self.arch_specific = True
        self.emit(f'asm volatile("{instruction};\\n" ::: "memory");')

    def emit_wgmma(self, call: Call) -> None:
        """wgmma.mma_async m64nNk16, float32 accumulators; A from shared memory (a
        descriptor) or from registers (``wgmma_mma_async_rs``)."""
        self.arch_specific = True
        registers_a = hopper.WGMMA_MMA_ASYNC_RS.matches(call)
        n = _const(call.args[0], "wgmma's N", self.func_name)
        ab = _text(call.args[1], "wgmma's input type", self.func_name)
        if n not in WGMMA_N or ab not in _AB_TYPES:
            raise CodegenError(
                f"{self.func_name}: wgmma m64n{n}k16 with {ab} inputs is not supported (N a "
                f"multiple of 8 up to 256; inputs {' or '.join(_AB_TYPES)})"
            )
        if registers_a:
            a, a_offset, desc_b, acc, acc_offset, scale_d = call.args[2:8]
            trans = ["0"]  # B as stored (K-major); A's layout is the registers' own
        else:
            desc_a, desc_b, acc, acc_offset, scale_d, trans_a, trans_b = call.args[2:9]
            trans = [
                str(_const(trans_a, "wgmma's trans_a", self.func_name)),
                str(_const(trans_b, "wgmma's trans_b", self.func_name)),
            ]
        count = n // 2
        regs = f"((float*)({self.expr_text(acc)} + {self.operand(acc_offset, PREC_ADD)}))"
        outs = ", ".join(f'"+f"({regs}[{i}])' for i in range(count))
        d = ", ".join(f"%{i}" for i in range(count))
        if registers_a:
            a_regs = f"((unsigned*)({self.expr_text(a)} + {self.operand(a_offset, PREC_ADD)}))"
            ins = [f'"r"({a_regs}[{i}])' for i in range(4)]
            a_text = "{" + ", ".join(f"%{count + i}" for i in range(4)) + "}"
            next_operand = count + 4
        else:
            ins = [f'"l"((unsigned long long)({self.expr_text(desc_a)}))']
            a_text = f"%{count}"
            next_operand = count + 1
        ins.append(f'"l"((unsigned long long)({self.expr_text(desc_b)}))')
        ins.append(f'"r"((int)({self.expr_text(scale_d)}))')
        b_text, scale_text = f"%{next_operand}", f"%{next_operand + 1}"
        text = (
            f"{{ .reg .pred p; setp.ne.b32 p, {scale_text}, 0; "
            f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab} {{{d}}}, {a_text}, "
            f"{b_text}, p, 1, 1, {', '.join(trans)}; }}"
        )
        self.emit(f'asm volatile("{text}\\n" : {outs} : {", ".join(ins)});')

    def emit_setmaxnreg(self, call: Call) -> None:
        self.arch_specific = True
        increase = _const(call.args[0], "setmaxnreg's direction", self.func_name)
        count = _const(call.args[1], "setmaxnreg's register count", self.func_name)
        if not (24 <= count <= 256 and count % 8 == 0):
            raise CodegenError(
                f"{self.func_name}: setmaxnreg takes 24 to 256 registers in steps of 8, not {count}"
            )
        direction = "inc" if increase else "dec"
        self.emit(f'asm volatile("setmaxnreg.{direction}.sync.aligned.u32 {count};\\n");')

    def emit_named_barrier(self, call: Call) -> None:
        ident, threads = call.args
        count = _const(threads, "the named barrier's thread count", self.func_name)
        number = ident.value if isinstance(ident, IntImm) else None
        if (number is not None and not 1 <= number <= 15) or count % 32 or count < 32:
            raise CodegenError(
                f"{self.func_name}: bar.sync takes an id from 1 to 15 (0 is __syncthreads') "
                f"and a multiple of 32 threads, not id {ident} for {count} threads"
            )
        self.emit(
            f'asm volatile("bar.sync %0, {count};\\n" :: "r"((unsigned)({self.expr_text(ident)}))'
            ' : "memory");'
        )

    def emit_stmatrix(self, call: Call) -> None:
        num, trans, dst, src, offset = call.args
        count = _const(num, "the stmatrix count", self.func_name)
        if count not in (1, 2, 4):
            raise CodegenError(f"{self.func_name}: stmatrix stores 1, 2 or 4 matrices, not {count}")
        shape = f"m8n8.x{count}{'.trans' if _const(trans, 'trans', self.func_name) else ''}"
        regs = f"((unsigned*)({self.expr_text(src)} + {self.operand(offset, PREC_ADD)}))"
        ins = ", ".join(f'"r"({regs}[{i}])' for i in range(count))
        values = ", ".join(f"%{1 + i}" for i in range(count))
        self.emit(
            f'asm volatile("stmatrix.sync.aligned.{shape}.shared.b16 [%0], {{{values}}};\\n" :: '
            f'"r"({self.shared(dst)}), {ins} : "memory");'
        )

    def emit_unlifted_tensor_map(self, call: Call) -> Expr:
        """A tensor_map call left in a kernel: the GPU lowering makes each a parameter."""
        data = call.args[0] if call.args else call
        raise CodegenError(
            f"{self.func_name}: the tensor map of {data} ({call.op}) is still a call; lower "
            "the function for cuda (split_host_device makes it a kernel parameter)"
        )

    def emit_elect(self, call: Call) -> Expr:
        self.helper("tw_elect_sync", _ELECT)
        return Expr("tw_elect_sync()")

    def emit_descriptor(self, call: Call) -> Expr:
        address, leading, stride, swizzle = call.args
        width = _const(swizzle, "the descriptor's swizzle", self.func_name)
        if width not in _SWIZZLE_MODES:
            raise CodegenError(
                f"{self.func_name}: a wgmma descriptor swizzles 0, 32, 64 or 128 bytes, not {width}"
            )
        self.helper("tw_wgmma_descriptor", _DESCRIPTOR)
        args = ", ".join(self.expr_text(a) for a in (address, leading, stride))
        return Expr(f"tw_wgmma_descriptor({args}, {_SWIZZLE_MODES[width]}ull)")


def _on(method: str) -> StatementEmitter:
    return lambda p, call: getattr(cast("CLikePrinter", p), method)(call)


HOPPER_STATEMENT_EMITTERS: dict[Intrinsic, StatementEmitter] = {
    **{
        i: _on("emit_mbarrier")
        for i in (
            hopper.MBARRIER_INIT,
            hopper.MBARRIER_ARRIVE,
            hopper.MBARRIER_ARRIVE_EXPECT_TX,
            hopper.MBARRIER_WAIT,
        )
    },
    hopper.FENCE_MBARRIER_INIT: lambda p, e: p.emit(
        'asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory");'
    ),
    hopper.FENCE_PROXY_ASYNC: lambda p, e: p.emit(
        'asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");'
    ),
    hopper.TMA_LOAD: _on("emit_tma"),
    hopper.TMA_STORE: _on("emit_tma"),
    hopper.BULK_COMMIT_GROUP: lambda p, e: p.emit(
        'asm volatile("cp.async.bulk.commit_group;\\n" ::: "memory");'
    ),
    hopper.BULK_WAIT_GROUP_READ: _on("emit_bulk_wait"),
    hopper.WGMMA_FENCE: lambda p, e: cast(HopperEmitters, p).emit_wgmma_simple(
        "wgmma.fence.sync.aligned"
    ),
    hopper.WGMMA_COMMIT_GROUP: lambda p, e: cast(HopperEmitters, p).emit_wgmma_simple(
        "wgmma.commit_group.sync.aligned"
    ),
    hopper.WGMMA_WAIT_GROUP: _on("emit_wgmma_wait"),
    hopper.WGMMA_MMA_ASYNC: _on("emit_wgmma"),
    hopper.WGMMA_MMA_ASYNC_RS: _on("emit_wgmma"),
    hopper.SETMAXNREG: _on("emit_setmaxnreg"),
    hopper.STMATRIX: _on("emit_stmatrix"),
    hopper.NAMED_BARRIER_SYNC: _on("emit_named_barrier"),
}
HOPPER_EMITTERS: dict[Intrinsic, Emitter] = {
    hopper.TENSOR_MAP: lambda p, e: cast(HopperEmitters, p).emit_unlifted_tensor_map(e),
    hopper.ELECT_SYNC: lambda p, e: cast(HopperEmitters, p).emit_elect(e),
    hopper.WGMMA_DESCRIPTOR: lambda p, e: cast(HopperEmitters, p).emit_descriptor(e),
}
