"""Cross-thread reductions in scripts: ``T.comm_reducer``, ``T.tvm_thread_allreduce`` and
``T.reinterpret``, spelled as TVM prints a lowered cross-thread reduction::

    with T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0.0)]), "reduce_scope",
                T.reinterpret(T.uint64(0), dtype="handle")):
        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), A[vi, vk], True, red[0], k))
"""

from __future__ import annotations

import inspect

from tilewright.ir import intrinsics, op
from tilewright.ir.comm_reducer import CommReducer
from tilewright.ir.dtype import dtype as parse_dtype
from tilewright.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tilewright.script.tir import arguments as args


def comm_reducer(combiner: object, identity: object) -> CommReducer:
    """``T.comm_reducer(lambda x, y: x + y, [T.float32(0)])``: a reducer of ``len(identity)``
    values; ``combiner`` takes one partial's values, then the other's, and returns the
    combined value (a tuple for several)."""
    where = "T.comm_reducer"
    items = identity if isinstance(identity, list | tuple) else [identity]
    neutral = tuple(args.expr(v, f"{where} identity") for v in items)
    if not neutral:
        raise TypeError(f"{where}: the identity list is empty")
    if not callable(combiner):
        raise TypeError(f"{where}: expected a lambda as combiner, found {combiner!r}")
    names = list(inspect.signature(combiner).parameters)
    if len(names) != 2 * len(neutral):
        raise TypeError(
            f"{where}: {len(neutral)} identities need a lambda of {2 * len(neutral)} parameters "
            f"(one partial's values, then the other's); this one takes {len(names)}"
        )
    dtypes = [v.dtype for v in neutral] * 2
    params = [Var(name, dt) for name, dt in zip(names, dtypes)]
    combined = combiner(*params)
    results = combined if isinstance(combined, tuple | list) else (combined,)
    result = tuple(args.expr(r, f"{where} result") for r in results)
    if len(result) != len(neutral):
        raise TypeError(f"{where}: {len(neutral)} identities but {len(result)} results")
    for r, n in zip(result, neutral):
        if r.dtype != n.dtype:
            raise TypeError(f"{where}: a result of dtype {r.dtype} for an identity of {n.dtype}")
    count = len(neutral)
    return CommReducer(tuple(params[:count]), tuple(params[count:]), result, neutral)


def tvm_thread_allreduce(*values: object, dtype: object = "handle") -> PrimExpr:
    """``T.tvm_thread_allreduce(T.uint32(n), *values, cond, *results, *threads)``: the
    allreduce of ``n`` values over the thread indices ``threads`` (``THREAD_ALLREDUCE``)."""
    where = "T.tvm_thread_allreduce"
    if args.dtype_of(dtype, where) != parse_dtype("handle"):
        raise TypeError(f"{where}: the call's dtype is handle, found {dtype!r}")
    if not values:
        raise TypeError(f"{where}: expected the value count first")
    count = args.int_value(values[0], f"{where} count")
    if count < 1 or len(values) < 2 * count + 2:
        raise TypeError(
            f"{where}: {count} values need at least {2 * count + 2} arguments (count, values, "
            f"condition, results), found {len(values)}"
        )
    converted: list[PrimExpr] = [IntImm(count, parse_dtype("uint32"))]
    converted += [args.expr(v, where) for v in values[1:]]
    condition = converted[count + 1]
    if not condition.dtype.is_bool:
        raise TypeError(f"{where}: argument {count + 2} is the condition, a bool expression")
    for result in converted[count + 2 : 2 * count + 2]:
        if not isinstance(result, BufferLoad):
            raise TypeError(f"{where}: each result is a buffer element such as red_buf[0]")
    for thread in converted[2 * count + 2 :]:
        if not isinstance(thread, Var):
            raise TypeError(f"{where}: the last arguments are thread-bound loop variables")
    return intrinsics.THREAD_ALLREDUCE.call(*converted)


def reinterpret(first: object, second: object = None, dtype: object = None) -> PrimExpr:
    """``T.reinterpret(T.uint64(0), dtype="handle")`` (or ``T.reinterpret("handle", x)``):
    the bits of a value as another dtype."""
    where = "T.reinterpret"
    if dtype is None:
        dtype, first = first, second
    target = args.dtype_of(dtype, where)
    value = op.convert(args.expr(first, where))
    return intrinsics.REINTERPRET.call(value, dtype=target)
