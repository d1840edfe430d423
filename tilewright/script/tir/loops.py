"""Loop frames of the ``T`` namespace: ``T.grid``, ``T.serial``, ``T.parallel``,
``T.vectorized``, ``T.unroll`` and ``T.thread_binding``; ``T.env_thread`` and
``T.launch_thread``, TVM's other way to bind a thread axis."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tilewright.ir.dtype import int32
from tilewright.ir.expr import IntImm, PrimExpr, Var
from tilewright.ir.stmt import Attrs, For, ForKind, Stmt, attrs
from tilewright.script.parser.frames import EnclosingDirective, LoopFrame, LoopSpec, MetaVar
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


# Variables made by T.env_thread → the thread axis each names (TVM's IterVar of an env
# thread); T.launch_thread reads it.
_ENV_THREADS: dict[Var, str] = {}


def env_thread(thread: object) -> MetaVar:
    """``tx = T.env_thread("threadIdx.x")``: a variable for a thread axis, bound by a later
    ``T.launch_thread(tx, 32)`` (the name is bound to the variable itself, with no let)."""
    return MetaVar(_env_var(thread, "T.env_thread"))


def _env_var(thread: object, where: str) -> Var:
    if not isinstance(thread, str) or not thread:
        raise TypeError(f'{where}: expected a thread axis such as "threadIdx.x", found {thread!r}')
    var = Var(thread.replace(".", "_"), int32)
    _ENV_THREADS[var] = thread
    return var


@dataclass(frozen=True)
class LaunchThread(EnclosingDirective):
    """``T.launch_thread(tx, 32)``: the rest of the body runs on ``tx``'s thread axis, as a
    thread-binding loop over it (TVM writes a ``thread_extent`` attribute; here the loop is
    the one form of a bound axis)."""

    var: Var
    thread: str
    extent: PrimExpr

    def enclose(self, names: list[str] | None) -> tuple[object, Callable[[Stmt], Stmt]]:
        zero = IntImm(0, self.extent.dtype)

        def wrap(body: Stmt) -> Stmt:
            return For(self.var, zero, self.extent, ForKind.THREAD_BINDING, body, self.thread)

        return self.var, wrap


def launch_thread(thread: object, extent: object) -> LaunchThread:
    """``T.launch_thread(tx, 32)`` (``tx`` from ``T.env_thread``) or
    ``tx = T.launch_thread("threadIdx.x", 32)``: bind a thread axis over the rest of the
    body."""
    where = "T.launch_thread"
    size = args.int_expr(extent, where)
    if isinstance(thread, str):
        var = _env_var(thread, where)
    elif isinstance(thread, Var) and thread in _ENV_THREADS:
        var = thread
    else:
        raise TypeError(
            f"{where}: expected a variable from T.env_thread or a thread axis such as "
            f'"threadIdx.x", found {thread!r}'
        )
    return LaunchThread(var, _ENV_THREADS[var], size)
