"""The ``stmatrix`` and ``ldmatrix`` variants of ``copy`` (``tilewright/tirx/ops/copy_matrix.py``):
16-bit registers in the wgmma and mma.sync accumulator layouts stored to (loaded from) shared
memory 8 x 8 matrices at a time, with swizzled, padded and row-major tiles; run on the
evaluator (``stmatrix`` and ``ldmatrix`` are warp-collective there, lane by lane) and
compared with numpy; the plan's groups; the CUDA text and an NVRTC build; what the variants
refuse and why."""

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run_kernel

import tilewright as tw
from tilewright.ir import decl_buffer
from tilewright.layout import (
    ComposeLayout,
    S,
    SwizzleLayout,
    TileLayout,
    laneid,
    mma_accumulator_layout,
    wgmma_accumulator_layout,
)
from tilewright.runtime.cuda_runtime import nvrtc
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx
from tilewright.tirx.dispatch import DispatchError
from tilewright.tirx.operand import operand
from tilewright.tirx.ops.copy_matrix import plan_matrix_copy
from tilewright.tirx.transform import LowerTIRx

SWIZZLED = ComposeLayout(SwizzleLayout.from_bytes(128, 16), TileLayout(S[64, 64].shard))
PADDED = TileLayout(S[(64, 64) : (72, 1)].shard)


def _wgmma_kernel(shared_layout, dtype: str = "float16"):
    """A 64 x 64 tile: global -> registers (wgmma layout) -> stmatrix -> shared -> ldmatrix
    (two column halves: the second starts at a register offset) -> registers -> global."""

    @T.prim_func
    def kernel(A: T.Buffer((64, 64), dtype), C: T.Buffer((64, 64), dtype)):
        T.device_entry()
        T.thread_id([128])
        regs = T.alloc_buffer(
            (64, 64), dtype, scope="local", layout=wgmma_accumulator_layout(64, 64)
        )
        back = T.alloc_buffer(
            (64, 64), dtype, scope="local", layout=wgmma_accumulator_layout(64, 64)
        )
        Cs = T.alloc_buffer((64, 64), dtype, scope="shared.dyn", align=1024, layout=shared_layout)
        Tx.wg.copy(regs[0:64, 0:64], A[0:64, 0:64])
        Tx.wg.copy(Cs[0:64, 0:64], regs[0:64, 0:64])
        T.cuda.cta_sync()
        Tx.wg.copy(back[0:64, 32:64], Cs[0:64, 32:64])
        Tx.wg.copy(back[0:64, 0:32], Cs[0:64, 0:32])
        Tx.wg.copy(C[0:64, 0:64], back[0:64, 0:64])

    return kernel


@T.prim_func
def warp_fragment(A: T.Buffer((32, 16), "bfloat16"), C: T.Buffer((32, 16), "bfloat16")):
    """An mma.sync m16n8 accumulator of 32 x 16 on one warp, stored row-major."""
    T.device_entry()
    T.lane_id([32])
    regs = T.alloc_buffer(
        (32, 16), "bfloat16", scope="local", layout=mma_accumulator_layout(32, 16)
    )
    Cs = T.alloc_buffer((32, 16), "bfloat16", scope="shared")
    Tx.warp.copy(regs[0:32, 0:16], A[0:32, 0:16])
    Tx.warp.copy(Cs[0:32, 0:16], regs[0:32, 0:16])
    T.cuda.cta_sync()
    Tx.warp.copy(C[0:32, 0:16], Cs[0:32, 0:16])


def _run(kernel, shape, dtype):
    lower = LowerTIRx("cuda")
    mod = lower(kernel)
    a = (np.arange(np.prod(shape)) % 251).reshape(shape).astype(dtype)
    c = np.zeros(shape, dtype)
    return [d.variant for d in lower.decisions], run_kernel(mod["main"], a, c).arrays[1], a


@pytest.mark.parametrize("layout", [SWIZZLED, PADDED, None], ids=["swizzled", "padded", "dense"])
def test_a_wgmma_fragment_round_trips_through_stmatrix_and_ldmatrix(layout) -> None:
    variants, got, a = _run(_wgmma_kernel(layout), (64, 64), "float16")
    assert variants == ["register", "stmatrix", "ldmatrix", "ldmatrix", "register"]
    np.testing.assert_array_equal(got, a)


def test_an_mma_sync_fragment_on_one_warp() -> None:
    import ml_dtypes

    variants, got, a = _run(warp_fragment, (32, 16), ml_dtypes.bfloat16)
    assert variants[1] == "stmatrix"
    np.testing.assert_array_equal(got.astype("float32"), a.astype("float32"))


def test_the_plan_groups_four_matrices_a_warp_with_consecutive_registers() -> None:
    regs = decl_buffer((64, 64), "float16", "r", "local", layout=wgmma_accumulator_layout(64, 64))
    cs = decl_buffer((64, 64), "float16", "Cs", "shared.dyn", align=1024, layout=SWIZZLED)
    plan = plan_matrix_copy(operand(regs[0:64, 0:64]), operand(cs[0:64, 0:64]), warps=4)
    assert plan.warp_rows == 16
    assert [(g.count, g.register, g.rows, g.cols) for g in plan.groups[:2]] == [
        (4, 0, (0, 1, 0, 1), (0, 0, 1, 1)),
        (4, 8, (0, 1, 0, 1), (2, 2, 3, 3)),
    ]
    # A column slice starts at the slice's first register pair.
    half = plan_matrix_copy(operand(regs[0:64, 32:64]), operand(cs[0:64, 0:32]), warps=4)
    assert len(half.groups) == 2 and half.groups[0].register == 0


def test_the_cuda_text_and_nvrtc_build() -> None:
    artifact = tw.build_artifact(_wgmma_kernel(SWIZZLED), target="cuda")
    assert artifact.source.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 4
    assert artifact.source.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 4
    if nvrtc.nvrtc_version() is not None:
        assert artifact.format == "cubin" and artifact.binary[:4] == b"\x7fELF"


def _refusal(dst_layout, reg_layout, dtype="float16", scope="warpgroup", target="cuda", load=False):
    shape = (64, 64)

    @T.prim_func
    def kernel(A: T.Buffer(shape, dtype)):
        T.device_entry()
        T.thread_id([128])
        regs = T.alloc_buffer(shape, dtype, scope="local", layout=reg_layout)
        Cs = T.alloc_buffer(shape, dtype, scope="shared.dyn", align=1024, layout=dst_layout)
        if load:
            Tx.wg.copy(regs[0:64, 0:64], Cs[0:64, 0:64], dispatch="ldmatrix")
        elif scope == "warpgroup":
            Tx.wg.copy(Cs[0:64, 0:64], regs[0:64, 0:64], dispatch="stmatrix")
        elif scope == "warp":
            Tx.warp.copy(Cs[0:64, 0:64], regs[0:64, 0:64], dispatch="stmatrix")
        else:
            Tx.cta.copy(Cs[0:64, 0:64], regs[0:64, 0:64], dispatch="stmatrix")

    with pytest.raises(DispatchError) as err:
        LowerTIRx(target)(kernel)
    return str(err.value)


def test_what_stmatrix_refuses() -> None:
    acc = wgmma_accumulator_layout(64, 64)
    assert "stmatrix moves 16-bit elements, not float32" in _refusal(None, acc, dtype="float32")
    assert "not the cta scope" in _refusal(None, acc, scope="cta")
    assert "has no stmatrix (CUDA sm_90" in _refusal(None, acc, target="cuda -arch=sm_80")
    # 4-byte swizzle chunks would split the 16-byte rows a lane writes.
    split = ComposeLayout(SwizzleLayout(1, 3, 3), TileLayout(S[64, 64].shard))
    assert "splits stmatrix's 16-byte rows" in _refusal(split, acc)
    # Two rows a lane (lane t holds rows 2t and 2t + 1): not stmatrix's distribution.
    rows = TileLayout(S[(32, 2, 64) : (1 @ laneid, 64, 1)])
    assert "element (0, 2) is not in lane 1" in _refusal(None, rows, scope="warp")
    # ldmatrix: sm_75 and newer, the same distribution.
    assert "has no ldmatrix (CUDA sm_75" in _refusal(
        None, acc, target="cuda -arch=sm_70", load=True
    )
    assert "ldmatrix moves row r" in _refusal(None, rows, load=True)
