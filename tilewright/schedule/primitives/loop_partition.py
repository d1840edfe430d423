"""loop_partition: cut a loop into consecutive sibling loops over ranges of its iterations,
each a copy of the loop's body in its own block (TVM's layout), as a pure function."""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.arith.region import block_access_regions
from tilewright.ir import op
from tilewright.ir.expr import IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import substitute
from tilewright.ir.stmt import Block, BlockRealize, For, ForKind, IterKind, IterVar, Stmt, seq
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.tree import Site, children, update, walk, with_child

register_rules(
    {
        "partition-factors": (
            "loop_partition needs a loop of constant range and positive integer factors, at "
            "most one None (the rest of the range), summing to less than the loop's extent"
        ),
    }
)


def partition_bounds(site: Site, factors: Sequence[int | None]) -> list[tuple[int, int]]:
    """The ``[start, end)`` range of each partition: the factors are lengths from the loop's
    start, ``None`` takes what the others leave, and without ``None`` a last partition
    covers the rest.

    Example (a loop over ``range(128)``)::

        >>> partition_bounds(site, [2, 1, 64])
        [(0, 2), (2, 3), (3, 67), (67, 128)]
    """
    loop = site.loop
    name = loop.loop_var.name

    def fail(detail: str) -> ScheduleError:
        return ScheduleError("loop_partition", "partition-factors", detail, site.func, loop)

    if not isinstance(loop.min, IntImm) or not isinstance(loop.extent, IntImm):
        raise fail(f"loop {name!r} has the symbolic range [{loop.min}, {loop.min} + {loop.extent})")
    if not factors:
        raise fail(f"loop {name!r}: no factors given")
    if sum(f is None for f in factors) > 1:
        raise fail(f"loop {name!r}: at most one factor may be None, got {list(factors)}")
    for k, f in enumerate(factors):
        if f is not None and f <= 0:
            raise fail(f"loop {name!r}: factor {k} is {f}, not positive")
    extent = loop.extent.value
    given = sum(f for f in factors if f is not None)
    if given >= extent:
        raise fail(
            f"loop {name!r}: the factors {list(factors)} sum to {given}, not less than its "
            f"extent {extent}"
        )
    lengths = [extent - given if f is None else f for f in factors]
    if None not in factors:
        lengths.append(extent - given)
    bounds = []
    start = loop.min.value
    for length in lengths:
        bounds.append((start, start + length))
        start += length
    return bounds


def loop_partition(
    site: Site, factors: Sequence[int | None], preserve_unit_iters: bool = True
) -> tuple[PrimFunc, list[Var]]:
    """Replace the loop by a block ``<b>_<i>_common`` holding, for each partition ``k``, a
    block ``<b>_<i><k>_partition`` with a loop ``<i><k>`` over the partition's range and a
    copy of the loop's body, where every block is renamed ``<name>_<i><k>`` (``<b>``: the
    first block under the loop). An iterator bound to the loop itself gets the partition's
    range as its domain (a reduction iterator of a block with an init keeps its domain).

    Returns the new function and the partition loops' variables, in order.

    Example (``factors=[None, 16]`` on a loop of 128)::

        for i in range(128):          with T.block("B_i_common"):
            with T.block("B"):   ->       with T.block("B_i0_partition"):
                ...                           for i0 in range(112):
                                                  with T.block("B_i0"): ...
                                          with T.block("B_i1_partition"):
                                              for i1 in T.serial(112, 128):
                                                  with T.block("B_i1"): ...
    """
    loop = site.loop
    if loop.annotations or loop.kind is ForKind.THREAD_BINDING:
        what = f"is bound to {loop.thread_tag}" if loop.thread_tag else "has annotations"
        raise ScheduleError(
            "loop_partition", "plain-loop", f"loop {loop.loop_var.name!r} {what}", site.func, loop
        )
    bounds = partition_bounds(site, factors)
    var = loop.loop_var
    first = next((p[-1] for p in walk(loop.body) if isinstance(p[-1], Block)), None)
    base = f"{first.name}_{var.name}" if first is not None else var.name
    new_vars: list[Var] = []
    partitions: list[Stmt] = []
    names: list[str] = []
    for k, (start, end) in enumerate(bounds):
        new = Var(f"{var.name}{k}", var.dtype)
        new_vars.append(new)
        unit = end - start == 1 and not preserve_unit_iters
        value: PrimExpr = op.const(start, var.dtype) if unit else new
        copier = _Copier(
            var,
            value,
            Range(op.const(start, var.dtype), op.const(end - start, var.dtype)),
            new.name,
        )
        body = copier.copy(loop.body, {var: value})
        names += copier.names
        partition = For(
            new, op.const(start, var.dtype), op.const(end - start, var.dtype), loop.kind, body
        )
        partitions.append(_opaque(f"{base}{k}_partition", partition))
    common = _opaque(f"{base}_common", seq(*partitions))
    names += [f"{base}{k}_partition" for k in range(len(bounds))] + [f"{base}_common"]
    _check_names(site, names)
    return site.replaced(common), new_vars


def _opaque(name: str, body: Stmt) -> BlockRealize:
    """A block without iterators around ``body``, with its accesses inferred."""
    block = Block(name, (), (), (), body)
    reads, writes = block_access_regions(block)
    return BlockRealize((), op.const(True), update(block, reads=reads, writes=writes))


def _check_names(site: Site, names: list[str]) -> None:
    """The new block names are distinct from each other and from the blocks kept outside."""
    kept = {
        p[-1].name
        for p in walk(site.func.body)
        if isinstance(p[-1], Block) and not any(s is site.node for s in p)
    }
    seen: set[str] = set()
    for name in names:
        if name in kept or name in seen:
            raise ScheduleError(
                "loop_partition",
                "unique-block-names",
                f"partitioning loop {site.loop.loop_var.name!r} would make a second block "
                f"named {name!r}",
                site.func,
                site.node,
            )
        seen.add(name)


class _Copier:
    """Copies a loop body for one partition: fresh loop and iterator variables, blocks
    renamed ``<name>_<suffix>``, the partitioned iterator's domain narrowed."""

    def __init__(self, loop_var: Var, value: PrimExpr, dom: Range, suffix: str) -> None:
        self.loop_var = loop_var
        self.value = value
        self.dom = dom
        self.suffix = suffix
        self.names: list[str] = []

    def copy(self, stmt: Stmt, mapping: dict[Var, PrimExpr]) -> Stmt:
        if isinstance(stmt, For):
            new = Var(stmt.loop_var.name, stmt.loop_var.dtype)
            inner = {**mapping, stmt.loop_var: new}
            return update(
                stmt,
                loop_var=new,
                min=substitute(stmt.min, mapping),
                extent=substitute(stmt.extent, mapping),
                body=self.copy(stmt.body, inner),
            )
        if isinstance(stmt, BlockRealize):
            return self._realize(stmt, mapping)
        result = stmt
        for child in children(stmt):
            result = with_child(result, child, self.copy(child, mapping))
        # The children are copied already; this substitutes the statement's own expressions.
        return substitute(result, mapping)

    def _realize(self, realize: BlockRealize, mapping: dict[Var, PrimExpr]) -> BlockRealize:
        block = realize.block
        inner = dict(mapping)
        iter_vars = []
        for iv, bound in zip(block.iter_vars, realize.iter_values):
            new = Var(iv.var.name, iv.var.dtype)
            inner[iv.var] = new
            dom = iv.dom
            # A reduction's init runs at its iterators' first values: the domain of a
            # reduction iterator stays whole, so that only the first partition initialises.
            reduces = iv.kind is IterKind.REDUCE and block.init is not None
            if bound is self.loop_var and not reduces:
                dom = Range(
                    op.cast(self.dom.min, dom.min.dtype), op.cast(self.dom.extent, dom.extent.dtype)
                )
            iter_vars.append(IterVar(new, dom, iv.kind))
        name = f"{block.name}_{self.suffix}"
        self.names.append(name)
        new_block = update(
            block,
            name=name,
            iter_vars=tuple(iter_vars),
            reads=substitute(block.reads, inner),
            writes=substitute(block.writes, inner),
            match_buffers=substitute(block.match_buffers, inner),
            body=self.copy(block.body, inner),
            init=None if block.init is None else self.copy(block.init, inner),
        )
        return update(
            realize,
            iter_values=substitute(realize.iter_values, mapping),
            predicate=substitute(realize.predicate, mapping),
            block=new_block,
        )
