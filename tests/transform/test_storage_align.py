"""storage_align applied by lowering: the requested stride in the flattened indices and the
allocation, the same numbers as without it (C on the CPU, the GPU evaluator with its race
detector, PoCL), and the CUDA compiles."""

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run_module

import tilewright as tw
from tilewright import config
from tilewright.codegen import codegen_cuda
from tilewright.runtime import opencl_runtime
from tilewright.runtime.cuda_runtime.nvrtc import compile_cuda, nvrtc_version
from tilewright.script import tir as T
from tilewright.tir import Schedule
from tilewright.transform.storage_align import aligned_strides


@T.prim_func
def transpose_add(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    for i, j in T.grid(64, 64):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vj, vi] + T.float32(1)


def _tiled(scope: str, align: bool, gpu: bool) -> Schedule:
    """16 x 16 tiles of A staged in ``scope`` and read down their columns."""
    sch = Schedule(transpose_add)
    block = sch.get_block("C")
    i, j = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 16])
    j0, j1 = sch.split(j, [None, 16])
    sch.reorder(i0, j0, i1, j1)
    tile = sch.cache_read(block, 0, scope)
    sch.compute_at(tile, j0)
    if align:
        sch.storage_align(tile, 0, axis=0, factor=32, offset=1)
    if gpu:
        sch.bind(i0, "blockIdx.y")
        sch.bind(j0, "blockIdx.x")
        sch.bind(sch.get_loops(tile)[-1], "threadIdx.x")
        sch.bind(j1, "threadIdx.x")
    return sch


def _input() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((64, 64)).astype("float32")


def test_aligned_strides() -> None:
    assert aligned_strides((16, 16), {0: (32, 1)}) == (33, 1)
    assert aligned_strides((16, 16), {0: (16, 0)}) == (16, 1)  # already aligned
    assert aligned_strides((4, 8, 6), {1: (8, 0)}) == (64, 8, 1)  # outer strides follow
    assert aligned_strides((4, 6), {}) == (6, 1)


def test_the_cpu_tile_gets_the_stride_and_the_same_numbers() -> None:
    a = _input()
    for align in (False, True):
        sch = _tiled("global", align, gpu=False)
        rt = tw.build(sch.mod, target="c")
        assert ("* 33" in rt.get_source()) == align
        c = np.zeros((64, 64), "float32")
        rt["main"](a, c)
        np.testing.assert_allclose(c, a.T + 1, rtol=1e-6)


def test_the_shared_tile_is_padded_and_race_free_in_the_evaluator() -> None:
    a = _input()
    lowered = tw.lower(_tiled("shared", True, gpu=True).mod, "opencl")
    text = lowered.script()
    assert "A_shared[ax0 * 33 + ax1]" in text and "(528,)" in text, text
    _, c = run_module(lowered, "main", a, np.zeros((64, 64), "float32"))
    np.testing.assert_allclose(c, a.T + 1, rtol=1e-6)


def test_the_cuda_of_the_padded_tile_compiles() -> None:
    source = codegen_cuda(tw.lower(_tiled("shared", True, gpu=True).mod, "cuda"))
    assert "__shared__ float A_shared[528];" in source
    assert "A_shared[j_1 * 33 + i_1]" in source
    if nvrtc_version() is None:
        pytest.skip("NVRTC is not installed")
    compile_cuda(source, "sm_90", ["main_kernel"], "nvrtc")


def test_the_padded_tile_runs_on_pocl() -> None:
    if not opencl_runtime.available():
        if config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
        pytest.skip("no OpenCL platform")
    a = _input()
    args = [tw.nd.array(a, tw.opencl(0)), tw.nd.array(np.zeros((64, 64), "float32"), tw.opencl(0))]
    tw.build(_tiled("shared", True, gpu=True).mod, target="opencl")["main"](*args)
    np.testing.assert_allclose(args[1].numpy(), a.T + 1, rtol=1e-6)
