"""TVM's bit-level builtins as C-like expressions: ``popcount``, ``clz``, ``q_multiply_shift``,
``reinterpret``, ``address_of``, ``isnullptr``, ``call_pure_extern``, and the refusal of
``tvm_call_packed`` and TVM's other host-side builtins (there is no packed-function runtime)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilewright.ir import BufferLoad, Call, intrinsics

if TYPE_CHECKING:
    from tilewright.codegen.c_like import CLikePrinter, Emitter, Expr

_Q_MULTIPLY_SHIFT = """\
QUAL int32_t tw_q_multiply_shift(int32_t x, int32_t y, int32_t q, int32_t s) {
  int32_t left = s > 0 ? s : 0;
  int32_t total = (s > 0 ? 0 : -s) + q;
  int64_t v = ((int64_t)x << left) * (int64_t)y;
  v = v + ((int64_t)1 << (total - 1));
  return (int32_t)(v >> total);
}
"""


def _expr(text: str) -> Expr:
    from tilewright.codegen.c_like import Expr

    return Expr(text)


def _bit_count(builtin: str) -> Emitter:
    def emit(p: CLikePrinter, e: Call) -> Expr:
        value = e.args[0]
        if not value.dtype.is_integer or value.dtype.bits > 64:
            raise _error(p, f"{e.op} takes an integer, found {value.dtype}")
        wide = "ll" if value.dtype.bits == 64 else ""
        unsigned = "unsigned long long" if wide else "uint32_t"
        bits = value.dtype.bits
        # The value's own bits, zero-extended; clz counts from the top of those bits.
        mask = "" if bits in (32, 64) else f" & {(1 << bits) - 1}u"
        arg = f"(({unsigned})({p.expr_text(value)}){mask})"
        call = f"__builtin_{builtin}{wide}({arg})"
        if builtin == "clz":
            width = 64 if wide else 32
            call = f"({arg} == 0 ? {bits} : {call} - {width - bits})"
        return _expr(f"(({p.value_type(e.dtype)}){call})")

    return emit


def _q_multiply_shift(p: CLikePrinter, e: Call) -> Expr:
    if any(a.dtype.bits != 32 or not a.dtype.is_integer for a in e.args):
        raise _error(p, "q_multiply_shift takes int32 operands")
    name = p.helper("tw_q_multiply_shift", _Q_MULTIPLY_SHIFT)
    return _expr(f"{name}({', '.join(p.expr_text(a) for a in e.args)})")


def _reinterpret(p: CLikePrinter, e: Call) -> Expr:
    source, target = e.args[0].dtype, e.dtype
    halves = ("float16", "bfloat16")
    if source.bits != target.bits or source.lanes != 1 or {str(source), str(target)} & set(halves):
        raise _error(p, f"reinterpret from {source} to {target} (sizes differ or half precision)")
    to_type, from_type = p.value_type(target), p.value_type(source)
    name = f"tw_reinterpret_{p.suffix(source)}_{p.suffix(target)}"
    body = f"{to_type} r; __builtin_memcpy(&r, &v, sizeof r); return r;"
    p.helper(name, f"QUAL {to_type} {name}({from_type} v) {{ {body} }}\n")
    return _expr(f"{name}({p.expr_text(e.args[0])})")


def _address_of(p: CLikePrinter, e: Call) -> Expr:
    load = e.args[0]
    if not isinstance(load, BufferLoad) or len(load.indices) != 1:
        raise _error(p, "address_of needs an element of a flattened buffer")
    return _expr(f"({p.expr_text(load.buffer.data)} + {p.expr_text(load.indices[0])})")


def _call_packed(p: CLikePrinter, e: Call) -> Expr:
    raise _error(
        p,
        "T.call_packed needs TVM's packed-function runtime, which tilewright does not have; "
        "call a C function with T.call_extern instead",
    )


def _isnullptr(p: CLikePrinter, e: Call) -> Expr:
    from tilewright.codegen.c_like import PREC_EQ, Expr

    return Expr(f"{p.operand(e.args[0], PREC_EQ)} == 0", PREC_EQ)


def _host_builtin(p: CLikePrinter, e: Call) -> Expr:
    known = intrinsics.lookup(e.op)
    script = {intrinsics.CALL_CPACKED: "call_cpacked"}.get(known, known.name)
    if known in (intrinsics.CALL_LLVM_INTRIN, intrinsics.CALL_LLVM_PURE_INTRIN):
        why = f"an LLVM intrinsic, which the {p.target_name} target cannot call"
        instead = "a math intrinsic (T.sqrt, ...) or T.call_extern"
    else:
        why = "part of TVM's packed-function ABI (host-side lowering), which tilewright lacks"
        instead = "buffers as parameters and T.call_extern"
    return _raise(p, f"T.{script} is {why}; use {instead} instead")


def _raise(p: CLikePrinter, message: str) -> Expr:
    raise _error(p, message)


def _error(p: CLikePrinter, message: str) -> Exception:
    from tilewright.codegen.c_like import CodegenError

    return CodegenError(f"{p.func_name}: {message}")


EMITTERS: dict[intrinsics.Intrinsic, Emitter] = {
    intrinsics.POPCOUNT: _bit_count("popcount"),
    intrinsics.CLZ: _bit_count("clz"),
    intrinsics.Q_MULTIPLY_SHIFT: _q_multiply_shift,
    intrinsics.CALL_PACKED: _call_packed,
    intrinsics.REINTERPRET: _reinterpret,
    intrinsics.ADDRESS_OF: _address_of,
    intrinsics.ISNULLPTR: _isnullptr,
    intrinsics.CALL_PURE_EXTERN: lambda p, e: p.call_extern(e),
    **{builtin: _host_builtin for builtin in intrinsics.HOST_BUILTINS},
}
