"""Blockize: wrap the subtree of a loop into a new outer block whose iterators are the outer
parts of the inner block's bindings (``v = vo * E + inner`` where the loops at and under the
loop make ``inner`` range over ``[0, E)``)."""

from __future__ import annotations

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.int_set import eval_set
from tilewright.arith.linear_form import LinearForm, build, to_form
from tilewright.arith.region import block_access_regions
from tilewright.ir import op
from tilewright.ir.dtype import bool_
from tilewright.ir.expr import IntImm, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars, substitute
from tilewright.ir.stmt import Block, BlockRealize, For, ForKind, IterKind, IterVar, Stmt
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.tree import Site, rebuild, update, walk


def _parts(value: PrimExpr, inner: set[Var]) -> tuple[PrimExpr, PrimExpr] | None:
    """``value`` as ``outer + inner`` parts, each term using only one side's loops."""
    form = to_form(value)
    outer_form, inner_form = LinearForm(value.dtype, form.const), LinearForm(value.dtype)
    for key, term, coef in form.items():
        used = set(collect_vars(term))
        if used <= inner:
            inner_form.add_term(term, coef, key)
        elif used & inner:
            return None
        else:
            outer_form.add_term(term, coef, key)
    return build(outer_form), build(inner_form)


def blockize(site: Site, preserve_unit_iters: bool) -> tuple[PrimFunc, str]:
    """Wrap the loop's subtree, which holds one block, into a block ``<name>_o``.

    Example::

        for i_1 in range(4): C[vi] (vi = i_0 * 4 + i_1)
        ->  with T.block("C_o"): vi_o = i_0; for i_1: C[vi] (vi = vi_o * 4 + i_1)
    """
    func = site.func
    loop = site.loop
    k_loop = len(site.path) - 1
    direct = [
        p
        for p in site.below(lambda path: isinstance(path[-1], BlockRealize))
        if not any(isinstance(s, BlockRealize) for s in p[k_loop + 1 : -1])
    ]
    if len(direct) > 1:
        return _blockize_several(site, [p[-1] for p in direct])  # type: ignore[misc]
    rpath, realize = site.only_block("blockize")
    block = realize.block
    k = next(i for i, s in enumerate(rpath) if s is loop)
    inner_loops = [s for s in rpath[k:-1] if isinstance(s, For)]
    inner = {f.loop_var for f in inner_loops}
    ana = Analyzer()
    dom = {f.loop_var: Range(f.min, f.extent) for f in inner_loops}
    outer_ivs: list[IterVar] = []
    outer_values: list[PrimExpr] = []
    inner_values: list[PrimExpr] = []
    for iv, value in zip(block.iter_vars, realize.iter_values):
        parts = _parts(value, inner)
        refused = parts is None
        if parts is not None:
            out, inn = parts
            span = eval_set(inn, dom, ana)
            low, high = span.min_value, span.max_value
            extent = None if high is None else ana.simplify(op.add(high, 1))
            const_inner = isinstance(inn, IntImm)
            if const_inner and not (isinstance(out, IntImm) and not preserve_unit_iters):
                outer_ivs.append(update(iv, var=Var(f"{iv.var.name}_o", iv.var.dtype)))
                outer_values.append(value)
                inner_values.append(outer_ivs[-1].var)
                continue
            if isinstance(out, IntImm) and out.value == 0:
                inner_values.append(value)
                continue
            ok = (
                isinstance(low, IntImm)
                and low.value == 0
                and isinstance(extent, IntImm)
                and isinstance(iv.dom.extent, IntImm)
                and isinstance(iv.dom.min, IntImm)
                and iv.dom.min.value == 0
                and iv.dom.extent.value % extent.value == 0
                and ana.can_prove(op.eq(op.floormod(out, extent), 0))
            )
            if ok:
                assert isinstance(extent, IntImm) and isinstance(iv.dom.extent, IntImm)
                var = Var(f"{iv.var.name}_o", iv.var.dtype)
                count = IntImm(iv.dom.extent.value // extent.value, var.dtype)
                dom_o = Range(IntImm(0, var.dtype), count)
                outer_ivs.append(IterVar(var, dom_o, iv.kind))
                outer_values.append(ana.simplify(op.floordiv(out, extent)))
                inner_values.append(op.add(op.mul(var, extent), inn))
                continue
            refused = True
        if refused:
            raise ScheduleError(
                "blockize",
                "blockize-binding",
                f"the binding of {iv.var.name!r} in block {block.name!r} does not split into "
                f"a part of the loops outside {loop.loop_var.name!r} times the extent of a "
                "part of the loops inside it",
                func,
                block,
            )
    if set(collect_vars(realize.predicate)) - inner:
        raise ScheduleError(
            "blockize",
            "blockize-binding",
            f"the predicate of block {block.name!r} uses loops outside {loop.loop_var.name!r}",
            func,
            block,
        )
    names = {p[-1].name for p in walk(func.body) if isinstance(p[-1], Block)}
    name = f"{block.name}_o"
    if name in names:
        raise ScheduleError("blockize", "unique-block-names", f"{name!r} exists", func, block)
    init = None
    # As in TVM: when the outer block reduces too, the init moves out to it (the inner block
    # only updates); when the whole reduction is inside, the inner block keeps its init.
    if block.init is not None and any(iv.kind is IterKind.REDUCE for iv in outer_ivs):
        init = _outer_init(block, inner_values, inner_loops, realize.predicate, func)
        block = update(block, init=None)
    new_inner = update(realize, iter_values=tuple(inner_values), block=block)
    subtree = rebuild(rpath[k:], new_inner)
    outer_block = Block(name, tuple(outer_ivs), (), (), subtree, init=init)
    reads, writes = block_access_regions(outer_block)
    outer_block = update(outer_block, reads=reads, writes=writes)
    outer = BlockRealize(tuple(outer_values), IntImm(1, realize.predicate.dtype), outer_block)
    return site.replaced(outer), name


def _outer_init(
    block: Block,
    values: list[PrimExpr],
    loops: list[For],
    predicate: PrimExpr,
    func: PrimFunc,
) -> Stmt:
    """The outer block's init (TVM's): the inner block's init in a block ``<name>_init`` over
    the inner loops that its spatial iterators use (the reduction loops dropped).

    Example: ``C[vi, vj] = 0`` under ``i_1, j_1, k_1`` becomes ``for i_1, j_1:
    with T.block("C_init"): C[vi_o * 16 + i_1, vj_o * 16 + j_1] = 0``.
    """
    spatial = [(iv, v) for iv, v in zip(block.iter_vars, values) if iv.kind is not IterKind.REDUCE]
    used = set().union(*(set(collect_vars(v)) for _, v in spatial)) if spatial else set()
    kept = [f for f in loops if f.loop_var in used]
    fresh = {f.loop_var: Var(f.loop_var.name, f.loop_var.dtype) for f in kept}
    if set(collect_vars(predicate)) - set(fresh):
        raise ScheduleError(
            "blockize",
            "blockize-binding",
            f"the predicate of block {block.name!r} uses a reduction loop, so its init cannot "
            "move to the outer block",
            func,
            block,
        )
    ivs = [update(iv, var=Var(f"{iv.var.name}_init", iv.var.dtype)) for iv, _ in spatial]
    renamed = {iv.var: new.var for (iv, _), new in zip(spatial, ivs)}
    assert block.init is not None
    body = substitute(block.init, renamed)
    init_block = Block(f"{block.name}_init", tuple(ivs), (), (), body)
    reads, writes = block_access_regions(init_block)
    init_block = update(init_block, reads=reads, writes=writes)
    stmt: Stmt = BlockRealize(
        tuple(substitute(v, fresh) for _, v in spatial),
        substitute(predicate, fresh),
        init_block,
    )
    for f in reversed(kept):
        stmt = For(fresh[f.loop_var], f.min, f.extent, ForKind.SERIAL, stmt)
    return stmt


def _blockize_several(site: Site, realizes: list[BlockRealize]) -> tuple[PrimFunc, str]:
    """Wrap a loop holding several blocks into one block. Its iterators stand for the loops
    outside that the blocks' bindings use (each bound to its loop: spatial, or a reduction
    where it drives reductions); the loop and everything under it go inside unchanged.

    Example::

        for i: (B[i, j] for j), (C[i, j] for j)   ->   with T.block("B_C_o"): for i: ...
    """
    func = site.func
    loop = site.loop
    outer_loops = [s for s in site.path[:-1] if isinstance(s, For)]
    kinds: dict[Var, set[IterKind]] = {}
    for realize in realizes:
        for iv, value in zip(realize.block.iter_vars, realize.iter_values):
            for var in collect_vars(value):
                kinds.setdefault(var, set()).add(iv.kind)
        for var in collect_vars(realize.predicate):
            kinds.setdefault(var, set()).add(IterKind.SPATIAL)
    ivs: list[IterVar] = []
    values: list[PrimExpr] = []
    mapping: dict[Var, PrimExpr] = {}
    for outer in outer_loops:
        used = kinds.get(outer.loop_var)
        if not used:
            continue
        if len(used) > 1 or not isinstance(outer.min, IntImm) or outer.min.value != 0:
            raise ScheduleError(
                "blockize",
                "blockize-binding",
                f"loop {outer.loop_var.name!r} outside {loop.loop_var.name!r} drives both "
                "spatial and reduction iterators of the blocks (or does not start at 0)",
                func,
                loop,
            )
        var = Var(f"v_{outer.loop_var.name}", outer.loop_var.dtype)
        ivs.append(IterVar(var, Range(outer.min, outer.extent), used.pop()))
        values.append(outer.loop_var)
        mapping[outer.loop_var] = var
    names = {p[-1].name for p in walk(func.body) if isinstance(p[-1], Block)}
    name = "_".join(r.block.name for r in realizes) + "_o"
    if name in names:
        raise ScheduleError("blockize", "unique-block-names", f"{name!r} exists", func, loop)
    body = substitute(loop, mapping)
    outer_block = Block(name, tuple(ivs), (), (), body)
    reads, writes = block_access_regions(outer_block)
    outer_block = update(outer_block, reads=reads, writes=writes)
    realize = BlockRealize(tuple(values), IntImm(1, bool_), outer_block)
    return site.replaced(realize), name
