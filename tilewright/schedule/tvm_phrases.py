"""ScheduleError -> the same error with TVM's key phrase for its rule added to the message, so
that code written against TVM (``pytest.raises(tvm.tir.ScheduleError, match="...")``) finds the
words it expects next to ours."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tilewright.schedule.error import ScheduleError


@dataclass(frozen=True)
class Phrase:
    """TVM's words for ``rule`` (raised by ``primitive``, any when None), used when the detail
    contains ``when`` (always when None). ``text`` may read the detail (a block's name)."""

    rule: str
    text: str | Callable[[str], str]
    primitive: str | None = None
    when: str | None = None


def _block_name(detail: str) -> str:
    found = re.search(r"has no block named '([^']*)'", detail)
    return f"Cannot find a block with the name: {found.group(1) if found else ''}"


def _required_blocks(detail: str) -> str:
    found = re.search(r"\b(consumer|producer)\b", detail)
    relation = found.group(1) if found else "consumer"
    return (
        "Not all required blocks are under the loop scope: the primitive requires all the "
        f"{relation}(s) of the given block to be present under the target loop"
    )


# The first entry that matches an error wins; order the specific ones first.
PHRASES: tuple[Phrase, ...] = (
    Phrase("unknown-block", _block_name, when="has no block named"),
    Phrase("split-factors", "Only one factor can be specified as -1 or none", when="at most one"),
    Phrase(
        "split-factors",
        "The product of factors is not larger than or equal to the extent of loop",
        when="multiply to",
    ),
    Phrase("loop-from-zero", "The loop does not start with 0, which is not supported"),
    Phrase(
        "plain-loop",
        "The primitive can't be applied because the loop has annotation or thread binding",
    ),
    Phrase("distinct-loops", "The loop appears in the input array for multiple times"),
    Phrase(
        "loop-chain",
        "The loops can't be fused because the inner loop is not the only child of outer loop",
        primitive="fuse",
    ),
    Phrase(
        "loop-chain",
        "The loops are not in a chain: the loops are not in a line because "
        "there is a non-single-branch stmt in between",
    ),
    Phrase(
        "consecutive-loops",
        "The loops can't be fused because the outer loop is not the parent of the inner loop",
        when="lies between",
    ),
    Phrase(
        "consecutive-loops",
        "The loops can't be fused because the outer loop is not the "
        "parent of the inner loop; the inner loop is not the only child of outer loop",
    ),
    Phrase(
        "independent-extents",
        "An outer loop's `min` or `extent` is dependent on an inner loop in the new order",
    ),
    Phrase("affine-binding", "The block is required to have an affine binding"),
    Phrase(
        "compact-dataflow", "The queried subtree root in SRef tree does not have compact dataflow"
    ),
    Phrase(
        "block-iter-kind", "The block has block iter type other than data-parallel or reduction"
    ),
    Phrase("inline-body", "The block has init statement", when="has an init"),
    Phrase(
        "inline-body",
        "The block cannot be inlined because its body pattern does not meet "
        "the condition for inlining",
    ),
    Phrase(
        "single-producer",
        "The consumer block to be inlined is required to have only a single producer block",
    ),
    Phrase(
        "single-consumer",
        "The producer block should be a complete block who has only a single consumer",
    ),
    Phrase("output-block", "Cannot operate on an output block"),
    Phrase(
        "single-writer",
        "The buffer is allowed to be written by single block",
        primitive="cache_read",
    ),
    Phrase(
        "single-writer",
        "The buffer is allowed to be written by single block",
        primitive="cache_write",
    ),
    Phrase(
        "single-writer",
        "The block is not a complete block (it is not the only writer of its output)",
    ),
    Phrase(
        "location",
        "Expected the block and loop to be under the same block scope, and loop "
        "not to be the ancestor of block",
        when="is already under",
    ),
    Phrase("location", _required_blocks, when="is not under"),
    Phrase("location", _required_blocks, when="has no"),
    Phrase("same-scope", "Expected the block and loop to be under the same block scope"),
    Phrase("reduction-block", "Not a reduction block"),
    Phrase("reduction-index", "Not a reduction block"),
    Phrase("stage-pipeline", "The scope root is not a stage pipeline"),
    Phrase("serial-loop", "The input loop of rfactor is required to be `kSerial`"),
    Phrase("init-update", "No matched reducer for the identity and the combiner"),
    Phrase("reducer-identity", "No matched reducer for the identity and the combiner"),
    Phrase(
        "unbound-loop",
        "A loop who has extent greater than one and is not bound to any block iter should not "
        "appear under a reduction loop",
    ),
    Phrase(
        "rfactor-block",
        "The reduction block should be the first child block of the outermost loop outside of it",
        when="is not the first block",
    ),
    Phrase(
        "rfactor-loop",
        "The loops outside of the reduction block are required not to be touched by both data "
        "parallel block iters and reduction block iters",
        when="both spatial and reduction",
    ),
    Phrase(
        "rfactor-loop",
        "The loop to be applied rfactor is required not to be touched by any data parallel "
        "block iter of the block",
        when="no spatial one",
    ),
    Phrase(
        "argument",
        "The input `factor_axis` is out of range",
        primitive="rfactor",
        when="factor_axis",
    ),
    Phrase("storage-scope", "The input storage scope is invalid"),
    Phrase("buffer-index", "The input `buffer_index` is out of range", when="out of range"),
    Phrase("root-block", "Cannot operate on the root block"),
)


def phrase_for(error: ScheduleError) -> str | None:
    """TVM's words for the rule ``error`` cites, or None when we know none."""
    for entry in PHRASES:
        if entry.rule != error.rule:
            continue
        if entry.primitive is not None and entry.primitive != error.primitive:
            continue
        if entry.when is not None and entry.when not in error.detail:
            continue
        return entry.text(error.detail) if callable(entry.text) else entry.text
    return None


def add_tvm_phrase(error: ScheduleError) -> ScheduleError:
    """``error`` itself, its detail ending with TVM's key phrase (once) when there is one."""
    phrase = phrase_for(error)
    if phrase is None or phrase.lower() in error.detail.lower():
        return error
    error.detail = f"{error.detail.rstrip('.')}. TVM: {phrase}"
    error.args = (f"{error.primitive}: {error.detail}",)
    return error


Cls = TypeVar("Cls", bound=type)


def with_tvm_phrases(cls: Cls) -> Cls:
    """Class decorator: every public method of ``cls`` (its mixins' included) adds TVM's key
    phrase to the ``ScheduleError`` it raises; the error, its rule and its IR stay the same."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        method = inspect.getattr_static(cls, name)
        if inspect.isfunction(method):
            setattr(cls, name, _phrased(method))
    return cls


def _phrased(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except ScheduleError as err:
            add_tvm_phrase(err)
            raise

    return call
