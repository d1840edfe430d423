"""``ScheduleError``: a rule broken by a primitive, shown on the IR with the culprit marked."""

from __future__ import annotations

import re

from tilewright.ir.function import PrimFunc
from tilewright.ir.node import Node
from tilewright.ir.stmt import Block, BlockRealize, For

# Every rule a primitive can break, by the short name that error messages cite.
RULES = {
    "stale-reference": "a reference is valid only while its loop or block exists in the schedule",
    "unknown-block": "get_block needs the name of a block of the function",
    "unique-block-names": "block names must be unique within a function",
    "split-factors": (
        "split factors are positive integers, at most one is None, and their product "
        "covers the loop extent"
    ),
    "loop-from-zero": "split and fuse need loops that start at 0",
    "plain-loop": "split and fuse need loops without annotations or thread bindings",
    "loop-chain": "the loops must form one chain of single-child loops, without branches",
    "consecutive-loops": "the loops to fuse must be consecutive: each the only child of the last",
    "distinct-loops": "each loop may be given only once",
    "independent-extents": "a loop's range may not depend on a loop nested inside it",
    "affine-binding": "block bindings must be affine maps of the surrounding loops",
    "block-iter-kind": "blocks under the loop may only have spatial and reduction iterators",
    "reduction-order": (
        "loops that drive both spatial and reduction iterators of a block with an init keep "
        "their relative order, so that the init runs before the updates"
    ),
    "data-parallel": (
        "parallel, vectorized and thread-bound loops may only drive spatial block iterators "
        "(a reduction iterator may be bound to threadIdx for a cross-thread reduction)"
    ),
    "thread-axis": (
        "a thread axis is blockIdx, threadIdx or vthread with .x, .y or .z, and has one "
        "extent within a kernel"
    ),
    "root-block": "the function's root block stays its body, outside every loop",
    "annotation": "unannotate needs a key the loop or block is annotated with",
    "argument": "the arguments must have the types the primitive documents",
    "buffer-index": "a buffer index counts the block's reads (or writes), from 0",
    "storage-scope": (
        "a storage scope is one of tilewright.ir.scope.STORAGE_SCOPES (global, shared, "
        "shared.dyn, local, warp and the wmma/mma fragment scopes)"
    ),
    "same-scope": "the block and the loop (or consumer blocks) must be in the same scope",
    "location": (
        "compute_at needs a loop that holds every consumer of the block and not the block "
        "itself (reverse_compute_at: every producer); decompose_reduction needs a loop above "
        "the block, below every loop that drives a reduction iterator"
    ),
    "output-block": "a block that writes a function parameter cannot be moved away or inlined",
    "single-writer": "the block must be the only writer of its output buffers in the scope",
    "data-flow": (
        "moving a block's computation past another block must not change what either of them reads"
    ),
    "region-cover": "what a moved consumer reads per iteration must be written by then",
    "decision": (
        "a sampling decision fits its instruction: a perfect tile multiplies to the loop's "
        "extent, a categorical decision indexes the candidates, a compute location is one "
        "the block may move to"
    ),
    "constant-extent": "sample_partitioned_tile needs a loop of constant extent",
    "location-mark": (
        "a compute location sampled as 'root' or 'inline' is only an argument of compute_at "
        "and reverse_compute_at"
    ),
    "param-buffer": "the buffer must be allocated in the function, not be a parameter",
    "reduction-block": "the block must be a reduction block (have an init)",
    "inline-body": (
        "an inlined block is a spatial block whose body is one store at distinct iterators "
        "(consumer: reading the producer's buffer at its iterators only, without predicate)"
    ),
    "single-producer": "reverse_compute_inline needs a block reading one producer's buffer",
    "single-consumer": "reverse_compute_inline needs the only consumer of the buffer",
    "reduction-pattern": "rfactor needs B[...] = B[...] op rhs with op one of +, *, max, min",
    "rfactor-block": (
        "the loop must hold exactly one block; for rfactor, the block comes first under its "
        "outermost loop, and the outermost loop driving a reduction iterator holds no other"
    ),
    "rfactor-loop": (
        "the rfactor loop drives no spatial iterator (nor, in a sum or product, does it drive "
        "nothing with an extent above 1), and no loop drives both kinds"
    ),
    "reduction-scope": (
        "a reduction whose iterators are bound to an enclosing block's iterators cannot be "
        "moved, decomposed, factored or cached inside that block"
    ),
    "blockize-binding": (
        "each binding splits into (outer part) * E + (inner part over [0, E)), the predicate "
        "using inner loops only"
    ),
}


def register_rules(rules: dict[str, str]) -> None:
    """Add the rules of primitives defined in their own modules (called at import), by short
    name; a rule name registered twice is an error."""
    for name, statement in rules.items():
        if name in RULES:
            raise ValueError(f"schedule rule {name!r} is already registered")
        RULES[name] = statement


class ScheduleError(Exception):
    """A schedule primitive refused its arguments; the schedule is unchanged.

    Attributes:
        primitive: the primitive's name (``"split"``).
        rule: the short name of the broken rule (a key of ``RULES``).
        detail: what is wrong, naming the loop or block.
        ir: the function's script with the offending loop or block marked ``# <-- here``.
    """

    def __init__(
        self,
        primitive: str,
        rule: str,
        detail: str,
        func: PrimFunc | None = None,
        marked: Node | None = None,
    ) -> None:
        self.primitive = primitive
        self.rule = rule
        self.detail = detail
        self._func = func
        self._marked = marked
        self._ir: str | None = None
        super().__init__(f"{primitive}: {detail}")

    @property
    def ir(self) -> str:
        # Printed on first use: a tuner that tries primitives and catches refusals never pays.
        if self._ir is None:
            self._ir = render(self._func, self._marked) if self._func is not None else ""
        return self._ir

    def __str__(self) -> str:
        statement = RULES.get(self.rule, self.rule)
        text = f"{self.primitive}: {self.detail}\n  rule {self.rule}: {statement}"
        return f"{text}\n{self.ir}" if self.ir else text


def render(func: PrimFunc, marked: Node | None) -> str:
    """``func``'s script with ``# <-- here`` after the line that opens ``marked``."""
    if isinstance(marked, BlockRealize):
        marked = marked.block
    try:
        from tilewright.ir.printer import script

        if marked is not None:
            text = script(func, marks={marked: "<-- here"})
            if "# <-- here" in text:
                return text
        lines = script(func).splitlines()
    except Exception as err:  # the printer must never hide the schedule error itself
        return f"(the IR could not be printed: {err})"
    target = _line_of(lines, marked)
    if target is not None:
        lines[target] += "  # <-- here"
    return "\n".join(lines)


def _line_of(lines: list[str], marked: Node | None) -> int | None:
    if isinstance(marked, BlockRealize):
        marked = marked.block
    if isinstance(marked, Block):
        pattern = re.compile(rf'^\s*with T\.s?block\("{re.escape(marked.name)}"\)')
    elif isinstance(marked, For):
        name = re.escape(marked.loop_var.name)
        pattern = re.compile(rf"^\s*for (?:[\w, ]*, )?{name}(?:, [\w, ]*)? in ")
    else:
        return None
    for k, line in enumerate(lines):
        if pattern.match(line):
            return k
    return None
