"""``permuted_layout`` (a block annotation, TVM's name) → a shared tile stored XOR-swizzled.

A tensor-core GEMM fills shared tiles with 16-byte ``cp.async`` copies and reads them with
``ldmatrix``, which takes one 16-byte row chunk from each of 8 lanes at a time. Stored row
after row, a tile whose rows are a multiple of 128 bytes puts the chunks ``ldmatrix`` reads
together in one bank group (an 8-way conflict). Padding the rows (``storage_align``) moves
them apart but leaves each row straddling two 128-byte lines, so every copy into the tile
costs two shared-memory wavefronts instead of one (2.6x the ideal on the H200, with shared
memory the busiest unit of the GEMM). Swizzling keeps the rows dense: chunk ``c`` of row
``r`` is stored as chunk ``c ^ (r % 8)`` of that row, so 8 rows read at one column land in 8
bank groups and a row's chunks still fill one line.

``sch.annotate(fetch_block, "permuted_layout", 1)`` asks it for the shared buffer the block
writes. Every access to that buffer is rewritten, so the layout is invisible to the program:

- ``collect_permuted_layout`` (before ``lower_blocks``) records the annotated blocks'
  buffers on the function (attribute ``tw.permuted_layout``);
- ``plan_permuted_layout`` (after ``apply_storage_align``, allocations final) reads each one's
  row: ``key`` is the row's length in elements, or, for rows shorter than 128 bytes, the
  elements of 128 bytes (rows that share a line count as one row);
- ``inject_permuted_layout`` (after ``lower_async_copy``, indices flat) maps element ``i``
  to ``i ^ ((i // key) % 8 * chunk)`` (``chunk``: the elements of 16 bytes) in loads, stores
  and vector accesses inside one chunk, ``cp.async`` destinations and ``ldmatrix`` lane
  addresses. Any other use of the buffer's storage is refused: the pass cannot follow it.

Example::

    sch.annotate(sch.cache_read(block, 0, "shared"), "permuted_layout", 1)
    # lowered: cp.async(&A_shared[i ^ (i // 64 % 8 * 8)], &A[...], 16)
"""

from __future__ import annotations

import math

from tilewright.arith import Analyzer
from tilewright.arith.linear_form import LinearForm, build, is_linear_dtype, to_form
from tilewright.ir import (
    Add,
    Allocate,
    Block,
    BufferLoad,
    BufferStore,
    Call,
    FloorDiv,
    FloorMod,
    For,
    IntImm,
    Mul,
    Mutator,
    PrimExpr,
    PrimFunc,
    Ramp,
    Stmt,
    Var,
    Visitor,
    intrinsics,
    op,
    pre_order_visit,
)
from tilewright.ir.dtype import int32

ANNOTATION = "permuted_layout"
ATTR = "tw.permuted_layout"
CHUNK_BYTES, LINE_BYTES, ROWS = 16, 128, 8  # what one lane moves; a bank line; the XOR's span


class PermutedLayoutError(ValueError):
    """A ``permuted_layout`` request the lowering cannot honour (the message says why)."""


def collect_permuted_layout(func: PrimFunc) -> PrimFunc:
    """Record the buffers written by blocks annotated ``permuted_layout`` (see the module)."""
    found: list[tuple[Var, str]] = []

    def visit(node: object) -> bool:
        if isinstance(node, Block) and dict(node.annotations).get(ANNOTATION):
            if len(node.writes) != 1:
                raise PermutedLayoutError(
                    f"permuted_layout on block {node.name!r}: the block writes "
                    f"{len(node.writes)} buffers; annotate the copy that fills one shared tile"
                )
            buffer = node.writes[0].buffer
            if all(data is not buffer.data for data, _ in found):
                found.append((buffer.data, node.name))
        return True

    pre_order_visit(func.body, visit)
    return func.with_attr(ATTR, tuple(found)) if found else func


def plan_permuted_layout(func: PrimFunc) -> PrimFunc:
    """Replace each recorded buffer by ``(data, key, chunk)`` read off its (N-d) allocation (the
    module docstring), refusing buffers the swizzle does not fit."""
    recorded = func.attr(ATTR)
    if not recorded:
        return func
    assert isinstance(recorded, tuple)  # collect_permuted_layout's (data, block name) pairs
    blocks = {data: name for data, name in recorded}
    plans: list[tuple[Var, int, int]] = []

    def visit(node: object) -> bool:
        if isinstance(node, Allocate) and node.buffer.data in blocks:
            plans.append(_plan(node, blocks[node.buffer.data]))
        return True

    pre_order_visit(func.body, visit)
    missing = [name for data, name in blocks.items() if all(p[0] is not data for p in plans)]
    if missing:
        raise PermutedLayoutError(
            f"permuted_layout on block {missing[0]!r}: the buffer it writes is not allocated "
            "in the kernel (a parameter or a global buffer keeps its layout)"
        )
    return func.with_attr(ATTR, tuple(plans))


def _plan(alloc: Allocate, block: str) -> tuple[Var, int, int]:
    buffer = alloc.buffer
    where = f"permuted_layout on block {block!r} (buffer {buffer.name})"
    if not buffer.scope.startswith("shared"):
        raise PermutedLayoutError(f"{where}: only shared memory is swizzled, not {buffer.scope}")
    if buffer.strides:
        raise PermutedLayoutError(
            f"{where}: the buffer also has storage_align strides; pad or swizzle, not both"
        )
    if not all(isinstance(extent, IntImm) for extent in buffer.shape):
        raise PermutedLayoutError(f"{where}: the buffer's shape {buffer.shape} is not constant")
    shape = [extent.value for extent in buffer.shape if isinstance(extent, IntImm)]
    size = buffer.dtype.bytes
    row_bytes, total = shape[-1] * size, size * math.prod(shape)
    fits = row_bytes % LINE_BYTES == 0 or (row_bytes >= CHUNK_BYTES and LINE_BYTES % row_bytes == 0)
    if not fits or total % (LINE_BYTES * ROWS) or CHUNK_BYTES % size:
        raise PermutedLayoutError(
            f"{where}: rows of {row_bytes} bytes in {total} bytes; the swizzle needs rows of "
            f"16, 32 or 64 bytes or a multiple of 128, and a multiple of 1024 bytes in all"
        )
    key = max(shape[-1], LINE_BYTES // size)
    return buffer.data, key, CHUNK_BYTES // size


def swizzled(index: PrimExpr, key: int, chunk: int) -> PrimExpr:
    """Where element ``index`` of a permuted buffer is stored (the module docstring).

    Example: ``swizzled(i, 64, 8)`` is ``i ^ (i // 64 % 8 * 8)``: element 64 (row 1, chunk
    0) is stored at 72 (chunk 1).
    """
    return index ^ (op.floormod(op.floordiv(index, key), ROWS) * chunk)


def swizzled_index(index: PrimExpr, key: int, chunk: int, nonnegative: set[Var]) -> PrimExpr:
    """``swizzled(index)`` with the terms that cannot change the XOR kept outside it.

    The XOR reads bits of ``index // key`` below ``8 * key`` and flips bits below that too,
    so for ``H`` a multiple of ``8 * key`` and ``L >= 0``, ``swizzled(H + L)`` is ``H +
    swizzled(L)``: a pipeline stage's or a k step's offset stays an addition, and what is
    left (lane terms) is the same in every iteration, where the compiler hoists it. ``L`` is
    taken as non-negative when each of its terms has a positive coefficient and is built from
    ``nonnegative`` variables (loops from 0, thread indices) by ``*``, ``//`` and ``%`` with
    positive constants; otherwise the whole index is swizzled.

    Example: with loops ``stage`` and ``lane``, ``swizzled_index(stage * 8192 + lane * 8, 64,
    8, {stage, lane})`` is ``stage * 8192 + swizzled(lane * 8)``.
    """
    if not is_linear_dtype(index.dtype):
        return swizzled(index, key, chunk)
    span = ROWS * key
    form = to_form(index)
    high, low = LinearForm(index.dtype, form.const - form.const % span), LinearForm(index.dtype)
    low.const = form.const % span
    for term_key, term, coef in form.items():
        if coef % span == 0:
            high.add_term(term, coef, term_key)
        elif coef > 0 and _nonnegative(term, nonnegative):
            low.add_term(term, coef, term_key)
        else:
            return swizzled(index, key, chunk)
    if high.is_const and high.const == 0:
        return swizzled(index, key, chunk)
    return op.add(build(high), swizzled(build(low), key, chunk))


def _nonnegative(expr: PrimExpr, known: set[Var]) -> bool:
    if isinstance(expr, Var):
        return expr in known
    if isinstance(expr, IntImm):
        return expr.value >= 0
    if isinstance(expr, FloorMod):
        return isinstance(expr.b, IntImm) and expr.b.value > 0
    if isinstance(expr, Mul | FloorDiv | Add):
        return _nonnegative(expr.a, known) and _nonnegative(expr.b, known)
    return False


def inject_permuted_layout(func: PrimFunc) -> PrimFunc:
    """Rewrite every access of the buffers ``plan_permuted_layout`` recorded (see the module)."""
    plans = func.attr(ATTR)
    if not plans:
        return func
    assert isinstance(plans, tuple)  # plan_permuted_layout's (data, key, chunk) triples
    table = {data: (int(key), int(chunk)) for data, key, chunk in plans}
    body = _Swizzle(table).visit(func.body)
    _refuse_other_uses(body, table)
    attrs = tuple((k, v) for k, v in func.attrs if k != ATTR)
    return func.replace(body=body, attrs=attrs)


class _Swizzle(Mutator):
    def __init__(self, table: dict[Var, tuple[int, int]]) -> None:
        super().__init__()
        self.table = table
        self.analyzer = Analyzer()
        self.nonnegative: set[Var] = set()  # loop variables counting from 0 (threads too)

    def visit_For(self, loop: For) -> Stmt:
        if isinstance(loop.min, IntImm) and loop.min.value >= 0:
            self.nonnegative.add(loop.loop_var)
        return self.generic_visit(loop)

    def swizzle(self, index: PrimExpr, key: int, chunk: int) -> PrimExpr:
        return swizzled_index(index, key, chunk, self.nonnegative)

    def index(self, load: BufferLoad | BufferStore) -> tuple[PrimExpr, ...]:
        indices = self.visit(load.indices)
        plan = self.table.get(load.buffer.data)
        if plan is None:
            return indices
        key, chunk = plan
        (index,) = indices
        if isinstance(index, Ramp):
            lanes = index.lanes
            stride = index.stride
            inside = (
                isinstance(stride, IntImm)
                and stride.value == 1
                and self.analyzer.can_prove(op.floormod(index.base, chunk) + lanes <= chunk)
            )
            if not inside:
                raise PermutedLayoutError(
                    f"permuted_layout: the vector access {load.buffer.name}[{index}] may cross "
                    f"a {CHUNK_BYTES}-byte chunk, which the swizzle moves apart"
                )
            return (Ramp(self.swizzle(index.base, key, chunk), stride, lanes),)
        return (self.swizzle(index, key, chunk),)

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        return load.replace(indices=self.index(load))

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        return store.replace(value=self.visit(store.value), indices=self.index(store))

    def visit_Call(self, call: Call) -> PrimExpr:
        if intrinsics.PTX_LDMATRIX.matches(call):
            return self.ldmatrix(call)
        return call.replace(args=self.visit(call.args))

    def ldmatrix(self, call: Call) -> PrimExpr:
        # (trans, num, type, local, local_offset, smem, smem_offset): smem (an access_ptr of
        # the tile) plus smem_offset is each lane's row address; a permuted tile's becomes an
        # access_ptr of that one 16-byte chunk, swizzled, and the offset 0.
        *head, smem, smem_offset = call.args
        if isinstance(smem, Call) and intrinsics.ACCESS_PTR.matches(smem):
            region, offset, _, mask = smem.args
            data = intrinsics.data_var(region)
            if data in self.table:
                key, chunk = self.table[data]
                lane = self.swizzle(offset + smem_offset, key, chunk)
                assert isinstance(region, Call)  # data_var found a tw.region_data call
                first = region.args[0]
                assert isinstance(first, BufferLoad)
                # The region is now the lane's chunk: what the call reads, for every analysis.
                chunk_region = region.replace(
                    args=(
                        first.replace(indices=(lane,)),
                        first.replace(indices=(lane + chunk - 1,)),
                    )
                )
                pointer = smem.replace(args=(chunk_region, lane, IntImm(chunk, int32), mask))
                return call.replace(args=(*self.visit(tuple(head)), pointer, IntImm(0, int32)))
        return call.replace(args=self.visit(call.args))


def _refuse_other_uses(body: Stmt, table: dict[Var, tuple[int, int]]) -> None:
    """A permuted buffer's storage may reach only loads, stores, ``address_of`` of one
    element (a ``cp.async`` destination: 16 bytes at most, inside a chunk) and the rewritten
    ``ldmatrix`` lane addresses (an ``access_ptr`` of one chunk)."""

    def refuse(call: Call) -> None:
        raise PermutedLayoutError(
            f"permuted_layout: {call.op} reaches the swizzled buffer through its storage, an "
            "access whose addresses the layout cannot follow"
        )

    class Uses(Visitor):
        def visit_Call(self, call: Call) -> None:
            args = call.args
            if intrinsics.PTX_LDMATRIX.matches(call):
                smem = args[-2]
                if (
                    isinstance(smem, Call)
                    and intrinsics.ACCESS_PTR.matches(smem)
                    and intrinsics.data_var(smem.args[0]) in table
                ):
                    args = (*args[:-2], smem.args[1], args[-1])  # its offset alone
            for arg in args:
                if isinstance(arg, Var | Call) and intrinsics.data_var(arg) in table:
                    refuse(call)
                if (
                    isinstance(arg, Call)
                    and intrinsics.ACCESS_PTR.matches(arg)
                    and intrinsics.data_var(arg.args[0]) in table
                ):
                    refuse(call)
            if intrinsics.CP_ASYNC.matches(call) and _addressed(args[1]) in table:
                raise PermutedLayoutError(
                    "permuted_layout: a cp.async reads the swizzled buffer (only its "
                    "destination may be one)"
                )
            self.visit(args)

    Uses().visit(body)


def _addressed(arg: PrimExpr) -> Var | None:
    if isinstance(arg, Call) and intrinsics.ADDRESS_OF.matches(arg):
        load = arg.args[0]
        if isinstance(load, BufferLoad):
            return load.buffer.data
    return None
