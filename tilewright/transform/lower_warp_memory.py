"""``warp`` buffers → each lane's registers.

A buffer in ``warp`` scope holds one value per (lane, register) of a warp: its last two
dimensions are the 32 lanes and each lane's ``W`` registers (the layout tensor-core fragments
take after ``transform_layout``). This pass makes it a ``local`` buffer of shape
``(..., W)``: lane ``t``'s registers are thread ``t``'s own. It runs on N-d buffers, after
they are placed, shrunk and multi-buffered, before they are flattened.

Two kinds of access are lowered; anything else is refused (``WarpMemoryError``):

* a load or store whose lane index is the thread's own lane (``threadIdx.x``, which must run
  over exactly the 32 lanes of a warp);
* a tensor-core intrinsic's fragment operand: its storage (``tw.region_data``) and offset
  (``tw.region_offset`` of a region spanning all 32 lanes, plus ``W * lane`` plus a register
  offset for ``ptx_ldmatrix`` and ``ptx_mma``, which address the calling lane's registers;
  nothing more for ``mma_fill`` and ``mma_store``, which take the fragment's start).

Example::

    # before: A_warp = alloc((2, 32, 8), "float16", "warp")
    ptx_ldmatrix(..., region_data(A_warp[i, 0, 0], A_warp[i, 31, 7]),
                 region_offset(A_warp[i, 0, 0], A_warp[i, 31, 7]) + 8 * tx, ...)
    # after: A_warp = alloc((2, 8), "float16", "local")
    ptx_ldmatrix(..., region_data(A_warp[i, 0], A_warp[i, 7]),
                 region_offset(A_warp[i, 0], A_warp[i, 7]), ...)
"""

from __future__ import annotations

from tilewright.arith import Analyzer
from tilewright.ir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    For,
    ForKind,
    IntImm,
    Mutator,
    PrimExpr,
    PrimFunc,
    Range,
    Stmt,
    Var,
    collect_vars,
    intrinsics,
    op,
)
from tilewright.ir.functor import post_order_visit

WARP_SIZE = 32

# Tensor-core intrinsics → their fragment operands: (storage argument, offset argument,
# whether the offset addresses the calling lane's registers rather than the fragment's start).
FRAGMENT_OPERANDS: dict[intrinsics.Intrinsic, tuple[tuple[int, int, bool], ...]] = {
    intrinsics.PTX_LDMATRIX: ((3, 4, True),),
    intrinsics.PTX_MMA: ((6, 7, True), (8, 9, True), (10, 11, True)),
    intrinsics.MMA_FILL: ((1, 2, False),),
    intrinsics.MMA_STORE: ((3, 4, False),),
}


class WarpMemoryError(ValueError):
    """A warp buffer accessed in a way that has no per-lane form."""


def lower_warp_memory(func: PrimFunc) -> PrimFunc:
    """Lower the ``warp`` buffers of ``func`` (see the module docstring)."""
    warp: dict[Var, Buffer] = {}

    def find(node: object) -> None:
        if isinstance(node, Allocate) and node.buffer.scope == "warp":
            warp[node.buffer.data] = node.buffer

    post_order_visit(func.body, find)
    if not warp:
        return func
    lowered = {}
    for data, buffer in warp.items():
        shape = buffer.shape
        lanes = shape[-2] if len(shape) >= 2 else None
        if not (isinstance(lanes, IntImm) and lanes.value == WARP_SIZE) or not isinstance(
            shape[-1], IntImm
        ):
            dims = ", ".join(str(s) for s in shape)
            raise WarpMemoryError(
                f"{func.name}: warp buffer {buffer.name} has shape ({dims}); its last two "
                f"dimensions must be the {WARP_SIZE} lanes and each lane's registers (store it "
                "in a fragment layout with transform_layout)"
            )
        lowered[data] = buffer.replace(scope="local", shape=shape[:-2] + shape[-1:])
    return func.with_body(_Lowering(func.name, lowered).visit(func.body))


class _Lowering(Mutator):
    def __init__(self, func_name: str, lowered: dict[Var, Buffer]) -> None:
        super().__init__()
        self.func_name = func_name
        self.lowered = lowered
        self.lanes: list[For] = []  # the enclosing threadIdx.x loops
        self.analyzer = Analyzer()

    def fail(self, message: str) -> WarpMemoryError:
        return WarpMemoryError(f"{self.func_name}: {message}")

    def visit_For(self, loop: For) -> Stmt:
        self.analyzer.bind(loop.loop_var, Range(loop.min, loop.extent))
        if loop.kind is not ForKind.THREAD_BINDING or loop.thread_tag != "threadIdx.x":
            return self.generic_visit(loop)
        # Checked where a warp buffer is used: another kernel of the function may bind
        # threadIdx.x to any number of threads.
        self.lanes.append(loop)
        try:
            return self.generic_visit(loop)
        finally:
            self.lanes.pop()

    def check_lanes(self) -> None:
        """A warp buffer is used here: threadIdx.x must be the 32 lanes of a warp."""
        for loop in self.lanes:
            if not (isinstance(loop.extent, IntImm) and loop.extent.value == WARP_SIZE):
                raise self.fail(
                    f"warp buffers need threadIdx.x to run over the {WARP_SIZE} lanes of a "
                    f"warp; loop {loop.loop_var.name} binds it to {loop.extent} threads"
                )

    def visit_Allocate(self, alloc: Allocate) -> Stmt:
        body = self.visit(alloc.body)
        return Allocate(self.lowered.get(alloc.buffer.data, alloc.buffer), body)

    # ---- plain accesses ------------------------------------------------------------------
    def own_lane(self, index: PrimExpr) -> bool:
        self.check_lanes()
        return any(self.analyzer.can_prove_equal(index, lane.loop_var) for lane in self.lanes)

    def access(self, buffer: Buffer, indices: tuple[PrimExpr, ...], what: str):
        new = self.lowered[buffer.data]
        lane = indices[-2]
        if not self.own_lane(lane):
            raise self.fail(
                f"{what} of warp buffer {buffer.name} at lane {lane}, which is not the "
                "thread's own lane (threadIdx.x); a warp buffer is read and written by its own "
                "lanes or through tensor-core intrinsics"
            )
        return new, indices[:-2] + indices[-1:]

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        load = self.generic_visit(load)
        if load.buffer.data not in self.lowered:
            return load
        buffer, indices = self.access(load.buffer, load.indices, "a load")
        return BufferLoad(buffer, indices)

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        store = self.generic_visit(store)
        if store.buffer.data not in self.lowered:
            return store
        buffer, indices = self.access(store.buffer, store.indices, "a store")
        return store.replace(buffer=buffer, indices=indices)

    # ---- intrinsics ----------------------------------------------------------------------
    def visit_Call(self, call: Call) -> PrimExpr:
        if intrinsics.is_call(call, intrinsics.REGION_DATA, intrinsics.REGION_OFFSET):
            first = call.args[0]
            if isinstance(first, BufferLoad) and first.buffer.data in self.lowered:
                raise self.fail(
                    f"warp buffer {first.buffer.name} is handed to something other than a "
                    "tensor-core intrinsic's fragment operand"
                )
            return self.generic_visit(call)
        operands = next(
            (ops for intrin, ops in FRAGMENT_OPERANDS.items() if intrin.matches(call)), ()
        )
        args = list(call.args)
        done: set[int] = set()
        for data_at, offset_at, per_lane in operands:
            data = args[data_at]
            if not isinstance(data, Call) or not intrinsics.REGION_DATA.matches(data):
                continue
            if not self._is_warp(data.args[0]):
                continue
            self.check_lanes()
            args[data_at] = self.region(data, call)
            args[offset_at] = self.offset(args[offset_at], per_lane, call)
            done.update((data_at, offset_at))
        for index, arg in enumerate(args):
            if index not in done:
                args[index] = self.visit(arg)
        return call.replace(args=tuple(args))

    def _is_warp(self, load: object) -> bool:
        return isinstance(load, BufferLoad) and load.buffer.data in self.lowered

    def region(self, call: Call, user: Call) -> Call:
        """A ``region_data``/``region_offset`` of a whole warp fragment, lanes dropped."""
        first, last = call.args
        assert isinstance(first, BufferLoad) and isinstance(last, BufferLoad)
        spans = self.analyzer.can_prove_equal(first.indices[-2], 0) and (
            self.analyzer.can_prove_equal(last.indices[-2], WARP_SIZE - 1)
        )
        if not spans:
            raise self.fail(
                f"{user.op} takes a fragment of warp buffer {first.buffer.name} that does not "
                f"span the {WARP_SIZE} lanes (lanes {first.indices[-2]} to {last.indices[-2]})"
            )
        new = self.lowered[first.buffer.data]
        ends = (
            BufferLoad(new, first.indices[:-2] + first.indices[-1:]),
            BufferLoad(new, last.indices[:-2] + last.indices[-1:]),
        )
        return call.replace(args=ends)

    def offset(self, expr: PrimExpr, per_lane: bool, user: Call) -> PrimExpr:
        """``region_offset(...) + W * lane + r`` → ``region_offset(...) + r`` (lanes dropped)."""
        found: list[Call] = []

        def find(node: object) -> None:
            if isinstance(node, Call) and intrinsics.REGION_OFFSET.matches(node):
                found.append(node)

        post_order_visit(expr, find)
        if len(found) != 1 or not self._is_warp(found[0].args[0]):
            raise self.fail(f"{user.op}: the offset {expr} does not name one warp fragment")
        start = found[0]
        first = start.args[0]
        assert isinstance(first, BufferLoad)  # _is_warp checked it
        buffer = first.buffer
        width = buffer.shape[-1]
        probe = Var("start", expr.dtype)
        rest = self.analyzer.simplify(op.sub(_replace(expr, start, probe), probe))
        if probe in collect_vars(rest):
            raise self.fail(f"{user.op}: the offset {expr} is not the fragment's start plus a step")
        lane = self.analyzer.simplify(op.floordiv(rest, width))
        register = self.analyzer.simplify(op.floormod(rest, width))
        if per_lane and not self.own_lane(lane):
            raise self.fail(
                f"{user.op} addresses the registers of lane {lane} of warp buffer "
                f"{buffer.name}, not the calling thread's (threadIdx.x)"
            )
        if not per_lane and not self.analyzer.can_prove_equal(rest, 0):
            raise self.fail(
                f"{user.op} takes the start of a fragment of warp buffer "
                f"{buffer.name}, not an offset {rest} into it"
            )
        return op.add(self.region(start, user), register)


def _replace(expr: PrimExpr, old: Call, new: PrimExpr) -> PrimExpr:
    class _Swap(Mutator):
        def visit_Call(self, call: Call) -> PrimExpr:
            return new if call is old else self.generic_visit(call)

    return _Swap().visit(expr)
