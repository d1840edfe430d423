"""Block-level regions: declared accesses with bindings substituted, relaxed over loops, and
thread axes relaxed by storage scope."""

from __future__ import annotations

import pytest

from tilewright.ir import BlockRealize, For, ForKind, IntImm, Range, Var, dtype, op
from tilewright.schedule.region import (
    access_regions,
    interval_range,
    relax_region,
    relaxed_domain,
    relaxes_thread,
)
from tilewright.schedule.tree import walk
from tilewright.script import tir as T


@T.prim_func
def window(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")):
    for i_0 in T.thread_binding(8, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            with T.block("C"):
                vi = T.axis.spatial(1024, i_0 * 128 + i_1)
                B[vi] = A[vi] + A[vi + 1] + A[vi + 2]


@pytest.mark.parametrize(
    ("scope", "tag", "shared_by_threads"),
    [
        ("global", "blockIdx.x", True),
        ("global", "threadIdx.y", True),
        ("shared", "threadIdx.x", True),
        ("shared", "vthread.x", True),
        ("shared", "blockIdx.x", False),
        ("shared.dyn", "threadIdx.x", True),
        ("local", "threadIdx.x", False),
        ("local", "blockIdx.x", False),
    ],
)
def test_which_threads_share_a_scope(scope: str, tag: str, shared_by_threads: bool) -> None:
    assert relaxes_thread(scope, tag) is shared_by_threads


def _loops_and_realize() -> tuple[list[For], BlockRealize]:
    paths = list(walk(window.body))
    loops = [p[-1] for p in paths if isinstance(p[-1], For)]
    realize = next(p[-1] for p in paths if isinstance(p[-1], BlockRealize) and p[-1].iter_values)
    return loops, realize  # type: ignore[return-value]


def test_the_window_sum_needs_130_elements_per_thread_block() -> None:
    loops, realize = _loops_and_realize()
    buffer = window.buffer_of(window.params[0])
    (region,) = access_regions(realize, buffer, reads=True)
    assert str(region.region[0].extent) == "3"
    i_0, i_1 = loops
    dom = relaxed_domain([i_0, i_1], [], "shared")
    assert list(dom) == [i_1.loop_var]
    (interval,) = relax_region([region], dom)
    rng = interval_range(interval)
    assert rng is not None and isinstance(rng.extent, IntImm) and rng.extent.value == 130
    assert rng.min.script() == "i_0 * 128"
    # A local copy is per thread: only its own three elements.
    assert relaxed_domain([i_0, i_1], [], "local") == {}
    (interval,) = relax_region([region], {})
    assert interval_range(interval).extent.value == 3  # type: ignore[union-attr]


def test_regions_are_united_per_dimension() -> None:
    i = Var("i", dtype("int32"))
    buffer = window.buffer_of(window.params[0])
    low = buffer[i : i + 2]
    high = buffer[i + 5 : i + 6]
    (interval,) = relax_region([low, high], {i: Range(op.const(0), op.const(4))})
    assert interval.min_value.value == 0 and interval.max_value.value == 8  # type: ignore[union-attr]
    assert relax_region([], {}) is None
    assert (
        relaxed_domain([For(i, op.const(0), op.const(4), ForKind.SERIAL, None)], [], "global") == {}
    )  # type: ignore[arg-type]
