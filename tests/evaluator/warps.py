"""Values exchanged between the threads of a block: warp shuffles and thread allreduces (and
the exchange that the warp-collective tensor-core instructions of ``tensor_cores.py`` use).

Both are synchronisation points: a thread offers its value, yields (the machine runs every
thread of the block up to the same point), then takes what the others offered. Every thread
counts the exchanges it makes, so the k-th exchange of one thread meets the k-th of the others
whatever else ran in between; a partner that never offered one is an error, as a lane that
misses a ``__shfl_xor_sync`` is undefined behaviour on the GPU.

- ``tw.warp_shuffle_xor(mask, value, lane_mask, width)``: the value offered by lane
  ``lane ^ lane_mask`` of the same warp (32 lanes of consecutive thread ids); both lanes must
  exist and be in ``mask``, and ``lane_mask`` must stay inside the ``width`` segment.
- ``tvm_thread_allreduce`` under its ``reduce_scope`` attribute: every thread gets the
  combination, in thread order from the identity, of the values of its group (the threads that
  differ from it only along the reduction's thread axes); a false condition offers the identity.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from typing import Any

from tilewright import ir
from tilewright.ir import CommReducer, intrinsics

WARP = 32
AXES = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


class _Exchange:
    """The offers of one block's threads: (exchange number, thread id) -> value; and what a
    warp computed from its lanes' offers: (exchange number, first lane's thread id) -> value."""

    def __init__(self) -> None:
        self.offers: dict[tuple[int, int], Any] = {}
        self.made: dict[int, int] = {}
        self.results: dict[tuple[int, int], Any] = {}


_BLOCKS: weakref.WeakKeyDictionary[object, _Exchange] = weakref.WeakKeyDictionary()


def offer(thread: Any, value: Any) -> None:
    exchange = _BLOCKS.setdefault(thread.block, _Exchange())
    number = exchange.made.get(thread.id, 0)
    exchange.made[thread.id] = number + 1
    exchange.offers[(number, thread.id)] = value


def _taken(thread: Any, partner: int, what: str) -> Any:
    exchange = _BLOCKS[thread.block]
    key = (exchange.made[thread.id] - 1, partner)
    if key not in exchange.offers:
        raise AssertionError(f"{what}: thread {partner} did not take part (thread {thread.id})")
    return exchange.offers[key]


def warp_offers(thread: Any, what: str) -> list[Any]:
    """What each of the 32 lanes of ``thread``'s warp offered at this exchange: a
    warp-collective instruction (``.sync.aligned``) needs every lane."""
    first = thread.id - thread.id % WARP
    return [_taken(thread, first + lane, what) for lane in range(WARP)]


def warp_result(thread: Any, what: str, compute: Callable[[list[Any]], Any]) -> Any:
    """``compute(warp_offers(...))``, computed once per warp and exchange."""
    exchange = _BLOCKS[thread.block]
    key = (exchange.made[thread.id] - 1, thread.id - thread.id % WARP)
    if key not in exchange.results:
        exchange.results[key] = compute(warp_offers(thread, what))
    return exchange.results[key]


def shuffle_xor(thread: Any, mask: int, lane_mask: int, width: int, threads: int) -> Any:
    """What ``__shfl_xor_sync(mask, value, lane_mask, width)`` returns to ``thread``."""
    lane = thread.id % WARP
    source = lane ^ int(lane_mask)
    partner = thread.id - lane + source
    mask = int(mask)
    what = f"tw.warp_shuffle_xor(mask={mask:#x}, lane_mask={lane_mask}, width={width})"
    if not (0 < width <= WARP and width & (width - 1) == 0 and lane_mask < width):
        raise AssertionError(f"{what}: lane_mask must stay inside a power-of-two width")
    if not (mask >> lane) & 1 or not (mask >> source) & 1:
        raise AssertionError(f"{what}: lanes {lane} and {source} must both be in the mask")
    if partner >= threads:
        raise AssertionError(f"{what}: lane {source} of thread {partner} does not exist")
    return _taken(thread, partner, what)


def allreduce(
    thread: Any,
    coords: tuple[int, int, int],
    dims: tuple[int, int, int],
    axes: tuple[int, ...],
    combine: Callable[..., tuple],
    identity: tuple,
) -> tuple:
    """The combination of the values offered by the threads of ``thread``'s group."""
    result = identity
    spans = [range(dims[a]) if a in axes else (coords[a],) for a in range(3)]
    members = sorted(
        (z * dims[1] + y) * dims[0] + x for z, y, x in itertools.product(*reversed(spans))
    )
    for member in members:
        result = combine(*result, *_taken(thread, member, "tvm_thread_allreduce"))
    return result


class WarpTranslator:
    """Mixed into ``ThreadTranslator`` (it needs ``expr``, ``emit``, ``constant``, ``store``):
    shuffles as expressions that yield, allreduces as statements that yield."""

    func: ir.PrimFunc

    def expr_Call(self, e: ir.Call) -> str:
        if not intrinsics.WARP_SHUFFLE_XOR.matches(e):
            return super().expr_Call(e)  # type: ignore[misc]
        mask, value, lane_mask, width = (self.expr(a) for a in e.args)  # type: ignore[attr-defined]
        sync = self.constant(intrinsics.WARP_SHUFFLE_XOR)  # type: ignore[attr-defined]
        take = self.constant(shuffle_xor)  # type: ignore[attr-defined]
        give = self.constant(offer)  # type: ignore[attr-defined]
        threads = block_dims(self.func)
        count = threads[0] * threads[1] * threads[2]
        taken = f"{take}(_t, {mask}, {lane_mask}, {width}, {count})"
        return f"({give}(_t, {value}), (yield {sync}), {taken})[2]"

    def stmt_AttrStmt(self, s: ir.AttrStmt) -> None:
        call = s.body.value if isinstance(s.body, ir.Evaluate) else None
        if s.key != "reduce_scope" or not isinstance(s.node, CommReducer):
            super().stmt_AttrStmt(s)  # type: ignore[misc]
            return
        if not (isinstance(call, ir.Call) and intrinsics.THREAD_ALLREDUCE.matches(call)):
            raise TypeError("evaluator: a reduce_scope attribute holds one tvm_thread_allreduce")
        self.emit_allreduce(s.node, call)

    def emit_allreduce(self, reducer: CommReducer, call: ir.Call) -> None:
        expr, emit, constant = self.expr, self.emit, self.constant  # type: ignore[attr-defined]
        n = int(call.args[0])  # type: ignore[call-overload]
        values, condition = call.args[1 : 1 + n], call.args[1 + n]
        results, threads = call.args[2 + n : 2 + 2 * n], call.args[2 + 2 * n :]
        tags = _tags(self.func)
        axes = tuple(sorted(AXES.index(tags[v]) for v in threads if isinstance(v, ir.Var)))
        dims = block_dims(self.func)
        params = ", ".join(expr(v) for v in (*reducer.lhs, *reducer.rhs))
        combine = f"(lambda {params}: ({''.join(expr(r) + ', ' for r in reducer.result)}))"
        identity = f"({''.join(expr(i) + ', ' for i in reducer.identity)})"
        mine = f"({''.join(expr(v) + ', ' for v in values)})"
        emit(f"{constant(offer)}(_t, {mine} if {expr(condition)} else {identity})")
        emit(f"yield {constant(intrinsics.THREAD_ALLREDUCE)}")
        coords = ", ".join(f"_t.index({tag!r}, {extent})" for tag, extent in zip(AXES, dims))
        name = f"_ar{len(self.lines)}"  # type: ignore[attr-defined]
        emit(
            f"{name} = {constant(allreduce)}(_t, ({coords}), {dims}, {axes}, {combine}, {identity})"
        )
        for i, result in enumerate(results):
            assert isinstance(result, ir.BufferLoad)
            emit(self.store(result.buffer, result.indices, f"{name}[{i}]"))  # type: ignore[attr-defined]


def _tags(func: ir.PrimFunc) -> dict[ir.Var, str]:
    found: dict[ir.Var, str] = {}

    def visit(node: object) -> None:
        if isinstance(node, ir.For) and node.kind is ir.ForKind.THREAD_BINDING:
            found[node.loop_var] = node.thread_tag

    ir.post_order_visit(func.body, visit)
    return found


def block_dims(func: ir.PrimFunc) -> tuple[int, int, int]:
    extents = {tag: 1 for tag in AXES}

    def visit(node: object) -> None:
        if (
            isinstance(node, ir.For)
            and node.kind is ir.ForKind.THREAD_BINDING
            and node.thread_tag in extents
            and isinstance(node.extent, ir.IntImm)
        ):
            extents[node.thread_tag] = node.extent.value

    ir.post_order_visit(func.body, visit)
    return extents["threadIdx.x"], extents["threadIdx.y"], extents["threadIdx.z"]
