"""``tensorize``: replace what a block computes by a tensor intrinsic's implementation.

The block's body (loops and one block, as ``blockize`` leaves them) must match the
intrinsic's ``desc`` root block body: the same loops (extents, kinds) in order, and the same
computation, with each ``desc`` buffer standing for a region of one buffer of the block (its
indices shifted by offsets that do not depend on the loops inside the block; extra leading
dimensions of the block's buffer are fixed there). Block iterators are compared through their
bindings, and a reduction iterator must stay a reduction. Then the block's body becomes the
``impl`` body, its buffers bound by ``T.match_buffer`` to those regions (their data and
``elem_offset`` come from the match when lowering).

Refused with what differs: a block with an init (``decompose_reduction`` first), loops or
expressions that differ, a ``desc`` buffer that stands for two regions, offsets that move
with the inner loops.

Example::

    # the block                           # after tensorize(C_o, "dot4")
    with T.block("C_o"):                  with T.block("C_o"):
        for k_1 in range(4):                  A_1 = T.match_buffer(A[vi_o, vk_o * 4:vk_o * 4 + 4])
            with T.block("C"):                T.evaluate(T.call_extern("int32", "dot4", ...))
                C[vi] += A[vi, vk] * B[vk]
"""

from __future__ import annotations

from tilewright.arith.analyzer import Analyzer
from tilewright.ir import op
from tilewright.ir.buffer import Buffer, BufferRegion
from tilewright.ir.expr import BufferLoad, FloatImm, IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import bound_vars, collect_vars, substitute
from tilewright.ir.node import Node
from tilewright.ir.stmt import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    IterKind,
    MatchBufferRegion,
    SeqStmt,
    Stmt,
)
from tilewright.ir.structural import structural_equal
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.tensor_intrin import TensorIntrin
from tilewright.schedule.tree import Site, update


class _Mismatch(Exception):
    pass


def tensorize(site: Site, intrin: TensorIntrin) -> PrimFunc:
    """The function with the block of ``site`` computed by ``intrin`` (module docstring)."""
    block = site.node
    assert isinstance(block, Block)
    if block.init is not None:
        raise ScheduleError(
            "tensorize",
            "tensorize-init",
            f"block {block.name!r} has an init; decompose_reduction first, then tensorize "
            "the update",
            site.func,
            block,
        )
    matcher = _Matcher(intrin)
    try:
        matcher.stmt(intrin.desc_root.body, block.body)
        offsets = matcher.regions()
    except _Mismatch as err:
        raise ScheduleError(
            "tensorize",
            "tensorize-match",
            f"block {block.name!r} does not compute what tensor intrinsic {intrin.name!r} "
            f"describes: {err}",
            site.func,
            block,
        ) from None
    fresh: dict[Var, PrimExpr] = {}
    views = []
    for desc_buffer, impl_buffer in zip(intrin.desc_buffers, intrin.impl_buffers):
        target, region = offsets[desc_buffer]
        data = Var(impl_buffer.data.name, impl_buffer.data.dtype)
        fresh[impl_buffer.data] = data
        changes: dict[str, object] = {"data": data}
        if isinstance(impl_buffer.elem_offset, Var):
            offset = Var(impl_buffer.elem_offset.name, impl_buffer.elem_offset.dtype)
            fresh[impl_buffer.elem_offset] = offset
            changes["elem_offset"] = offset
        view = impl_buffer.replace(**changes)
        views.append(MatchBufferRegion(view, BufferRegion(target, tuple(region))))
    for var in bound_vars(intrin.impl_root.body):
        fresh.setdefault(var, Var(var.name, var.dtype))
    body = substitute(intrin.impl_root.body, fresh)
    # What the block touches is what the implementation says it touches, placed at the
    # matched regions (its body reaches the buffers through their addresses only).
    placed = {impl: offsets[desc] for desc, impl in zip(intrin.desc_buffers, intrin.impl_buffers)}
    reads = tuple(_placed(r, placed) for r in intrin.impl_root.reads)
    writes = tuple(_placed(r, placed) for r in intrin.impl_root.writes)
    new = update(
        block,
        body=body,
        match_buffers=(*block.match_buffers, *views),
        reads=reads,
        writes=writes,
    )
    return site.replaced(new)


def _placed(region: BufferRegion, placed: dict[Buffer, tuple[Buffer, list[Range]]]) -> BufferRegion:
    """An implementation's region of one of its buffers, as a region of the buffer matched."""
    target, ranges = placed[region.buffer]
    lead = len(ranges) - len(region.region)
    simplify = Analyzer().simplify
    inner = [
        Range(simplify(op.add(outer.min, r.min)), r.extent)
        for outer, r in zip(ranges[lead:], region.region, strict=True)
    ]
    return BufferRegion(target, (*ranges[:lead], *inner))


class _Matcher:
    """Walks ``desc`` and the block's body together (``desc`` left, the block's right)."""

    def __init__(self, intrin: TensorIntrin) -> None:
        self.params = {id(b): b for b in intrin.desc_buffers}
        self.vars: dict[Var, Var] = {}  # desc loop variable -> the block's
        self.inner: set[Var] = set()  # the block's loops (offsets must not use them)
        # desc buffer -> (the block's buffer, index offsets, first trailing dimension)
        self.found: dict[Buffer, tuple[Buffer, list[PrimExpr], int]] = {}
        self.analyzer = Analyzer()

    def regions(self) -> dict[Buffer, tuple[Buffer, list[Range]]]:
        out = {}
        for desc in self.params.values():
            if desc not in self.found:
                raise _Mismatch(f"the block does not access anything for desc buffer {desc.name}")
            target, offsets, lead = self.found[desc]
            ranges = [Range(o, IntImm(1, o.dtype)) for o in offsets[:lead]]
            for offset, extent in zip(offsets[lead:], desc.shape):
                ranges.append(Range(offset, extent))
            out[desc] = (target, ranges)
        return out

    # ---- statements ----------------------------------------------------------------------
    def stmt(self, d: Stmt, t: Stmt) -> None:
        if isinstance(d, For) and isinstance(t, For):
            if not (_const(d.extent) == _const(t.extent) is not None and _const(d.min) == 0):
                raise _Mismatch(f"loop {t.loop_var.name} runs {t.extent} times, desc's {d.extent}")
            if _const(t.min) != 0 or d.kind is not t.kind:
                raise _Mismatch(f"loop {t.loop_var.name} differs from desc's {d.loop_var.name}")
            self.vars[d.loop_var] = t.loop_var
            self.inner.add(t.loop_var)
            self.analyzer.bind(t.loop_var, Range(t.min, t.extent))
            self.stmt(d.body, t.body)
        elif isinstance(d, BlockRealize) and isinstance(t, BlockRealize):
            self.block(d, t)
        elif isinstance(d, SeqStmt) and isinstance(t, SeqStmt) and len(d.seq) == len(t.seq):
            for a, b in zip(d.seq, t.seq):
                self.stmt(a, b)
        elif isinstance(d, BufferStore) and isinstance(t, BufferStore):
            self.access(d.buffer, d.indices, t.buffer, t.indices)
            self.expr(d.value, t.value)
        else:
            raise _Mismatch(f"{type(t).__name__} where desc has {type(d).__name__}")

    def block(self, d: BlockRealize, t: BlockRealize) -> None:
        if d.block.init is not None or t.block.init is not None:
            raise _Mismatch(f"block {t.block.name!r} has an init (decompose_reduction first)")
        desc_binding = {iv.var: v for iv, v in zip(d.block.iter_vars, d.iter_values)}
        target_binding = {iv.var: v for iv, v in zip(t.block.iter_vars, t.iter_values)}
        self._kinds(d, t)
        self.expr(d.predicate, t.predicate)
        self.stmt(substitute(d.block.body, desc_binding), substitute(t.block.body, target_binding))

    def _kinds(self, d: BlockRealize, t: BlockRealize) -> None:
        """A loop driving a reduction iterator of desc drives only reductions of the block."""
        for dv, dvalue in zip(d.block.iter_vars, d.iter_values):
            loops = {self.vars.get(v) for v in collect_vars(dvalue)} - {None}
            for tv, tvalue in zip(t.block.iter_vars, t.iter_values):
                if loops & set(collect_vars(tvalue)) and (tv.kind is IterKind.REDUCE) != (
                    dv.kind is IterKind.REDUCE
                ):
                    raise _Mismatch(
                        f"iterator {tv.var.name} of block {t.block.name!r} is "
                        f"{tv.kind.value} where desc's {dv.var.name} is {dv.kind.value}"
                    )

    # ---- expressions ---------------------------------------------------------------------
    def expr(self, d: object, t: object) -> None:
        if isinstance(d, Var):
            mapped = self.vars.get(d)
            if mapped is None or mapped is not t:
                raise _Mismatch(f"{t} where desc has {d.name}")
            return
        if isinstance(d, BufferLoad) and isinstance(t, BufferLoad):
            self.access(d.buffer, d.indices, t.buffer, t.indices)
            return
        if isinstance(d, IntImm | FloatImm) and isinstance(t, IntImm | FloatImm):
            if type(d) is not type(t) or d.value != t.value or d.dtype != t.dtype:
                raise _Mismatch(f"the constant {t} where desc has {d}")
            return
        if isinstance(d, Node) and isinstance(t, Node):
            if type(d) is not type(t):
                raise _Mismatch(f"{t} where desc has {d}")
            for (_, a), (_, b) in zip(d.field_items(), t.field_items()):
                self.expr(a, b)
            return
        if isinstance(d, tuple) and isinstance(t, tuple) and len(d) == len(t):
            for a, b in zip(d, t):
                self.expr(a, b)
            return
        if d != t:
            raise _Mismatch(f"{t!r} where desc has {d!r}")

    def access(
        self, d: Buffer, d_indices: tuple[PrimExpr, ...], t: Buffer, t_indices: tuple[PrimExpr, ...]
    ) -> None:
        if id(d) not in self.params:
            raise _Mismatch(f"desc accesses {d.name}, which is not one of its parameters")
        if d.dtype != t.dtype:
            raise _Mismatch(f"buffer {t.name} is {t.dtype}, desc's {d.name} {d.dtype}")
        if d.scope != t.scope:
            raise _Mismatch(f"buffer {t.name} is in {t.scope} memory, desc's {d.name} in {d.scope}")
        lead = len(t_indices) - len(d_indices)
        if lead < 0:
            raise _Mismatch(f"buffer {t.name} has fewer dimensions than desc's {d.name}")
        offsets = [self.analyzer.simplify(i) for i in t_indices[:lead]]
        for di, ti in zip(d_indices, t_indices[lead:]):
            mapped = substitute(di, dict(self.vars))
            offsets.append(self.analyzer.simplify(op.sub(ti, mapped)))
        for offset in offsets:
            moving = self.inner & set(collect_vars(offset))
            if moving:
                names = ", ".join(sorted(v.name for v in moving))
                raise _Mismatch(
                    f"the region of {t.name} standing for desc's {d.name} moves with loop "
                    f"{names} inside the block"
                )
        known = self.found.get(d)
        if known is None:
            self.found[d] = (t, offsets, lead)
            return
        same = all(structural_equal(a, b, map_free_vars=False) for a, b in zip(known[1], offsets))
        if known[0] is not t or not same:
            raise _Mismatch(f"desc's {d.name} stands for two different regions ({t.name})")


def _const(value: PrimExpr) -> int | None:
    return value.value if isinstance(value, IntImm) else None
