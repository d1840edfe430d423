"""The block layer: ``BlockRealize`` as the schedule sees it, on top of the statement translator.

A realized block binds its iterators (each checked against its domain), runs only where its
predicate holds, allocates its ``alloc_buffers`` afresh, reads its ``match_buffers`` as views of
their source regions, and runs its init where every reduction iterator is at the start of its
domain: the semantics every lowering pass must preserve.
"""

from __future__ import annotations

from tilewright import ir
from tilewright.ir import IterKind

from .statements import Translator


class BlockTranslator(Translator):
    """Statements, realized blocks included."""

    def temp(self, value: str) -> str:
        if value.isidentifier():
            return value
        name = f"_b{len(self.lines)}"
        self.emit(f"{name} = {value}")
        return name

    def stmt_BlockRealize(self, s: ir.BlockRealize) -> None:
        block = s.block
        # Bindings are evaluated before the predicate, and checked only where it holds.
        values = [self.temp(self.expr(v)) for v in s.iter_values]
        predicate = self.expr(s.predicate)
        guarded = predicate != "True"
        if guarded:
            self.emit(f"if {predicate}:")
            self.depth += 1
            self.emit("pass")
        for iv, value in zip(block.iter_vars, values):
            lo, extent = self.expr(iv.dom.min), self.expr(iv.dom.extent)
            end = extent if lo == "0" else f"{lo} + {extent}"
            where = f"block {block.name}: {iv.var.name} = "
            self.emit(f"assert {lo} <= {value} < {end}, {where!r} + str({value})")
            self.emit(f"{self.name(iv.var)} = {value}")
        for match in block.match_buffers:
            region = match.source.region
            mins = [self.temp(self.expr(r.min)) for r in region]
            lead = len(region) - match.buffer.ndim
            self.matched[match.buffer] = (match.source.buffer, mins, lead)
        for buffer in block.alloc_buffers:
            self.bind_storage(buffer, self.allocation(buffer))
        if block.init is not None:
            starts = [
                f"{self.name(iv.var)} == {self.expr(iv.dom.min)}"
                for iv in block.iter_vars
                if iv.kind is IterKind.REDUCE
            ]
            self.emit(f"if {' and '.join(starts) or 'True'}:")
            self.nested(block.init)
        self.stmt(block.body)
        if guarded:
            self.depth -= 1
