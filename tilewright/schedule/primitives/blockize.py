"""Blockize: wrap the subtree of a loop into a new outer block, in TVM's form.

Each binding ``v`` of the inner block divides into ``outer * E + inner`` where ``inner`` uses
the loops at and under the loop (ranging over ``[0, E)``) and ``outer`` the loops above. The
outer block ``<name>_o`` gets one iterator per original iterator, ``v_o`` over the outer part's
range (``T.axis.spatial(1, 0)`` when nothing outside drives it); the inner block gets ``v_i``
bound to the inner part where ``E > 1``, and ``v`` becomes ``v_o * E + v_i`` (``v_i`` when the
outer range is one, ``v_o`` when ``E`` is one). The inner block's init moves to the outer
block, over the inner loops its spatial iterators use (``<name>_init``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
from tilewright.schedule.tree import Site, loop_domain, rebuild, update, walk


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


@dataclass
class Division:
    """A block's bindings divided at a loop: the outer block's iterators and bindings, the
    inner block's, and what each original iterator becomes in the inner block."""

    outer_ivs: list[IterVar] = field(default_factory=list)
    outer_values: list[PrimExpr] = field(default_factory=list)
    inner_ivs: list[IterVar] = field(default_factory=list)
    inner_values: list[PrimExpr] = field(default_factory=list)
    subst: dict[Var, PrimExpr] = field(default_factory=dict)


def _const(value: int, like: Var) -> IntImm:
    return IntImm(value, like.dtype)


def divide(
    realize: BlockRealize,
    inner_loops: list[For],
    unit_loops: list[For],
    preserve_unit_iters: bool,
    func: PrimFunc,
    where: str,
) -> Division:
    """Divide ``realize``'s bindings between the loops ``inner_loops`` and those above them
    (``unit_loops``: the extent-one loops around the block, read as 0 unless
    ``preserve_unit_iters``); ``where`` names the loop in refusals.

    Example: ``vi = i_0 * 4 + i_1`` at ``i_1`` (extent 4) gives ``vi_o = i_0`` (outer),
    ``vi_i = i_1`` (inner, over ``[0, 4)``) and ``vi -> vi_o * 4 + vi_i``.
    """
    block = realize.block
    inner = {f.loop_var for f in inner_loops}
    ana = Analyzer()
    dom = loop_domain(inner_loops)
    unit = {} if preserve_unit_iters else {f.loop_var: f.min for f in unit_loops}
    result = Division()
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if unit:
            value = ana.simplify(substitute(value, unit))
        parts = _parts(value, inner)
        if parts is None or not _divide_one(iv, parts, dom, ana, preserve_unit_iters, result):
            raise ScheduleError(
                "blockize",
                "blockize-binding",
                f"the binding of {iv.var.name!r} in block {block.name!r} does not split into "
                f"a part of the loops outside {where} times the extent of a part of the loops "
                "inside it",
                func,
                block,
            )
    if set(collect_vars(realize.predicate)) - inner:
        raise ScheduleError(
            "blockize",
            "blockize-binding",
            f"the predicate of block {block.name!r} uses loops outside {where}",
            func,
            block,
        )
    return result


def _divide_one(
    iv: IterVar,
    parts: tuple[PrimExpr, PrimExpr],
    dom: dict[Var, Range],
    ana: Analyzer,
    preserve_unit_iters: bool,
    result: Division,
) -> bool:
    """Add ``iv``'s outer and inner iterators to ``result``; False: not divisible."""
    out, inn = parts
    var_o = Var(f"{iv.var.name}_o", iv.var.dtype)
    zero_out = isinstance(out, IntImm) and out.value == 0
    if isinstance(inn, IntImm):  # nothing inside drives it: the iterator moves out
        extent = _const(1, iv.var) if zero_out else iv.dom.extent
        result.outer_ivs.append(IterVar(var_o, Range(_const(0, iv.var), extent), iv.kind))
        result.outer_values.append(out)
        unit = isinstance(extent, IntImm) and extent.value == 1
        result.subst[iv.var] = _const(0, iv.var) if unit and not preserve_unit_iters else var_o
        return True
    span = eval_set(inn, dom, ana)
    low, high = span.min_value, span.max_value
    if not (isinstance(low, IntImm) and low.value == 0 and high is not None):
        return False
    inner_extent = ana.simplify(op.add(high, 1))
    if not isinstance(inner_extent, IntImm):
        return False
    if zero_out:
        outer_extent, outer_value = _const(1, iv.var), out
    else:
        ok = (
            isinstance(iv.dom.extent, IntImm)
            and isinstance(iv.dom.min, IntImm)
            and iv.dom.min.value == 0
            and iv.dom.extent.value % inner_extent.value == 0
            and ana.can_prove(op.eq(op.floormod(out, inner_extent), 0))
        )
        if not ok:
            return False
        assert isinstance(iv.dom.extent, IntImm)
        outer_extent = _const(iv.dom.extent.value // inner_extent.value, iv.var)
        outer_value = ana.simplify(op.floordiv(out, inner_extent))
    result.outer_ivs.append(IterVar(var_o, Range(_const(0, iv.var), outer_extent), iv.kind))
    result.outer_values.append(outer_value)
    var_i = Var(f"{iv.var.name}_i", iv.var.dtype)
    extent_i = _const(inner_extent.value, iv.var)
    result.inner_ivs.append(IterVar(var_i, Range(_const(0, iv.var), extent_i), iv.kind))
    result.inner_values.append(inn)
    if outer_extent.value == 1:
        result.subst[iv.var] = var_i
    else:
        result.subst[iv.var] = op.add(op.mul(var_o, extent_i), var_i)
    return True


def inner_block(
    realize: BlockRealize, division: Division, keep_init: bool, write_reduction: bool
) -> BlockRealize:
    """The inner block: its iterators rebound to the inner loops, the original iterators
    substituted; the init kept only when ``keep_init``. As in TVM, when an outer iterator
    reduces, the inner block also reads what it writes (``write_reduction``)."""
    old, sub = realize.block, division.subst
    block = update(
        old,
        iter_vars=tuple(division.inner_ivs),
        reads=tuple(substitute(r, sub) for r in old.reads),
        writes=tuple(substitute(w, sub) for w in old.writes),
        body=substitute(old.body, sub),
        init=substitute(old.init, sub) if keep_init and old.init is not None else None,
    )
    if write_reduction:
        block = update(block, reads=block.writes + block.reads)
    return BlockRealize(tuple(division.inner_values), realize.predicate, block)


def blockize(site: Site, preserve_unit_iters: bool) -> tuple[PrimFunc, str]:
    """Wrap the loop's subtree, which holds one block, into a block ``<name>_o``.

    Example::

        for i_1 in range(4): C[vi] (vi = i_0 * 4 + i_1)
        ->  with T.block("C_o"): vi_o = i_0
                for i_1: with T.block("C"): vi_i = i_1; C[vi_o * 4 + vi_i]
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
    units = [s for s in rpath[:-1] if isinstance(s, For) and _is_unit(s)]
    where = repr(loop.loop_var.name)
    division = divide(realize, inner_loops, units, preserve_unit_iters, func, where)
    names = {p[-1].name for p in walk(func.body) if isinstance(p[-1], Block)}
    name = f"{block.name}_o"
    if name in names:
        raise ScheduleError("blockize", "unique-block-names", f"{name!r} exists", func, block)
    outer_reduces = any(iv.kind is IterKind.REDUCE for iv in division.outer_ivs)
    has_init = block.init is not None
    inner = inner_block(realize, division, False, has_init and outer_reduces)
    init = None
    if block.init is not None:
        init = _outer_init(inner, substitute(block.init, division.subst), inner_loops, func)
    subtree = rebuild(rpath[k:], inner)
    outer_block = Block(name, tuple(division.outer_ivs), (), (), subtree, init=init)
    reads, writes = block_access_regions(outer_block)
    outer_block = update(outer_block, reads=reads, writes=writes)
    outer = BlockRealize(tuple(division.outer_values), IntImm(1, bool_), outer_block)
    return site.replaced(outer), name


def _is_unit(loop: For) -> bool:
    return isinstance(loop.extent, IntImm) and loop.extent.value == 1


def _outer_init(inner: BlockRealize, init: Stmt, loops: list[For], func: PrimFunc) -> Stmt:
    """The outer block's init (TVM's): ``init`` in a block ``<name>_init`` whose iterators are
    the inner block's spatial ones that it uses, over the inner loops their bindings use.

    Example: ``C[vi_o * 16 + vi_i, vj_o * 16 + vj_i] = 0`` becomes ``for i_1, j_1:
    with T.block("C_init"): vi_i_init, vj_i_init = i_1, j_1; C[...] = 0``.
    """
    block = inner.block
    used = set(collect_vars(init))
    renamed: dict[Var, PrimExpr] = {}
    ivs: list[IterVar] = []
    values: list[PrimExpr] = []
    for iv, value in zip(block.iter_vars, inner.iter_values):
        if iv.kind is IterKind.SPATIAL and iv.var in used:
            new = update(iv, var=Var(f"{iv.var.name}_init", iv.var.dtype))
            renamed[iv.var] = new.var
            ivs.append(new)
            values.append(value)
    driving = set(collect_vars(tuple(values)))
    kept = [f for f in loops if f.loop_var in driving]
    if set(collect_vars(inner.predicate)) - driving:
        raise ScheduleError(
            "blockize",
            "blockize-binding",
            f"the predicate of block {block.name!r} uses a loop that drives no spatial "
            "iterator of its init, so the init cannot move to the outer block",
            func,
            block,
        )
    fresh: dict[Var, PrimExpr] = {f.loop_var: Var(f.loop_var.name, f.loop_var.dtype) for f in kept}
    init_block = Block(f"{block.name}_init", tuple(ivs), (), (), substitute(init, renamed))
    reads, writes = block_access_regions(init_block)
    init_block = update(init_block, reads=reads, writes=writes)
    stmt: Stmt = BlockRealize(
        tuple(substitute(v, fresh) for v in values), substitute(inner.predicate, fresh), init_block
    )
    for f in reversed(kept):
        var = fresh[f.loop_var]
        assert isinstance(var, Var)
        stmt = For(var, f.min, f.extent, ForKind.SERIAL, stmt)
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
