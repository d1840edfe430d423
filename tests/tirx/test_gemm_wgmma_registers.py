"""``Tx.warpgroup.gemm`` with A in registers: the ``wgmma`` variant's ``_rs`` form (A a
``local`` 16-bit region in the wgmma fragment layout, what an accumulator becomes once cast;
attention's P @ V). The IR (one ``wgmma_mma_async_rs`` a k step, A's registers 8 further each
step), a CPU model of the emitted calls against ``A @ B.T``, the CUDA built for sm_90a, and
the refusals. The GPU run is in tests/runtime/test_gpu_hopper_tiles.py."""

from __future__ import annotations

import numpy as np
import pytest
from gemm_kernels import registers_gemm, swizzled
from wgmma_model import run_wgmmas, store_through, value, wgmma_calls

import tilewright as tw
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.layout import S, TileLayout, laneid, wgmma_accumulator_layout, wgmma_fragment_coord
from tilewright.runtime.cuda_runtime import nvrtc
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx
from tilewright.tirx.dispatch import DispatchError
from tilewright.tirx.transform import LowerTIRx


def _lowered(**kwargs):
    lower = LowerTIRx("cuda")
    return lower(registers_gemm(**kwargs))["main"], lower.decisions


def test_one_rs_wgmma_a_k_step_with_a_registers_8_further() -> None:
    func, decisions = _lowered(m=128, k=64)
    assert [d.variant for d in decisions] == ["register", "gmem_smem", "wgmma", "register"]
    assert decisions[2].notes["a"] == "registers" and decisions[2].notes["m_blocks"] == 2
    calls = wgmma_calls(func)
    assert all(hopper.WGMMA_MMA_ASYNC_RS.matches(c) for c in calls) and len(calls) == 8
    # Block b's rows start at register 32 b (a 64 x 64 block: 32 a thread), step s at 8 s.
    assert [value(c.args[3], {}) for c in calls] == [0, 8, 16, 24, 32, 40, 48, 56]
    assert [value(c.args[7], {}) for c in calls] == [0, 1, 1, 1] * 2  # the first step overwrites


@pytest.mark.parametrize(("m", "n", "k"), [(64, 128, 64), (128, 64, 32), (64, 256, 16)])
def test_model_of_the_rs_wgmmas_computes_a_times_b_transposed(m: int, n: int, k: int) -> None:
    func, _ = _lowered(m=m, n=n, k=k)
    rng = np.random.default_rng(2)
    a = rng.integers(-4, 5, (m, k)).astype(np.float64)
    b = rng.integers(-4, 5, (n, k)).astype(np.float64)
    layout = swizzled(n, k)
    storage = {"Bs_1": store_through(layout, b, layout.cosize())}
    a_registers = np.full((128, m * k // 128), np.nan)
    for t in range(128):
        for r in range(a_registers.shape[1]):
            row, col = wgmma_fragment_coord(t, r, k)
            a_registers[t, r] = a[row, col]
    acc = np.full((128, m * n // 128), 7.0)  # accum=False: overwritten
    run_wgmmas(wgmma_calls(func), storage, acc, {}, a_registers)
    got = np.full((m, n), np.nan)
    for t in range(128):
        for r in range(acc.shape[1]):
            row, col = wgmma_fragment_coord(t, r, n)
            got[row, col] = acc[t, r]
    np.testing.assert_array_equal(got, a @ b.T)


def test_the_cuda_passes_four_a_registers_and_builds_for_sm_90a() -> None:
    artifact = tw.build_artifact(registers_gemm(dtype="bfloat16"), target="cuda")
    text = artifact.source
    assert text.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 4
    assert '"r"(((unsigned*)(&a_regs_1[0] + 8))[3])' in text  # step 1's fourth A register
    if nvrtc.nvrtc_version() is not None:
        assert artifact.format == "cubin" and artifact.arch == "sm_90a"


def test_a_register_layout_wgmma_cannot_read_is_refused() -> None:
    @T.prim_func
    def rows_in_lanes(B: T.Buffer((64, 16), "float16")):
        T.device_entry()
        T.thread_id([128])
        # Each lane holds two whole rows: not the fragment's distribution.
        a_regs = T.alloc_buffer(
            (64, 16),
            "float16",
            scope="local",
            layout=TileLayout(S[(2, 32, 16) : (16, 1 @ laneid, 1)]),
        )
        Bs = T.alloc_buffer(
            (64, 16), "float16", scope="shared.dyn", align=1024, layout=swizzled(64, 16)
        )
        acc = T.alloc_buffer(
            (64, 64), "float32", scope="local", layout=wgmma_accumulator_layout(64, 64)
        )
        Tx.wg.gemm(acc[0:64, 0:64], a_regs[0:64, 0:16], Bs[0:64, 0:16])

    with pytest.raises(
        DispatchError, match=r"A a_regs: layout .* is not the wgmma m64nNk16 fragment"
    ):
        LowerTIRx("cuda")(rows_in_lanes)
