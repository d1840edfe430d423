"""Block directives of the ``T`` namespace: ``T.block``, ``T.init``, ``T.axis``, ``T.reads``,
``T.writes``, ``T.where``, ``T.block_attr`` and ``T.func_attr``."""

from __future__ import annotations

from collections.abc import Sequence

from tilewright.ir.expr import IntImm, PrimExpr, Range, Var
from tilewright.ir.stmt import IterKind
from tilewright.script.parser.frames import (
    AccessDirective,
    AttrDirective,
    AxisDecl,
    AxisRemap,
    BlockFrame,
    InitFrame,
    WhereDirective,
)
from tilewright.script.tir import arguments as args


def block(name: str = "", no_realize: bool = False) -> BlockFrame:
    """``with T.block("C"):`` opens a block; its iterators come from ``T.axis``."""
    if not isinstance(name, str):
        raise TypeError(f"T.block: expected a block name string, found {name!r}")
    return BlockFrame(name)


def sblock(name: str = "", no_realize: bool = False) -> BlockFrame:
    """``with T.sblock("C"):``: TVM's newer name of ``T.block`` (a function written with it
    prints with it)."""
    return block(name, no_realize)


def init() -> InitFrame:
    """``with T.init():`` inside a reduction block: what runs before the first reduction step."""
    return InitFrame()


def _dom(dom: object, where: str) -> Range:
    if isinstance(dom, Range):
        return dom
    if isinstance(dom, tuple | list):
        if len(dom) != 2:
            raise TypeError(f"{where}: a domain is an extent or (min, max), found {dom!r}")
        low = args.int_expr(dom[0], where)
        return Range(low, args.span(low, args.int_expr(dom[1], where)))
    extent = args.int_expr(dom, where)
    return Range(IntImm(0, extent.dtype), extent)


class _Axis:
    """``T.axis``: block iterator declarations."""

    @staticmethod
    def spatial(dom: object, binding: object, dtype: str = "int32") -> AxisDecl:
        """``vi = T.axis.spatial(1024, i)``: a spatial iterator bound to ``i``."""
        where = "T.axis.spatial"
        return AxisDecl(IterKind.SPATIAL, _dom(dom, where), args.int_expr(binding, where))

    @staticmethod
    def reduce(dom: object, binding: object, dtype: str = "int32") -> AxisDecl:
        """``vk = T.axis.reduce(1024, k)``: a reduction iterator."""
        where = "T.axis.reduce"
        return AxisDecl(IterKind.REDUCE, _dom(dom, where), args.int_expr(binding, where))

    @staticmethod
    def scan(dom: object, binding: object, dtype: str = "int32") -> AxisDecl:
        """``vt = T.axis.scan(n, t)``: a scan iterator."""
        where = "T.axis.scan"
        return AxisDecl(IterKind.SCAN, _dom(dom, where), args.int_expr(binding, where))

    @staticmethod
    def opaque(dom: object, binding: object, dtype: str = "int32") -> AxisDecl:
        """``vo = T.axis.opaque(n, o)``: an opaque iterator."""
        where = "T.axis.opaque"
        return AxisDecl(IterKind.OPAQUE, _dom(dom, where), args.int_expr(binding, where))

    S = spatial
    R = reduce

    @staticmethod
    def remap(kinds: str, bindings: Sequence[object], dtype: str = "int32") -> AxisRemap:
        """``vi, vj, vk = T.axis.remap("SSR", [i, j, k])``: iterators over whole loops."""
        table = {"S": IterKind.SPATIAL, "R": IterKind.REDUCE}
        if not isinstance(kinds, str) or any(k not in table for k in kinds):
            raise TypeError(f'T.axis.remap: kinds is a string of "S" and "R", found {kinds!r}')
        if not isinstance(bindings, list | tuple) or len(bindings) != len(kinds):
            raise TypeError(
                f"T.axis.remap: expected a list of {len(kinds)} loop variables for {kinds!r}, "
                f"found {bindings!r}"
            )
        for b in bindings:
            if not isinstance(b, Var):
                raise TypeError(f"T.axis.remap: expected loop variables, found {b!r}")
        return AxisRemap(tuple(table[k] for k in kinds), tuple(bindings))

    def __repr__(self) -> str:
        return "T.axis"


axis = _Axis()


def reads(*regions: object) -> AccessDirective:
    """``T.reads(A[vi, vk], B[vk, vj])``: the regions a block reads (inferred when omitted)."""
    return AccessDirective(False, args.regions(regions, "T.reads"))


def writes(*regions: object) -> AccessDirective:
    """``T.writes(C[vi, vj])``: the regions a block writes (inferred when omitted)."""
    return AccessDirective(True, args.regions(regions, "T.writes"))


def where(predicate: object) -> WhereDirective:
    """``T.where(i_0 * 128 + i_1 < 1000)``: run the block only where the predicate holds."""
    value = args.expr(predicate, "T.where")
    if isinstance(value, PrimExpr) and not value.dtype.is_bool:
        raise TypeError(f"T.where: expected a boolean condition, found a {value.dtype} value")
    return WhereDirective(value)


def block_attr(attrs: object) -> AttrDirective:
    """``T.block_attr({"meta_schedule.unroll": 16})``: annotations of the enclosing block."""
    return AttrDirective(False, args.attr_dict(attrs, "T.block_attr"))


def sblock_attr(attrs: object) -> AttrDirective:
    """``T.sblock_attr({...})``: TVM's newer name of ``T.block_attr``."""
    return AttrDirective(False, args.attr_dict(attrs, "T.sblock_attr"))


def func_attr(attrs: object) -> AttrDirective:
    """``T.func_attr({"global_symbol": "main"})``: attributes of the function."""
    return AttrDirective(True, args.attr_dict(attrs, "T.func_attr"))
