"""The seed notebook's GPU programs end to end: tw.build for cuda (compiled for sm_90), metal
(source) and opencl (run on PoCL against numpy); on a GPU (gpu-marked) they run on CUDA."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import seed_notebook

import tilewright as tw
from tilewright import config
from tilewright.runtime import opencl_runtime
from tilewright.runtime.cuda_runtime import device_arch, device_count
from tilewright.runtime.cuda_runtime.nvrtc import nvrtc_version

# The notebook's scheduled GPU programs as it printed them, by the names the tests use.
SEED_PROGRAMS = {
    "VectorAddBound": seed_notebook.Expected_1,
    "WindowSumShared": seed_notebook.Expected_4,
    "MatmulShared": seed_notebook.Expected_6,
}
PROGRAMS = list(SEED_PROGRAMS)


def _need_cuda_compiler():
    if nvrtc_version() is None and shutil.which("nvcc") is None:
        if config.get().ci:
            pytest.fail("neither NVRTC nor nvcc is available to compile CUDA")
        pytest.skip("no CUDA compiler")


def _need_opencl():
    if not opencl_runtime.available():
        if config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
        pytest.skip("no OpenCL platform")


def _inputs(name):
    rng = np.random.default_rng(0)
    if name == "VectorAddBound":
        a, b = rng.random(1024, "float32"), rng.random(1024, "float32")
        return [a, b, np.zeros(1024, "float32")], a + b
    if name == "WindowSumShared":
        a = rng.random(1027, "float32")
        return [a, np.zeros(1024, "float32")], a[:-3] + a[1:-2] + a[2:-1]
    a, b = rng.random((1024, 1024), "float32"), rng.random((1024, 1024), "float32")
    return [a, b, np.zeros((1024, 1024), "float32")], a @ b


def test_window_sum_cuda_reads_like_the_notebook():
    _need_cuda_compiler()
    rt_mod = tw.build(SEED_PROGRAMS["WindowSumShared"], target="cuda")
    source = rt_mod.imported_modules[0].get_source()
    assert source.count("__shared__ float A_shared[130];") == 1
    assert source.count("__syncthreads();") == 1
    assert 'extern "C" __global__ void __launch_bounds__(128) main_kernel(' in source


@pytest.mark.parametrize("name", PROGRAMS)
def test_cuda_builds_for_sm90(name):
    _need_cuda_compiler()
    rt_mod = tw.build(SEED_PROGRAMS[name], target="nvidia/h200")
    dev_mod = rt_mod.imported_modules[0]
    assert dev_mod.cubin[:4] == b"\x7fELF"
    assert dev_mod.arch == (device_arch(0) or "sm_90")


@pytest.mark.parametrize("name", PROGRAMS)
def test_metal_source(name):
    rt_mod = tw.build(SEED_PROGRAMS[name], target="metal")
    source = rt_mod.imported_modules[0].get_source()
    assert "kernel void main_kernel(" in source
    if name != "VectorAddBound":
        assert "threadgroup_barrier(mem_flags::mem_threadgroup);" in source


@pytest.mark.parametrize("name", PROGRAMS)
def test_opencl_matches_numpy(name):
    _need_opencl()
    rt_mod = tw.build(SEED_PROGRAMS[name], target="opencl")
    arrays, expected = _inputs(name)
    args = [tw.nd.array(a, tw.opencl(0)) for a in arrays]
    rt_mod["main"](*args)
    np.testing.assert_allclose(args[-1].numpy(), expected, rtol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", PROGRAMS)
def test_cuda_matches_numpy_on_gpu(name):
    rt_mod = tw.build(SEED_PROGRAMS[name], target="cuda")
    arrays, expected = _inputs(name)
    args = [tw.nd.array(a, tw.cuda(0)) for a in arrays]
    rt_mod["main"](*args)
    np.testing.assert_allclose(args[-1].numpy(), expected, rtol=1e-5)
    timing = rt_mod.time_evaluator("main", tw.cuda(0), number=10)(*args)
    assert 0 < timing.mean < 60.0  # seconds (not ms); loose: gpu-check also runs it sanitized
