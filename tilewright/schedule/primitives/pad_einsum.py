"""``pad_einsum``: an einsum block's iteration space padded, with its buffers.

An einsum block indexes every buffer by iterators or constants only (``C[i, j] += A[i, k] *
B[k, j]``). Padding iterator ``v`` by ``p`` lengthens its domain and loop by ``p``, and each
buffer dimension indexed by ``v`` too: such a buffer becomes ``<name>_padded``. An input's
producer (a copy-like block of the same scope writing the whole buffer, iterators in the
buffer's order) then iterates over the padded shape and stores ``T.if_then_else(in_bounds,
value, 0)``; the output's consumers read the padded buffer over the original region. Padded
buffers are allocated in the function (an input parameter that would need padding, or an
output one, is refused).
"""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.ir import op
from tilewright.ir.buffer import Buffer
from tilewright.ir.dtype import handle
from tilewright.ir.expr import BufferLoad, IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import Mutator
from tilewright.ir.stmt import Block, BlockRealize, BufferStore, For
from tilewright.schedule.dataflow import ScopeBlock, param_buffers, scope_blocks, scope_path
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.primitives.block_layout import trivial_loops
from tilewright.schedule.primitives.caching import swap
from tilewright.schedule.tree import Site

register_rules(
    {
        "einsum-pattern": (
            "pad_einsum needs one padding amount (>= 0) per iterator and a block storing once "
            "(with an init storing to the same place), every buffer indexed by iterators or "
            "constants only, a padded dimension always by iterators of the same extent"
        ),
        "pad-producer": (
            "a padded input is allocated in the function and written by exactly one block of "
            "the scope: a copy-like block (one store) with trivial bindings, writing it at "
            "its iterators in order; a padded output is allocated and written only by the "
            "einsum block"
        ),
    }
)


def pad_einsum(site: Site, padding: Sequence[int]) -> PrimFunc:
    """Pad the einsum block's iterators by ``padding`` (one amount per iterator).

    Example::

        sch.pad_einsum("C_shared", [0, 1, 1])
        # (128, 127, 127) -> (128, 128, 128); A_shared_padded[i, j] =
        #     T.if_then_else(j < 127, A[i, j], T.float32(0)), ...
    """
    block = site.block
    if len(padding) != len(block.iter_vars) or any(p < 0 for p in padding):
        raise _error(
            site, "einsum-pattern", f"padding {list(padding)} for {len(block.iter_vars)} iterators"
        )
    loops = trivial_loops("pad_einsum", site)
    pad_of = {iv.var: p for iv, p in zip(block.iter_vars, padding)}
    dims = _padded_dims(site, pad_of)
    if not dims:
        return site.func
    outputs = {w.buffer for w in block.writes}
    params = param_buffers(site.func)
    blocks = scope_blocks(scope_path(site))
    new_loops: dict[Var, PrimExpr] = {
        f.loop_var: op.add(f.extent, pad_of[iv.var])
        for f, iv in zip(loops, block.iter_vars)
        if pad_of[iv.var]
    }
    new_blocks: dict[str, Block] = {block.name: _pad_domains(block, pad_of)}
    table: dict[Buffer, Buffer] = {}
    for buffer, padded in dims.items():
        if buffer in params:
            raise _error(
                site,
                "pad-producer",
                f"buffer {buffer.name!r} is a parameter of the function; padding it needs an "
                "allocated copy (cache_read / cache_write first)",
            )
        writers = [b for b in blocks if buffer in b.writes]
        if buffer in outputs:
            if len(writers) != 1:
                raise _error(
                    site, "pad-producer", f"output {buffer.name!r} has writers besides the block"
                )
        else:
            _pad_producer(site, buffer, padded, writers, new_loops, new_blocks)
        shape = list(buffer.shape)
        for d, p in padded.items():
            shape[d] = op.add(shape[d], p)
        name = f"{buffer.name}_padded"
        table[buffer] = buffer.replace(name=name, shape=tuple(shape), data=Var(name, handle))
    body = _Repad(new_loops, new_blocks).visit(site.func.body)
    return site.func.with_body(swap(body, table))


def _padded_dims(site: Site, pad_of: dict[Var, int]) -> dict[Buffer, dict[int, int]]:
    """For each buffer the block accesses, the padding of each of its padded dimensions."""
    block = site.block
    store = block.body
    if not isinstance(store, BufferStore):
        raise _error(site, "einsum-pattern", f"block {block.name!r} is not one store")
    if block.init is not None and not (
        isinstance(block.init, BufferStore) and block.init.buffer is store.buffer
    ):
        raise _error(site, "einsum-pattern", f"the init of {block.name!r} is not one store")
    accesses: list[tuple[Buffer, tuple[PrimExpr, ...]]] = [(store.buffer, store.indices)]
    if block.init is not None:
        assert isinstance(block.init, BufferStore)
        accesses.append((block.init.buffer, block.init.indices))
    loads: list[BufferLoad] = []
    _Loads(loads).visit(store.value)
    accesses += [(load.buffer, load.indices) for load in loads]
    extent_of = {iv.var: iv.dom.extent for iv in block.iter_vars}
    found: dict[Buffer, dict[int, int]] = {}
    seen: dict[tuple[Buffer, int], int] = {}
    for buffer, indices in accesses:
        for d, index in enumerate(indices):
            if isinstance(index, IntImm):
                amount = 0
            elif isinstance(index, Var) and index in pad_of:
                amount = pad_of[index]
                if amount and not _equal(buffer.shape[d], extent_of[index]):
                    raise _error(
                        site,
                        "einsum-pattern",
                        f"dimension {d} of {buffer.name!r} is not as long as iterator "
                        f"{index.name!r}",
                    )
            else:
                raise _error(
                    site,
                    "einsum-pattern",
                    f"{buffer.name!r} is indexed by {index}, not by an iterator or constant",
                )
            if seen.setdefault((buffer, d), amount) != amount:
                raise _error(
                    site, "einsum-pattern", f"dimension {d} of {buffer.name!r} is padded twice"
                )
            if amount:
                found.setdefault(buffer, {})[d] = amount
    return found


def _equal(a: PrimExpr, b: PrimExpr) -> bool:
    return isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value


def _pad_producer(
    site: Site,
    buffer: Buffer,
    padded: dict[int, int],
    writers: list[ScopeBlock],
    new_loops: dict[Var, PrimExpr],
    new_blocks: dict[str, Block],
) -> None:
    """Record the padded version of ``buffer``'s one producer (loops and block)."""

    def fail(detail: str) -> ScheduleError:
        return _error(site, "pad-producer", f"input {buffer.name!r}: {detail}")

    if len(writers) != 1:
        raise fail(f"{len(writers)} blocks of the scope write it, not one")
    producer = writers[0]
    block = producer.block
    store = block.body
    if block.init is not None or not isinstance(store, BufferStore) or store.buffer is not buffer:
        raise fail(f"its producer {block.name!r} is not one store into it")
    iters = [iv.var for iv in block.iter_vars]
    if list(store.indices) != iters or len(iters) != buffer.ndim:
        raise fail(f"its producer {block.name!r} does not store at its iterators in order")
    psite = Site(site.func_name, site.func, (*producer.path, block))
    loops = trivial_loops("pad_einsum", psite)
    pad_of: dict[Var, int] = {}
    conditions: list[PrimExpr] = []
    for d, (iv, loop) in enumerate(zip(block.iter_vars, loops)):
        amount = padded.get(d, 0)
        if not _equal(iv.dom.extent, buffer.shape[d]):
            raise fail(f"iterator {iv.var.name!r} of {block.name!r} does not cover dimension {d}")
        if amount:
            pad_of[iv.var] = amount
            new_loops[loop.loop_var] = op.add(loop.extent, amount)
            conditions.append(op.lt(iv.var, iv.dom.extent))
    guard = conditions[0]
    for cond in conditions[1:]:
        guard = op.logical_and(guard, cond)
    zero = op.cast(0, buffer.dtype)
    value = op.if_then_else(guard, store.value, zero)
    new_blocks[block.name] = _pad_domains(block.replace(body=store.replace(value=value)), pad_of)


def _pad_domains(block: Block, pad_of: dict[Var, int]) -> Block:
    ivs = tuple(
        iv.replace(dom=Range(iv.dom.min, op.add(iv.dom.extent, pad_of[iv.var])))
        if pad_of.get(iv.var)
        else iv
        for iv in block.iter_vars
    )
    return block.replace(iter_vars=ivs)


def _error(site: Site, rule: str, detail: str) -> ScheduleError:
    return ScheduleError("pad_einsum", rule, detail, site.func, site.block)


class _Loads(Mutator):
    def __init__(self, found: list[BufferLoad]) -> None:
        super().__init__()
        self.found = found

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        self.found.append(node)
        return self.generic_visit(node)


class _Repad(Mutator):
    """Longer loops (by loop variable) and padded blocks (by name)."""

    def __init__(self, loops: dict[Var, PrimExpr], blocks: dict[str, Block]) -> None:
        super().__init__()
        self.loops = loops
        self.blocks = blocks

    def visit_For(self, node: For) -> For:
        new = self.generic_visit(node)
        extent = self.loops.get(node.loop_var)
        return new if extent is None else new.replace(extent=extent)

    def visit_BlockRealize(self, node: BlockRealize) -> BlockRealize:
        block = self.blocks.get(node.block.name)
        if block is None:
            return self.generic_visit(node)
        return node.replace(block=block)
