"""The library kernels' guards, checked on the CPU before any GPU run: for problems of each
kernel's shape sweep (``tilewright/meta_schedule/testing/shape_sweep.py``, run whole on the
GPU by ``benchmarks/gpu_shape_sweep.py``), every access of a global buffer stays inside it
for every thread and iteration whose guards hold, and every element of the output is
stored exactly once (``global_accesses``: plain stores and TMA store boxes). Kernels that
take whole tiles only refuse a tail, naming the tile and the sizes; the CPU model of the
Hopper pipeline runs a tail of each epilogue (``test_tile_hopper_gemm.py``)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from global_accesses import global_accesses

from tilewright.ir import Evaluate, IfThenElse, IntImm, Mutator, PrimFunc, Stmt
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.meta_schedule.testing.shape_sweep import SWEEPS, Case, KernelSweep
from tilewright.meta_schedule.testing.tensor_core import mma_matmul, schedule_mma
from tilewright.schedule import Schedule
from tilewright.tirx.transform import LowerTIRx

HOPPER = sorted(name for name in SWEEPS if name.startswith("tile_hopper_gemm/"))
WHOLE_TILES = ["hopper_gemm/f16", "tile_gemm/f16", "tile_gemm_mma/bf16", "tma_copy/f16",
               "cp_async_copy/f16"]  # fmt: skip
SAMPLE = 10  # problems a sweep checked here (the GPU runs all of them)


def _lowered(sweep: KernelSweep, case: Case) -> PrimFunc:
    func = sweep.build(case)
    assert isinstance(func, PrimFunc)
    return LowerTIRx(sweep.target)(func)["main"]


def _sample(sweep: KernelSweep) -> list[Case]:
    """Problems spread over the sweep (the sub-tile ones and a small grid included), and
    the problems users reported."""
    cases = sweep.cases()
    reported = [c for c in cases if c.shape in sweep.reported]
    return cases[:: max(1, len(cases) // SAMPLE)][:SAMPLE] + reported


def _stored_once(sweep: KernelSweep, case: Case) -> None:
    found = global_accesses(_lowered(sweep, case))
    assert found.outside == [], f"{sweep.name} {case}: {found.outside[:3]}"
    counts = found.stores[sweep.output]
    assert counts.shape == sweep.operand_shapes(case)[sweep.output]
    missed, twice = int((counts == 0).sum()), int((counts > 1).sum())
    assert (missed, twice) == (0, 0), f"{sweep.name} {case}: {missed} never, {twice} twice"


@pytest.mark.parametrize("name", HOPPER)
def test_tile_hopper_gemm_tails_are_guarded_and_c_is_stored_once(name: str) -> None:
    sweep = SWEEPS[name]
    for case in _sample(sweep):
        _stored_once(sweep, case)


@pytest.mark.parametrize("name", WHOLE_TILES)
def test_whole_tile_kernels_store_each_element_once(name: str) -> None:
    sweep = SWEEPS[name]
    for case in _sample(sweep)[:4]:
        _stored_once(sweep, case)


class _Unguard(Mutator):
    """Drops the guards whose condition mentions ``text`` (the then-branch always runs)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def visit_IfThenElse(self, node: IfThenElse) -> Stmt:
        node = self.generic_visit(node)
        return node.then_case if self.text in str(node.condition) else node


class _DropTmaStores(Mutator):
    def visit_Evaluate(self, node: Evaluate) -> Evaluate:
        if hopper.TMA_STORE.matches(node.value):
            return node.replace(value=IntImm(0, "int32"))
        return node


def test_the_check_finds_a_missing_guard_and_a_missing_store() -> None:
    sweep = SWEEPS["tile_hopper_gemm/f16-direct"]
    case = Case((200, 1320, 72), (("grid", 3), ("group_m", 1)))
    func = _lowered(sweep, case)
    unguarded = func.replace(body=_Unguard("< 1320").visit(func.body))
    found = global_accesses(unguarded)
    assert found.outside and re.match(
        r"store of C \(shape \(200, 1320\)\): index", found.outside[0]
    )
    tma = SWEEPS["tile_hopper_gemm/f16-tma"]
    func = _lowered(tma, case)
    counts = global_accesses(func.replace(body=_DropTmaStores().visit(func.body))).stores
    assert "C" not in counts or not counts["C"].any()


@pytest.mark.parametrize(
    ("name", "shape", "message"),
    [
        ("hopper_gemm/f16", (1000, 1320, 520), "1000 x 1320 x 520 is not a multiple of the 128"),
        ("tile_gemm/f16", (256, 136, 64), "256 x 136 x 64 is not a multiple of the 128 x 128"),
        ("tile_gemm_mma/bf16", (64, 64, 72), "64 x 64 x 72 is not a multiple of the 64 x 64"),
        ("tma_copy/f16", (130, 64), "130 x 64 is not a multiple of the 128 x 64 tile"),
        ("cp_async_copy/f16", (64, 100), "64 x 100 is not a multiple of the 64 x 64 tile"),
        ("mma_sync_schedule/f16", (1000, 1320, 520), "1000 x 1320 x 520, not a multiple of"),
        # The Hopper GEMM takes any M and N; K is TMA's: 16-byte rows, one k tile at least.
        ("tile_hopper_gemm/f16-tma", (128, 256, 100), "k = 100 makes A's and Bt's rows 200"),
        ("tile_hopper_gemm/f16-tma", (128, 256, 40), "k = 40 is less than one 64-wide k tile"),
        ("tile_hopper_gemm/f16-tma", (128, 60, 64), "at least 64 wide .* not n = 60"),
        ("tile_hopper_gemm/f16-tma", (128, 100, 64), "multiple of 16 bytes .* not n = 100"),
    ],
)
def test_tails_a_kernel_cannot_take_are_refused_with_the_size(name, shape, message) -> None:
    with pytest.raises(ValueError, match=message):
        SWEEPS[name].build(Case(shape))


def test_the_mma_schedule_names_the_block_tile() -> None:
    with pytest.raises(ValueError, match=r"128 x 128 x 32 block tile"):
        schedule_mma(Schedule(mma_matmul(1000, 1320, 520)))


def test_every_sweep_covers_every_residue_sub_tile_problems_and_many_tiles() -> None:
    for sweep in SWEEPS.values():
        cases = sweep.cases()
        assert len(cases) >= 300, sweep.name
        assert len({c.shape for c in cases}) == len(cases)
        for d, dim in enumerate(sweep.dims):
            residues = {c.shape[d] % dim.tile for c in cases}
            assert residues == set(dim.residues), (sweep.name, d)
            assert all(c.shape[d] % dim.step == 0 and c.shape[d] >= dim.least for c in cases)
        if sweep.sub_tile:
            small = {c.shape[0] for c in cases if max(c.shape[:2]) < sweep.dims[1].tile}
            assert set(range(1, 17)) <= small, sweep.name
        tiles = [
            np.prod([-(-s // dim.tile) for s, dim in zip(c.shape[:2], sweep.dims)]) for c in cases
        ]
        assert max(tiles) > 132 and min(tiles) < 132, sweep.name
        settings = {c.settings for c in cases}
        assert len(settings) == len(sweep.settings), sweep.name
