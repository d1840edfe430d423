"""Code written against TVM matches our ScheduleError messages: each carries TVM's key phrase
for the rule it breaks, next to our own detail, rule statement and marked IR."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

import tilewright as tvm
from tilewright.schedule.error import ScheduleError
from tilewright.schedule.tvm_phrases import add_tvm_phrase, phrase_for
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def two_stages(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def two_consumers(A: T.Buffer((16,), "float32"), D: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    C = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi] + T.float32(1)
    for i in range(16):
        with T.block("D"):
            vi = T.axis.spatial(16, i)
            D[vi] = B[vi] + C[vi]


@T.prim_func
def matmul(
    A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")
):
    for i, j, k in T.grid(8, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def branching(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i in range(16):
        for j in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def not_affine(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i, j in T.grid(4, 4):
        with T.block("B"):
            vi = T.axis.spatial(16, i * j)
            B[vi] = A[vi]


def _loops(sch: Schedule, block: str) -> list:
    return sch.get_loops(block)


def _split_two_none(sch: Schedule) -> object:
    return sch.split(_loops(sch, "B")[0], [None, None])


def _split_short(sch: Schedule) -> object:
    return sch.split(_loops(sch, "B")[0], [2, 2])


def _fuse_branches(sch: Schedule) -> object:
    i, _ = _loops(sch, "B")
    return sch.fuse(i, _loops(sch, "C")[1])


def _reorder_twice(sch: Schedule) -> object:
    i, _ = _loops(sch, "B")
    sch.reorder(i, i)
    return None


def _reorder_branches(sch: Schedule) -> object:
    i, _ = _loops(sch, "B")
    sch.reorder(_loops(sch, "C")[1], i)
    return None


def _compute_at_not_all_consumers(sch: Schedule) -> object:
    sch.compute_at(sch.get_block("B"), _loops(sch, "B")[0])
    return None


CASES: list[tuple[str, Callable[[], object], Callable[[Schedule], object], str]] = [
    (
        "get_block",
        lambda: two_stages,
        lambda sch: sch.get_block("wrong_name"),
        "Cannot find a block with the name: wrong_name",
    ),
    ("split none", lambda: two_stages, _split_two_none, "Only one factor can be specified as -1"),
    ("split product", lambda: two_stages, _split_short, "The product of factors is not larger"),
    (
        "fuse",
        lambda: branching,
        _fuse_branches,
        "is not the parent of the inner loop|is not the only child",
    ),
    ("reorder twice", lambda: two_stages, _reorder_twice, "appears in the input array"),
    ("reorder chain", lambda: branching, _reorder_branches, "The loops are not in a chain"),
    (
        "reorder affine",
        lambda: not_affine,
        lambda sch: sch.reorder(*reversed(_loops(sch, "B"))),
        "is required to have an affine binding",
    ),
    (
        "compute_inline init",
        lambda: matmul,
        lambda sch: sch.compute_inline("C"),
        "Cannot operate on an output block|The block has init statement",
    ),
    (
        "compute_inline output",
        lambda: two_stages,
        lambda sch: sch.compute_inline("C"),
        "Cannot operate on an output block",
    ),
    (
        "reverse_compute_inline producer",
        lambda: two_stages,
        lambda sch: sch.reverse_compute_inline("B"),
        "required to have only a single producer block",
    ),
    (
        "compute_at location",
        lambda: branching,
        _compute_at_not_all_consumers,
        "to be under the same block scope, and loop not to be the ancestor of block",
    ),
    (
        "compute_at consumers",
        lambda: two_consumers,
        lambda sch: sch.compute_at(sch.get_block("B"), _loops(sch, "C")[0]),
        r"requires all the consumer\(s\) of the given block to be present under the target loop",
    ),
    (
        "reverse_compute_at producers",
        lambda: two_consumers,
        lambda sch: sch.reverse_compute_at(sch.get_block("D"), _loops(sch, "C")[0]),
        r"requires all the producer\(s\) of the given block to be present under the target loop",
    ),
    (
        "cache_read storage scope",
        lambda: two_stages,
        lambda sch: sch.cache_read("C", 0, "sharde"),
        "The input storage scope is invalid",
    ),
    (
        "cache_write index",
        lambda: two_stages,
        lambda sch: sch.cache_write("C", 3, "local"),
        "out of range",
    ),
]


@pytest.mark.parametrize(
    ("func", "call", "phrase"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_message_carries_tvm_phrase(
    func: Callable[[], object], call: Callable[[Schedule], object], phrase: str
) -> None:
    sch = Schedule(func())
    with pytest.raises(tvm.tir.ScheduleError, match=phrase) as info:
        call(sch)
    error = info.value
    text = str(error)
    assert f"rule {error.rule}: " in text  # our rule name and statement stay
    assert re.search(phrase, error.args[0])  # TVM code reads ``excinfo.value.args``


def test_marked_ir_follows_the_phrase() -> None:
    sch = Schedule(two_stages)
    with pytest.raises(ScheduleError, match="Cannot operate on an output block") as info:
        sch.compute_inline("C")
    assert "# <-- here" in str(info.value)
    assert info.value.rule == "output-block"


def test_a_phrase_is_added_once_and_only_for_known_rules() -> None:
    error = ScheduleError("split", "split-factors", "loop 'i': the factors [2] multiply to 2")
    add_tvm_phrase(error)
    add_tvm_phrase(error)
    assert error.detail.count("The product of factors") == 1
    assert str(error).startswith("split: loop 'i': the factors [2] multiply to 2. TVM: ")
    assert phrase_for(ScheduleError("annotate", "annotation", "no key 'x'")) is None
    init = ScheduleError(
        "compute_inline", "inline-body", "block 'C' is a reduction (it has an init)"
    )
    assert phrase_for(init) == "The block has init statement"
