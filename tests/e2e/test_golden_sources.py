"""The seed programs' generated source, compared with golden files recorded before the
backend-table redesign: C, CUDA, OpenCL and Metal text must not change by accident.

Regenerate after an intended change with ``python tests/e2e/test_golden_sources.py --update``
and review the diff.
"""

# ruff: noqa: E402 - the test directories go on sys.path before their modules are imported
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(_TESTS), str(_TESTS / "tirx")]

import seed_notebook as nb
from test_lower_tirx import round_trip_kernel

import tilewright as tw
from tilewright.backend import backend_for
from tilewright.demo import blocking, blocking_with_shared, cpu_schedule
from tilewright.target import Target
from tilewright.tirx.layout import ComposeLayout, S, SwizzleLayout, TileLayout

GOLDEN = Path(__file__).resolve().parent / "golden"
GPU_KINDS = ("cuda", "opencl", "metal")


def _swizzled() -> tw.IRModule:
    layout = ComposeLayout(SwizzleLayout.from_bytes(128, 32), TileLayout(S[(32, 32)]))
    return round_trip_kernel((32, 32), "float32", layout)


# name -> (program, targets it is built for)
PROGRAMS: dict[str, tuple[Callable[[], object], tuple[str, ...]]] = {
    "vecadd": (lambda: nb.MyModuleVecAdd, ("c",)),
    "window_sum": (lambda: nb.MyModuleWindowSum, ("c",)),
    "matmul": (lambda: nb.MyModuleMatmul, ("c",)),
    "matmul_cpu_schedule": (lambda: cpu_schedule(nb.MyModuleMatmul).mod, ("c",)),
    "expected_1": (lambda: nb.Expected_1, GPU_KINDS),
    "expected_4": (lambda: nb.Expected_4, GPU_KINDS),
    "expected_6": (lambda: nb.Expected_6, GPU_KINDS),
    "blocking": (
        lambda: blocking(tw.tir.Schedule(nb.MyModuleMatmul), 8, 8, 4, 4, 4).mod,
        GPU_KINDS,
    ),
    "blocking_with_shared": (
        lambda: blocking_with_shared(tw.tir.Schedule(nb.MyModuleMatmul), 8, 8, 8, 8, 8).mod,
        GPU_KINDS,
    ),
    "tirx_round_trip": (
        lambda: round_trip_kernel((32, 32), "float16", TileLayout(S[(32, 32)])),
        ("cuda",),
    ),
    "tirx_round_trip_swizzled": (_swizzled, ("cuda",)),
}

CASES = [(name, kind) for name, (_, kinds) in PROGRAMS.items() for kind in kinds]


def generated_source(name: str, kind: str) -> str:
    """The source ``tw.build`` generates for program ``name`` and target ``kind`` (lowered and
    generated through the backend table's row, not compiled)."""
    target = Target(kind)
    lowered = tw.lower(PROGRAMS[name][0](), target)
    return backend_for(target).codegen(lowered, target).source


@pytest.mark.parametrize(("name", "kind"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_source_matches_golden(name: str, kind: str) -> None:
    expected = (GOLDEN / f"{name}.{kind}.txt").read_text()
    assert generated_source(name, kind) == expected


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        raise SystemExit(__doc__)
    GOLDEN.mkdir(exist_ok=True)
    for name, kind in CASES:
        (GOLDEN / f"{name}.{kind}.txt").write_text(generated_source(name, kind))
        print("wrote", f"{name}.{kind}.txt")
