"""The ``T`` namespace of scripts (``from tilewright.script import tir as T``).

Every name is a real Python function or object: expression functions return IR, loop and
block functions return directives that the parser applies, dtype names (``T.float32``)
make constants, casts and variables, and ``T.Buffer`` describes buffer parameters.
"""

import re

from tilewright.script.parser.entry import prim_func
from tilewright.script.parser.frames import DTypeConstructor
from tilewright.script.tir.blocks import (
    axis,
    block,
    block_attr,
    func_attr,
    init,
    reads,
    sblock,
    sblock_attr,
    where,
    writes,
)
from tilewright.script.tir.buffers import (
    Buffer,
    alloc_buffer,
    decl_buffer,
    match_buffer,
    sblock_alloc_buffer,
)
from tilewright.script.tir.builtins import (
    Assert,
    LetStmt,
    Shuffle,
    address_of,
    allocate,
    call_packed,
    clz,
    ldexp,
    popcount,
    q_multiply_shift,
    ret,
    tvm_access_ptr,
    tvm_bmma_sync,
    tvm_fill_fragment,
    tvm_load_matrix_sync,
    tvm_mma_sync,
    tvm_storage_sync,
    tvm_store_matrix_sync,
    tvm_tuple,
    type_annotation,
)
from tilewright.script.tir.dtypes import (
    bfloat16,
    bool,
    boolean,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float16,
    float32,
    float64,
    handle,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
    void,
)
from tilewright.script.tir.exprs import (
    EQ,
    NE,
    And,
    Broadcast,
    Cast,
    Let,
    Not,
    Or,
    Ramp,
    Range,
    Select,
    abs,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    attr,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    broadcast,
    call_extern,
    call_intrin,
    cast,
    ceil,
    ceildiv,
    copysign,
    cos,
    cosh,
    erf,
    evaluate,
    exp,
    exp2,
    exp10,
    fabs,
    floor,
    floordiv,
    floormod,
    fmod,
    hypot,
    if_then_else,
    isfinite,
    isinf,
    isnan,
    iter_var,
    let,
    likely,
    log,
    log1p,
    log2,
    log10,
    max,
    max_value,
    min,
    min_value,
    nearbyint,
    nextafter,
    pow,
    ramp,
    round,
    rsqrt,
    shift_left,
    shift_right,
    sigmoid,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
    truncdiv,
    truncmod,
)
from tilewright.script.tir.host import (
    allocate_const,
    call_cpacked,
    call_llvm_intrin,
    call_llvm_pure_intrin,
    call_pure_extern,
    isnullptr,
    prefetch,
    realize,
    tvm_stack_alloca,
    tvm_stack_make_array,
    tvm_stack_make_shape,
    tvm_struct_get,
    tvm_struct_set,
)
from tilewright.script.tir.loops import (
    env_thread,
    grid,
    launch_thread,
    parallel,
    serial,
    thread_binding,
    unroll,
    vectorized,
)
from tilewright.script.tir.reductions import comm_reducer, reinterpret, tvm_thread_allreduce
from tilewright.script.tir.tensor_core import (
    meta_var,
    mma_fill,
    mma_store,
    ptx_ldmatrix,
    ptx_mma,
)

__all__ = [name for name in dir() if not name.startswith("_") and name != "re"]

_VECTOR_DTYPE = re.compile(
    r"^(?:(?:u?int|float)\d+|bfloat16|bool|float8_e4m3fn(?:uz)?|float8_e5m2(?:fnuz)?)x\d+$"
)


def __getattr__(name: str) -> DTypeConstructor:
    """Vector dtype names such as ``T.float32x4`` (one per lane count, made on use)."""
    if _VECTOR_DTYPE.match(name):
        return DTypeConstructor(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
