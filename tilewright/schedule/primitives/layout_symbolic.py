"""``transform_layout`` of a buffer with symbolic extents (``(32, n)``), where TVM takes it:
an affine map the iterator maps prove one to one over the symbolic box (permutations, fusions
with symbolic strides), or any map under ``assume_injective_transform=True``, whose new
extents are then the bounds of its images (``lambda i, j: (i * n + j,)``: ``(32 * n,)``).
Padding needs constant extents, and so do maps that are checked by evaluation.
"""

from __future__ import annotations

import functools

from tilewright.arith.analyzer import Analyzer
from tilewright.arith.int_set import eval_set
from tilewright.arith.iter_map import detect_iter_map
from tilewright.arith.linear_form import to_form
from tilewright.ir import op
from tilewright.ir.buffer import Buffer
from tilewright.ir.expr import IntImm, Mul, PrimExpr, Range, Var
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import collect_vars, substitute
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.index_map import IndexMap
from tilewright.schedule.tree import Site


def function_symbols(func: PrimFunc) -> dict[str, Var]:
    """The function's symbolic variables (its parameters and its buffers' shape variables)
    by name: what an index map's text may name besides its indices.

    Example: ``A = T.match_buffer(a, (32, n))`` gives ``{"a": a, "n": n}``.
    """
    found: dict[str, Var] = {v.name: v for v in func.params}
    for _, buffer in func.buffer_map:
        for var in collect_vars(tuple(buffer.shape)):
            found.setdefault(var.name, var)
    return found


def symbolic_shape(
    site: Site, buffer: Buffer, index_map: IndexMap, assume_injective: bool
) -> list[PrimExpr]:
    """The new shape of ``buffer``, whose shape is symbolic, under ``index_map``."""
    variables = index_map.initial_indices
    dom = {v: Range(IntImm(0, e.dtype), e) for v, e in zip(variables, buffer.shape)}
    ana = Analyzer()
    for var, rng in dom.items():
        ana.bind(var, rng)
    result = detect_iter_map(index_map.final_indices, dom, check_level="bijective")
    if result:
        shape: list[PrimExpr] = []
        for expr, total in zip(index_map.final_indices, result.indices):
            one = len(total.args) == 1 and total.args[0].scale == 1
            if not one or not ana.can_prove(op.eq(total.base, 0)):
                raise _refuse(site, f"index map {index_map}: {expr} is not one dimension from 0")
            shape.append(ana.simplify(total.args[0].extent))
        return shape
    if not assume_injective:
        raise _refuse(
            site,
            f"buffer {buffer.name!r} has the symbolic shape {_text(buffer)} and index map "
            f"{index_map} is not a one to one affine map of it; give "
            "assume_injective_transform=True if it is one to one",
        )
    # A shape's symbols count elements: none is negative.
    symbols = collect_vars(tuple(buffer.shape))
    facts = [op.ge(v, IntImm(0, v.dtype)) for v in symbols]
    shape = []
    with ana.constraint_scope(functools.reduce(op.logical_and, facts)):
        for expr in index_map.final_indices:
            low, high = _bounds(expr, dom, ana)
            if low is None or high is None or not ana.can_prove(op.eq(low, 0)):
                raise _refuse(
                    site,
                    f"index map {index_map}: {expr} is not bounded from 0 on {_text(buffer)}",
                )
            shape.append(ana.simplify(op.add(high, 1)))
    return shape


def _bounds(
    expr: PrimExpr, dom: dict[Var, Range], ana: Analyzer
) -> tuple[PrimExpr | None, PrimExpr | None]:
    """The least and greatest values of ``expr`` on ``dom``: at its corners when it is a sum
    of non-negative multiples of products of indices and shape symbols (``i * n + j``, which
    interval sets leave unbounded), else its interval set's."""
    form = to_form(expr)
    if all(c >= 0 and _product_of_vars(t) for _, t, c in form.items()) and all(
        ana.can_prove(op.ge(r.min, 0)) for r in dom.values()
    ):
        lowest = {v: r.min for v, r in dom.items()}
        highest = {v: op.sub(op.add(r.min, r.extent), 1) for v, r in dom.items()}
        return ana.simplify(substitute(expr, lowest)), ana.simplify(substitute(expr, highest))
    bounds = eval_set(expr, dom, ana)
    return bounds.min_value, bounds.max_value


def _product_of_vars(term: PrimExpr) -> bool:
    if isinstance(term, Var) or (isinstance(term, IntImm) and term.value >= 0):
        return True
    return isinstance(term, Mul) and _product_of_vars(term.a) and _product_of_vars(term.b)


def _text(buffer: Buffer) -> str:
    return "(" + ", ".join(str(e) for e in buffer.shape) + ")"


def _refuse(site: Site, message: str) -> ScheduleError:
    return ScheduleError("transform_layout", "index-map", message, site.func, site.node)
