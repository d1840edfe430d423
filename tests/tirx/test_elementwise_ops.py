"""Elementwise tile primitives (``cast``, ``add``, ``sub``, ``mul``, ``maximum``, ``minimum``,
``relu``, ``gelu``, ``exp``): an accumulator epilogue in registers (a bias row broadcast over
a wgmma accumulator, ReLU, conversion to float16) and the scalar variant over shared and
global memory, run on the evaluator against numpy; the script round trip; and what dispatch
refuses."""

from __future__ import annotations

import math

import numpy as np
import pytest
from epilogue_kernels import bias_relu_epilogue
from evaluator import run_kernel

import tilewright as tw
from tilewright.layout import S, TileLayout, laneid
from tilewright.runtime.cuda_runtime import nvrtc
from tilewright.script import from_source
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx
from tilewright.tirx.dispatch import DispatchError
from tilewright.tirx.transform import LowerTIRx


def test_a_bias_relu_cast_epilogue_on_a_wgmma_accumulator() -> None:
    lower = LowerTIRx("cuda")
    mod = lower(bias_relu_epilogue)
    assert [d.variant for d in lower.decisions] == ["register"] * 5
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 16)).astype("float32")
    bias = rng.standard_normal(16).astype("float16")
    c = np.full((64, 16), np.nan, "float16")
    got = run_kernel(mod["main"], a, bias, c).arrays[2]
    want = np.maximum(a + bias.astype("float32"), 0).astype("float16")
    np.testing.assert_array_equal(got, want)


@T.prim_func
def scalar_ops(
    A: T.Buffer((16, 32), "float32"),
    col: T.Buffer((16, 1), "float32"),
    B: T.Buffer((6, 16, 32), "float32"),
):
    T.device_entry()
    T.thread_id([64])
    S_ = T.alloc_buffer((16, 32), "float32", scope="shared")
    Tx.cta.copy(S_[0:16, 0:32], A[0:16, 0:32])
    T.cuda.cta_sync()
    Tx.cta.gelu(B[0, 0:16, 0:32], S_[0:16, 0:32])
    Tx.cta.exp(B[1, 0:16, 0:32], S_[0:16, 0:32])
    Tx.cta.mul(B[2, 0:16, 0:32], S_[0:16, 0:32], 3.0)
    Tx.cta.sub(B[3, 0:16, 0:32], S_[0:16, 0:32], col[0:16, 0:1])  # one value per row
    Tx.cta.maximum(B[4, 0:16, 0:32], S_[0:16, 0:32], col[0:16, 0:1])
    Tx.cta.minimum(B[5, 0:16, 0:32], A[0:16, 0:32], 0.25)


def test_scalar_variant_over_shared_and_global_memory() -> None:
    lower = LowerTIRx("cuda")
    mod = lower(scalar_ops)
    assert [d.variant for d in lower.decisions][1:] == ["scalar"] * 6
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 32)).astype("float32")
    col = rng.standard_normal((16, 1)).astype("float32")
    b = np.full((6, 16, 32), np.nan, "float32")
    got = run_kernel(mod["main"], a, col, b).arrays[2]
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(got[0], 0.5 * a * (1 + erf(a / math.sqrt(2))), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[1], np.exp(a), rtol=1e-6)
    np.testing.assert_array_equal(got[2], a * np.float32(3))
    np.testing.assert_array_equal(got[3], a - col)
    np.testing.assert_array_equal(got[4], np.maximum(a, col))
    np.testing.assert_array_equal(got[5], np.minimum(a, np.float32(0.25)))


def test_elementwise_ops_print_and_parse_back() -> None:
    text = bias_relu_epilogue.script()
    for line in (
        "Tx.warpgroup.add(acc[0:64, 0:16], acc[0:64, 0:16], bias[0:16])",
        "Tx.warpgroup.relu(acc[0:64, 0:16], acc[0:64, 0:16])",
        "Tx.warpgroup.cast(out[0:64, 0:16], acc[0:64, 0:16])",
    ):
        assert line in text, line
    assert from_source(text).script() == text
    assert "Tx.cta.mul(B[2, 0:16, 0:32], S_[0:16, 0:32], T.float32(3.0))" in scalar_ops.script()


def test_what_the_elementwise_variants_refuse() -> None:
    regs = TileLayout(S[(32, 8) : (1 @ laneid, 1)])
    other = TileLayout(S[(32, 8) : (1, 1 @ laneid)])

    @T.prim_func
    def mismatched(A: T.Buffer((32, 8), "float32"), B: T.Buffer((32, 4), "float32")):
        T.device_entry()
        T.lane_id([32])
        R = T.alloc_buffer((32, 8), scope="local", layout=regs)
        Tx.warp.add(R[0:32, 0:8], R[0:32, 0:8], B[0:32, 0:4])

    with pytest.raises(DispatchError, match=r"region \[32, 4\] neither matches R's \[32, 8\]"):
        LowerTIRx("cuda")(mismatched)

    @T.prim_func
    def two_layouts(A: T.Buffer((32, 8), "float32")):
        T.device_entry()
        T.lane_id([32])
        R = T.alloc_buffer((32, 8), scope="local", layout=regs)
        Q = T.alloc_buffer((32, 8), scope="local", layout=other)
        Tx.warp.mul(R[0:32, 0:8], R[0:32, 0:8], Q[0:32, 0:8])

    with pytest.raises(DispatchError, match="register input Q has another layout than R"):
        LowerTIRx("cuda")(two_layouts)


@pytest.mark.skipif(nvrtc.nvrtc_version() is None, reason="needs NVRTC")
@pytest.mark.parametrize("kernel", [bias_relu_epilogue, scalar_ops], ids=["registers", "scalar"])
def test_the_cuda_compiles_with_nvrtc(kernel) -> None:
    artifact = tw.build_artifact(kernel, target="cuda")
    assert artifact.format == "cubin" and artifact.binary[:4] == b"\x7fELF"
    if kernel is scalar_ops:
        assert "erff(" in artifact.source and "expf(" in artifact.source
