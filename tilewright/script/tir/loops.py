"""Loop frames of the ``T`` namespace: ``T.grid``, ``T.serial``, ``T.parallel``,
``T.vectorized``, ``T.unroll`` and ``T.thread_binding``."""

from __future__ import annotations

from tilewright.ir.expr import IntImm
from tilewright.ir.stmt import Attrs, ForKind, attrs
from tilewright.script.parser.frames import LoopFrame, LoopSpec
from tilewright.script.tir import arguments as args


def _loop(
    where: str, kind: ForKind, start: object, stop: object, thread: str, annotations: object
) -> LoopFrame:
    if stop is None:
        low, extent = args.int_expr(0, where), args.int_expr(start, where)
        if extent.dtype != low.dtype:
            low = IntImm(0, extent.dtype)
    else:
        low, high = args.int_expr(start, where), args.int_expr(stop, where)
        extent = args.span(low, high)
    notes: Attrs = ()
    if annotations:
        # attrs() freezes each value into an AttrValue (lists to tuples, dicts to pairs).
        notes = attrs(args.attr_dict(annotations, f"{where} annotations"))
    return LoopFrame((LoopSpec(low, extent, kind, thread, notes),))


def serial(start: object, stop: object = None, *, annotations: object = None) -> LoopFrame:
    """``for i in T.serial(n)`` (``[0, n)``) or ``T.serial(a, b)`` (``[a, b)``)."""
    return _loop("T.serial", ForKind.SERIAL, start, stop, "", annotations)


def parallel(start: object, stop: object = None, *, annotations: object = None) -> LoopFrame:
    """``for i in T.parallel(n)``: iterations run in parallel on CPU threads."""
    return _loop("T.parallel", ForKind.PARALLEL, start, stop, "", annotations)


def vectorized(start: object, stop: object = None, *, annotations: object = None) -> LoopFrame:
    """``for i in T.vectorized(n)``: the loop becomes vector operations."""
    return _loop("T.vectorized", ForKind.VECTORIZED, start, stop, "", annotations)


def unroll(start: object, stop: object = None, *, annotations: object = None) -> LoopFrame:
    """``for i in T.unroll(n)``: the loop is unrolled."""
    return _loop("T.unroll", ForKind.UNROLLED, start, stop, "", annotations)


def thread_binding(
    start: object, stop: object = None, thread: object = None, *, annotations: object = None
) -> LoopFrame:
    """``for tx in T.thread_binding(128, thread="threadIdx.x")``: a loop bound to a GPU axis."""
    if isinstance(stop, str) and thread is None:
        stop, thread = None, stop
    if not isinstance(thread, str) or not thread:
        raise TypeError(
            'T.thread_binding: expected thread="threadIdx.x" (or another thread axis), '
            f"found {thread!r}"
        )
    return _loop("T.thread_binding", ForKind.THREAD_BINDING, start, stop, thread, annotations)


def grid(*extents: object) -> LoopFrame:
    """``for i, j, k in T.grid(64, 64, 64)``: nested serial loops from 0, outermost first."""
    if not extents:
        raise TypeError("T.grid: expected at least one extent")
    loops = []
    for n, extent in enumerate(extents):
        value = args.int_expr(extent, f"T.grid extent {n}")
        loops.append(LoopSpec(IntImm(0, value.dtype), value, ForKind.SERIAL))
    return LoopFrame(tuple(loops))
