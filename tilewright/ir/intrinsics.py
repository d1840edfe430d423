"""Intrinsic names → their definitions: the one table of every ``Call`` op the IR knows.

A ``Call`` names its intrinsic by a string (``Call(int32, "tw.sync_threads", ())``). Each
intrinsic is defined here once: its name, how many arguments it takes, how its result dtype
follows from the arguments, and whether it has effects (a barrier, a copy, a launch) that
keep it in place where a pure call could be moved or removed. The code generators hold the
per-backend spelling (``codegen/*.py`` ``emitters`` tables); passes and the runtime refer to an
intrinsic through the constants below, never through a string literal.

Example::

    >>> from tilewright.ir import intrinsics
    >>> intrinsics.lookup("tir.exp").effect
    <Effect.PURE: 'pure'>
    >>> intrinsics.SYNC_THREADS.call()          # Evaluate(Call(int32, "tw.sync_threads", ()))
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tilewright.ir.buffer import Buffer
from tilewright.ir.dtype import DataType, bool_, handle, int32
from tilewright.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var
from tilewright.ir.stmt import Evaluate


class Effect(enum.Enum):
    """What a call does besides computing its value."""

    PURE = "pure"  # a function of its arguments: may be moved, merged or removed
    READ = "read"  # reads memory (an address), so it stays after the writes it follows
    WRITE = "write"  # writes memory
    BARRIER = "barrier"  # orders the memory accesses of several threads
    LAUNCH = "launch"  # runs a kernel (host side)


class ResultType(enum.Enum):
    """How the result dtype follows from the arguments."""

    FIRST_ARG = "first_arg"  # the dtype of the first argument (math)
    SECOND_ARG = "second_arg"  # the dtype of the second argument (if_then_else's branches)
    INT32 = "int32"  # a status or nothing (statements evaluated for their effect)
    HANDLE = "handle"  # an address
    GIVEN = "given"  # given by the caller (``T.call_intrin(dtype, ...)``)
    BOOL = "bool"  # a predicate


@dataclass(frozen=True)
class Intrinsic:
    """One intrinsic: ``arity`` is the argument count (None: any, at least ``min_args``)."""

    name: str
    arity: int | None
    result: ResultType
    effect: Effect = Effect.PURE
    doc: str = ""
    aliases: tuple[str, ...] = ()
    min_args: int = 0

    def result_dtype(self, args: tuple[PrimExpr, ...], given: DataType | None = None) -> DataType:
        """The dtype a call with ``args`` returns. Example: ``EXP.result_dtype((x,))``."""
        if self.result is ResultType.INT32:
            return int32
        if self.result is ResultType.HANDLE:
            return handle
        if self.result is ResultType.BOOL:
            return bool_
        if self.result is ResultType.GIVEN:
            if given is None:
                raise TypeError(f"intrinsic {self.name!r} needs a result dtype")
            return given
        index = 0 if self.result is ResultType.FIRST_ARG else 1
        if len(args) <= index:
            raise TypeError(f"intrinsic {self.name!r} takes its dtype from argument {index + 1}")
        return args[index].dtype

    def check_arity(self, count: int) -> None:
        """Raise ``TypeError`` when ``count`` arguments do not fit this intrinsic."""
        if self.arity is not None and count != self.arity:
            raise TypeError(f"intrinsic {self.name!r} takes {self.arity} arguments, got {count}")
        if count < self.min_args:
            raise TypeError(
                f"intrinsic {self.name!r} takes at least {self.min_args} arguments, got {count}"
            )

    def call(self, *args: PrimExpr, dtype: DataType | None = None) -> Call:
        """The ``Call`` of this intrinsic on ``args`` (arity and dtype checked)."""
        self.check_arity(len(args))
        return Call(self.result_dtype(args, dtype), self.name, tuple(args))

    def stmt(self, *args: PrimExpr) -> Evaluate:
        """The call as a statement, evaluated for its effect."""
        return Evaluate(self.call(*args))

    def matches(self, node: object) -> bool:
        """Whether ``node`` is a ``Call`` of this intrinsic, or an ``Evaluate`` of one."""
        if isinstance(node, Evaluate):
            node = node.value
        return isinstance(node, Call) and lookup_or_none(node.op) is self


def _math(name: str, arity: int) -> Intrinsic:
    return Intrinsic(name, arity, ResultType.FIRST_ARG, doc="elementwise math")


# Math intrinsics taking and returning one floating-point value (integers are promoted).
UNARY_MATH = (
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
    "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
    "sigmoid", "erf", "floor", "ceil",
    "round", "trunc", "nearbyint", "abs", "fabs",
)  # fmt: skip
BINARY_MATH = ("pow", "atan2", "fmod", "hypot", "copysign", "nextafter")
FLOAT_PREDICATES = ("isnan", "isinf", "isfinite")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right")

IF_THEN_ELSE = Intrinsic(
    "if_then_else", 3, ResultType.SECOND_ARG, doc="the chosen branch only is evaluated"
)
LIKELY = Intrinsic("likely", 1, ResultType.FIRST_ARG, doc="a branch hint; the value itself")
BITWISE_AND, BITWISE_OR, BITWISE_XOR, SHIFT_LEFT, SHIFT_RIGHT = (
    Intrinsic(name, 2, ResultType.FIRST_ARG, doc="integer bit operation") for name in BITWISE
)
BITWISE_NOT = Intrinsic("bitwise_not", 1, ResultType.FIRST_ARG)
SYNC_THREADS = Intrinsic(
    "tw.sync_threads",
    0,
    ResultType.INT32,
    Effect.BARRIER,
    "the block-wide barrier (__syncthreads(), barrier(CLK_LOCAL_MEM_FENCE))",
    aliases=("tvm_storage_sync",),
)
CTA_SYNC = Intrinsic(
    "tw.cuda.cta_sync", 0, ResultType.INT32, Effect.BARRIER, "the tile layer's CTA barrier"
)
ADDRESS_OF = Intrinsic(
    "tw.address_of", 1, ResultType.HANDLE, doc="&buf[i] of a 1-D buffer (argument: the load)"
)
COPY_BYTES = Intrinsic(
    "tw.cuda.copy_bytes",
    3,
    ResultType.INT32,
    Effect.WRITE,
    "copy n (1, 2, 4, 8 or 16) aligned bytes from address src to dst as one transfer",
)
ACCESS_PTR = Intrinsic(
    "tvm_access_ptr",
    4,
    ResultType.HANDLE,
    doc="(data, offset, extent, mask): the address of element offset of the storage data, "
    "handed to a callee that reads (mask 1), writes (2) or both (3) extent elements",
)
CP_ASYNC = Intrinsic(
    "tw.cuda.cp_async",
    None,
    ResultType.INT32,
    Effect.WRITE,
    "(dst, src, bytes[, predicate, fill]): start copying 4, 8 or 16 bytes from global address "
    "src to shared address dst (cp.async); the copy is complete after a wait on its group. "
    "With a predicate, a false one copies nothing (src is not read) and, when fill is 1, "
    "stores zeros at dst instead",
    min_args=3,
)
CP_ASYNC_COMMIT = Intrinsic(
    "tw.cuda.cp_async_commit_group",
    0,
    ResultType.INT32,
    Effect.BARRIER,
    "close the group of this thread's asynchronous copies started since the last commit",
)
CP_ASYNC_WAIT = Intrinsic(
    "tw.cuda.cp_async_wait_group",
    1,
    ResultType.INT32,
    Effect.BARRIER,
    "(n): wait until at most n of this thread's committed copy groups are still in flight",
)
REGION_DATA = Intrinsic(
    "tw.region_data",
    2,
    ResultType.HANDLE,
    doc="(first, last): the storage of the region of a buffer whose first and last elements "
    "the two loads name (a match buffer's data once blocks are lowered; the loads keep the "
    "region visible to the passes that place, shrink and flatten buffers)",
)
REGION_OFFSET = Intrinsic(
    "tw.region_offset",
    2,
    ResultType.INT32,
    doc="(first, last): the element offset of that region's first element in its storage "
    "(a match buffer's elem_offset once blocks are lowered)",
)
PTX_LDMATRIX = Intrinsic(
    "ptx_ldmatrix",
    7,
    ResultType.GIVEN,
    Effect.WRITE,
    "(trans, num, type, local_ptr, local_offset, smem_ptr, smem_offset): every lane of the "
    "warp loads num (1, 2 or 4) 8x8 matrices of 16-bit elements from shared memory (lane t "
    "gives the address of row t % 8 of matrix t / 8) into num 32-bit registers at "
    "local_ptr[local_offset:] (ldmatrix.sync.aligned.m8n8, .trans when trans)",
)
PTX_MMA = Intrinsic(
    "ptx_mma",
    13,
    ResultType.GIVEN,
    Effect.WRITE,
    "(shape, a_layout, b_layout, a_type, b_type, c_type, a_ptr, a_offset, b_ptr, b_offset, "
    "c_ptr, c_offset, saturate): the warp's matrix multiply-accumulate C += A * B on register "
    "fragments (mma.sync.aligned, e.g. m16n8k16 row col f32 f16 f16 f32)",
)
MMA_FILL = Intrinsic(
    "mma_fill",
    3,
    ResultType.GIVEN,
    Effect.WRITE,
    "(local_size, ptr, offset): zero this lane's local_size accumulator elements at ptr[offset:]",
)
MMA_STORE = Intrinsic(
    "mma_store",
    6,
    ResultType.GIVEN,
    Effect.WRITE,
    "(m, n, dst_ptr, src_ptr, src_offset, stride): store the warp's m x n accumulator fragment "
    "(this lane's elements at src_ptr[src_offset:]) to dst_ptr with row stride stride",
)
LAUNCH_KERNEL = Intrinsic(
    "tw.launch_kernel",
    None,
    ResultType.INT32,
    Effect.LAUNCH,
    "host side: (name, grid x y z, block x y z, dynamic shared bytes, *kernel arguments)",
    min_args=8,
)

THREAD_ALLREDUCE = Intrinsic(
    "tvm_thread_allreduce",
    None,
    ResultType.HANDLE,
    Effect.BARRIER,
    "(n, values x n, condition, results x n, *reduce thread variables): each thread stores in"
    " its results the combination, by the comm_reducer of the enclosing reduce_scope attribute,"
    " of the values of every thread that differs from it only in the reduce thread indices (a"
    " thread whose condition is false brings the identity); every thread of the block calls it",
    min_args=4,
)
WARP_SHUFFLE_XOR = Intrinsic(
    "tw.warp_shuffle_xor",
    4,
    ResultType.SECOND_ARG,
    Effect.BARRIER,
    "(mask, value, lane_mask, width): value as lane (this lane ^ lane_mask) holds it; every lane"
    " named in mask calls it together (__shfl_xor_sync)",
)
POPCOUNT = Intrinsic("popcount", 1, ResultType.FIRST_ARG, doc="the number of set bits")
CLZ = Intrinsic("clz", 1, ResultType.FIRST_ARG, doc="the number of leading zero bits")
LDEXP = Intrinsic("ldexp", 2, ResultType.FIRST_ARG, doc="(x, e): x * 2**e")
Q_MULTIPLY_SHIFT = Intrinsic(
    "q_multiply_shift",
    4,
    ResultType.FIRST_ARG,
    doc="(x, y, q, s): the fixed-point product round(x * y * 2**(s - q)) of int32 values, "
    "computed in int64 (TVM's rounding: add half, shift right)",
)
CALL_PACKED = Intrinsic(
    "tvm_call_packed",
    None,
    ResultType.INT32,
    Effect.WRITE,
    "(name, *args): a call of the packed function registered as name (TVM's runtime)",
    min_args=1,
)
# TVM's wmma builtins (CUDA tensor cores through nvcuda::wmma); fragments are handles.
WMMA = tuple(
    Intrinsic(name, arity, ResultType.HANDLE, Effect.WRITE, doc)
    for name, arity, doc in (
        ("tvm_fill_fragment", 6, "(fragment, m, n, k, index, value)"),
        ("tvm_load_matrix_sync", 8, "(fragment, m, n, k, index, address, stride, layout)"),
        ("tvm_mma_sync", 8, "(d, d_index, a, a_index, b, b_index, c, c_index)"),
        ("tvm_bmma_sync", 8, "(d, d_index, a, a_index, b, b_index, c, c_index), 1-bit"),
        ("tvm_store_matrix_sync", 8, "(fragment, m, n, k, index, address, stride, layout)"),
    )
)
RET = Intrinsic("ret", 1, ResultType.FIRST_ARG, Effect.WRITE, "return the value from the function")
TVM_TUPLE = Intrinsic("tvm_tuple", None, ResultType.HANDLE, doc="a tuple of values (annotations)")
# Intrinsics a script writes as ``T.<name>(args)``, their dtype following from the arguments.
SCRIPT_NAMED = (
    POPCOUNT, CLZ, LDEXP, Q_MULTIPLY_SHIFT, *WMMA, RET, TVM_TUPLE,
    BITWISE_NOT, BITWISE_AND, BITWISE_OR, BITWISE_XOR, SHIFT_LEFT, SHIFT_RIGHT,
)  # fmt: skip
REINTERPRET = Intrinsic("reinterpret", 1, ResultType.GIVEN, doc="the argument's bits as a dtype")
CALL_EXTERN = Intrinsic(
    "call_extern",
    None,
    ResultType.GIVEN,
    Effect.WRITE,
    "(name, *args): a call of the external C function name (defined by a pragma_import_c "
    "source in the same module); may read and write what its pointer arguments address",
    min_args=1,
)
ISNULLPTR = Intrinsic("isnullptr", 1, ResultType.BOOL, doc="whether the handle is NULL")
CALL_PURE_EXTERN = Intrinsic(
    "call_pure_extern",
    None,
    ResultType.GIVEN,
    doc="(name, *args): a call of the external C function name that has no side effects",
    min_args=1,
)
# TVM's host-side lowering builtins (its packed-call ABI and LLVM intrinsics): read and
# printed; the C target refuses them.
CALL_CPACKED = Intrinsic(
    "tvm_call_cpacked",
    None,
    ResultType.INT32,
    Effect.WRITE,
    "(name, *args): a direct C call of the packed function name (TVM's C runtime ABI)",
    min_args=1,
)
CALL_LLVM_INTRIN = Intrinsic(
    "call_llvm_intrin",
    None,
    ResultType.GIVEN,
    Effect.WRITE,
    "(intrinsic, *args): a call of the LLVM intrinsic named (or numbered) intrinsic",
    min_args=1,
)
CALL_LLVM_PURE_INTRIN = Intrinsic(
    "call_llvm_pure_intrin",
    None,
    ResultType.GIVEN,
    doc="(intrinsic, *args): a call of a side-effect-free LLVM intrinsic",
    min_args=1,
)
STRUCT_GET = Intrinsic(
    "tvm_struct_get",
    3,
    ResultType.GIVEN,
    Effect.READ,
    "(array, index, field): field number field of element index of a TVM runtime struct array",
)
STRUCT_SET = Intrinsic(
    "tvm_struct_set",
    4,
    ResultType.INT32,
    Effect.WRITE,
    "(array, index, field, value): set that field",
)
STACK_ALLOCA = Intrinsic(
    "tvm_stack_alloca",
    2,
    ResultType.HANDLE,
    Effect.WRITE,
    '(kind, count): stack space for count "shape", "array", "arg_value" or "arg_tcode" items',
)
STACK_MAKE_SHAPE = Intrinsic(
    "tvm_stack_make_shape", None, ResultType.HANDLE, Effect.WRITE, "(*dims): a shape on the stack"
)
STACK_MAKE_ARRAY = Intrinsic(
    "tvm_stack_make_array",
    6,
    ResultType.HANDLE,
    Effect.WRITE,
    "(data, shape, strides, ndim, element, elem_offset): a DLTensor on the stack (element: a "
    "value of the element dtype)",
)
HOST_BUILTINS = (
    CALL_CPACKED, CALL_LLVM_INTRIN, CALL_LLVM_PURE_INTRIN, STRUCT_GET, STRUCT_SET,
    STACK_ALLOCA, STACK_MAKE_SHAPE, STACK_MAKE_ARRAY,
)  # fmt: skip

# The table: every intrinsic, once.
INTRINSICS: tuple[Intrinsic, ...] = (
    *(_math(name, 1) for name in UNARY_MATH),
    *(_math(name, 2) for name in BINARY_MATH),
    BITWISE_AND,
    BITWISE_OR,
    BITWISE_XOR,
    SHIFT_LEFT,
    SHIFT_RIGHT,
    *(Intrinsic(name, 1, ResultType.BOOL, doc="float predicate") for name in FLOAT_PREDICATES),
    BITWISE_NOT,
    IF_THEN_ELSE,
    LIKELY,
    SYNC_THREADS,
    CTA_SYNC,
    ADDRESS_OF,
    COPY_BYTES,
    ACCESS_PTR,
    CP_ASYNC,
    CP_ASYNC_COMMIT,
    CP_ASYNC_WAIT,
    REGION_DATA,
    REGION_OFFSET,
    PTX_LDMATRIX,
    PTX_MMA,
    MMA_FILL,
    MMA_STORE,
    LAUNCH_KERNEL,
    THREAD_ALLREDUCE,
    WARP_SHUFFLE_XOR,
    REINTERPRET,
    CALL_EXTERN,
    CALL_PACKED,
    *SCRIPT_NAMED,
    ISNULLPTR,
    CALL_PURE_EXTERN,
    *HOST_BUILTINS,
)

_BY_NAME: dict[str, Intrinsic] = {
    key: intrinsic for intrinsic in INTRINSICS for key in (intrinsic.name, *intrinsic.aliases)
}
COPY_WIDTHS = (16, 8, 4, 2, 1)


def register(*intrinsics: Intrinsic) -> None:
    """Add intrinsics defined in their own module (``intrinsics_hopper``) to the table; a
    name taken twice is an error."""
    for intrinsic in intrinsics:
        for key in (intrinsic.name, *intrinsic.aliases):
            if key in _BY_NAME:
                raise ValueError(f"intrinsic {key!r} is already in the table")
            _BY_NAME[key] = intrinsic


def lookup_or_none(name: str) -> Intrinsic | None:
    """The intrinsic called ``name`` (TVM's ``tir.`` prefix accepted), or None."""
    return _BY_NAME.get(name.removeprefix("tir."))


def lookup(name: str) -> Intrinsic:
    """The intrinsic called ``name``; ``KeyError`` naming close names when there is none.

    Example: ``lookup("tir.if_then_else") is IF_THEN_ELSE``.
    """
    found = lookup_or_none(name)
    if found is None:
        import difflib

        close = difflib.get_close_matches(name.removeprefix("tir."), list(_BY_NAME), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise KeyError(f"no intrinsic named {name!r}{hint}")
    return found


def is_call(node: object, *intrinsics: Intrinsic) -> bool:
    """Whether ``node`` is a ``Call`` (or ``Evaluate`` of one) of one of ``intrinsics``."""
    return any(i.matches(node) for i in intrinsics)


def is_tile_layer(node: object) -> bool:
    """Whether ``node`` calls one of the tile layer's intrinsics (its script spells them)."""
    return isinstance(node, Call) and lookup_or_none(node.op) in (ADDRESS_OF, COPY_BYTES, CTA_SYNC)


def data_var(arg: PrimExpr) -> Var | None:
    """The storage variable a handle argument names: a data variable itself, or the buffer of
    a ``tw.region_data`` call; None for anything else."""
    if isinstance(arg, Var) and arg.dtype.is_handle:
        return arg
    if isinstance(arg, Call) and REGION_DATA.matches(arg) and isinstance(arg.args[0], BufferLoad):
        return arg.args[0].buffer.data
    return None


READS, WRITES = 1, 2  # access_ptr's mask bits
# Which arguments of these intrinsics are storage they only read or only write (by
# position); any other storage argument of any call counts as read and written.
_OPERAND_MODES: dict[str, dict[int, int]] = {
    "ptx_ldmatrix": {3: WRITES},
    "ptx_mma": {6: READS, 8: READS, 10: READS | WRITES},
    "mma_fill": {1: WRITES},
    "mma_store": {3: READS},
}


def region_accesses(call: Call) -> list[tuple[BufferLoad, BufferLoad, int]]:
    """The buffer regions ``call`` reaches through storage arguments (``tw.region_data``,
    directly or inside ``tvm_access_ptr``): (first element, last element, mode), the mode
    ``READS | WRITES`` bits from the intrinsic's operand table or the access mask.

    Example: for ``ptx_ldmatrix(..., region_data(A_warp[0, 0], A_warp[0, 7]), ...,
    access_ptr(region_data(S[r, c], S[r + 15, c + 15]), ..., 1), ...)`` it is
    ``[(A_warp[0, 0], A_warp[0, 7], WRITES), (S[r, c], S[r + 15, c + 15], READS)]``.
    """
    known = lookup_or_none(call.op)
    if known in (REGION_DATA, REGION_OFFSET, ACCESS_PTR):
        return []
    modes = _OPERAND_MODES.get(known.name, {}) if known is not None else {}
    found = []
    for position, arg in enumerate(call.args):
        mode = modes.get(position, READS | WRITES)
        if isinstance(arg, Call) and ACCESS_PTR.matches(arg):
            mask = arg.args[3]
            mode = mask.value if isinstance(mask, IntImm) else READS | WRITES
            arg = arg.args[0]
        if isinstance(arg, Call) and REGION_DATA.matches(arg):
            first, last = arg.args
            if isinstance(first, BufferLoad) and isinstance(last, BufferLoad):
                found.append((first, last, mode))
    return found


def address_of(buffer: Buffer, index: PrimExpr | int) -> Call:
    """``&buffer[index]`` of a 1-D buffer. Example: ``address_of(A_1, f * 128)``."""
    from tilewright.ir import op

    return ADDRESS_OF.call(BufferLoad(buffer, (op.convert(index),)))


def copy_bytes(dst: PrimExpr, src: PrimExpr, nbytes: int) -> Evaluate:
    """The statement copying ``nbytes`` from address ``src`` to ``dst`` as one transfer.

    Example: ``copy_bytes(address_of(S, i), address_of(A, i), 16)``.
    """
    if nbytes not in COPY_WIDTHS:
        raise ValueError(f"copy_bytes moves 1, 2, 4, 8 or 16 bytes, got {nbytes}")
    return COPY_BYTES.stmt(dst, src, IntImm(nbytes, int32))


def sync_threads() -> Evaluate:
    """The block-wide barrier statement (``__syncthreads()`` in CUDA)."""
    return SYNC_THREADS.stmt()
