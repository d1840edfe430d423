"""Blockize of a list of blocks (TVM's ``sch.blockize([b1, b2])``): the blocks, consecutive
statements under one loop or block, go into one new block ``outer_<b1>_<b2>_``.

Each block's bindings divide at its lowest common ancestor with the others (``divide``, as
for a loop): the loops under that ancestor are inner, the ones above outer. The outer block
takes the first block's outer iterators; every other block must divide into the same ones
(as many, of the same extents and bindings), and is rewritten over them.
"""

from __future__ import annotations

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.region import block_access_regions
from tilewright.ir import op
from tilewright.ir.dtype import bool_
from tilewright.ir.expr import IntImm, PrimExpr, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import substitute
from tilewright.ir.stmt import Block, BlockRealize, For, IterKind, SeqStmt, Stmt, seq
from tilewright.schedule.error import ScheduleError, register_rules
from tilewright.schedule.primitives.blockize import Division, divide, inner_block
from tilewright.schedule.tree import Path, Site, rebuild, update, walk

register_rules(
    {
        "blockize-blocks": (
            "the blocks to blockize together are at least two, consecutive statements of one "
            "loop or block, each under loops only; they divide into the same outer iterators, "
            "and none reduces over a loop outside them while it has an init"
        ),
    }
)


def _refuse(detail: str, func: PrimFunc, node: Stmt | None = None) -> ScheduleError:
    return ScheduleError("blockize", "blockize-blocks", detail, func, node)


def blockize_blocks(sites: list[Site], preserve_unit_iters: bool) -> tuple[PrimFunc, str]:
    """Wrap the blocks at ``sites`` into one block; returns the function and its name.

    Example::

        for m: (for i, j: B[i, j]), (for i, j: C[i, j])
        ->  for m: with T.block("outer_B_C_"): (for i, j: B), (for i, j: C)
    """
    func = sites[0].func
    if len(sites) < 2:
        raise _refuse("blockize takes a list of two or more blocks (or a loop)", func)
    if len({id(s.block) for s in sites}) != len(sites):
        raise _refuse("a block is listed twice", func, sites[0].block)
    k = _ancestor(sites)
    parent = sites[0].path[k + 1]
    if not isinstance(parent, SeqStmt):
        raise _refuse(
            "the blocks are not statements of one loop's or block's body", func, sites[0].block
        )
    order = sorted(sites, key=lambda s: _position(parent, s.path[k + 2]))
    positions = [_position(parent, s.path[k + 2]) for s in order]
    if positions != list(range(positions[0], positions[0] + len(order))):
        raise _refuse(
            "the blocks must be consecutive statements, each its own (no other statement "
            "between them, no two under one loop)",
            func,
            order[0].block,
        )
    where = _describe(order[0].path[k])
    first: Division | None = None
    subtrees: list[Stmt] = []
    for site in order:
        path = site.path
        nest: Path = path[k + 2 : -1]
        if not all(isinstance(s, For) for s in nest[:-1]):
            raise _refuse(
                f"block {site.block.name!r} is not under loops only below {where}", func, site.block
            )
        realize = nest[-1]
        assert isinstance(realize, BlockRealize)
        inner_loops = [s for s in nest if isinstance(s, For)]
        units = [s for s in path[:-2] if isinstance(s, For) and _is_unit(s)]
        division = divide(realize, inner_loops, units, preserve_unit_iters, func, where)
        if first is None:
            first = division
        else:
            _reuse_outer(first, division, site.block, func)
        outer_reduces = any(
            iv.kind is IterKind.REDUCE and not _is_one(iv.dom.extent) for iv in first.outer_ivs
        )
        if realize.block.init is not None and outer_reduces:
            raise _refuse(
                f"block {site.block.name!r} has an init and reduces over a loop outside {where}",
                func,
                site.block,
            )
        subtrees.append(rebuild(nest, inner_block(realize, division, True, False)))
    assert first is not None
    names = {p[-1].name for p in walk(func.body) if isinstance(p[-1], Block)}
    name = "outer_" + "".join(f"{s.block.name}_" for s in order)
    if name in names:
        raise ScheduleError("blockize", "unique-block-names", f"{name!r} exists", func)
    outer_block = Block(name, tuple(first.outer_ivs), (), (), seq(*subtrees))
    reads, writes = block_access_regions(outer_block)
    outer_block = update(outer_block, reads=reads, writes=writes)
    outer = BlockRealize(tuple(first.outer_values), IntImm(1, bool_), outer_block)
    items = parent.seq
    start, stop = positions[0], positions[-1] + 1
    new_body = seq(*items[:start], outer, *items[stop:])
    return Site(sites[0].func_name, func, sites[0].path[: k + 2]).replaced(new_body), name


def _ancestor(sites: list[Site]) -> int:
    """The index (in every path) of the blocks' lowest common loop or block."""
    paths = [s.path for s in sites]
    common = 0
    while all(len(p) > common and p[common] is paths[0][common] for p in paths):
        common += 1
    k = common - 1
    while k > 0 and not isinstance(paths[0][k], For | Block):
        k -= 1
    return k


def _position(parent: SeqStmt, child: Stmt) -> int:
    return next(i for i, s in enumerate(parent.seq) if s is child)


def _describe(node: Stmt) -> str:
    if isinstance(node, For):
        return f"loop {node.loop_var.name!r}"
    assert isinstance(node, Block)
    return f"block {node.name!r}"


def _is_unit(loop: For) -> bool:
    return _is_one(loop.extent)


def _is_one(value: PrimExpr) -> bool:
    return isinstance(value, IntImm) and value.value == 1


def _reuse_outer(first: Division, other: Division, block: Block, func: PrimFunc) -> None:
    """Rewrite ``other`` over ``first``'s outer iterators, which it must match."""
    ana = Analyzer()
    same = len(first.outer_ivs) == len(other.outer_ivs) and all(
        ana.can_prove(op.eq(a.dom.extent, b.dom.extent))
        and ana.can_prove(op.eq(va, vb))
        and a.kind is b.kind
        for a, b, va, vb in zip(
            first.outer_ivs, other.outer_ivs, first.outer_values, other.outer_values
        )
    )
    if not same:
        raise _refuse(
            f"block {block.name!r} does not divide into the first block's outer iterators "
            "(as many, of the same kinds, extents and bindings)",
            func,
            block,
        )
    renamed: dict[Var, PrimExpr] = {b.var: a.var for a, b in zip(first.outer_ivs, other.outer_ivs)}
    other.subst = {v: substitute(e, renamed) for v, e in other.subst.items()}
