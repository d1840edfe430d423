"""CUDA runtime: builds without a GPU; the gpu-marked tests run kernels on one."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilewright as tw
from tilewright.driver import build_lowered
from tilewright.runtime.cuda_runtime import CUDAError, device_count
from tilewright.runtime.cuda_runtime.nvrtc import nvcc_version, nvrtc_version

sys.path.insert(0, str(Path(__file__).parents[1] / "codegen"))
from gpu_kernels import symbolic_add, vector_add, vector_scale, window_sum

needs_compiler = pytest.mark.skipif(
    nvrtc_version() is None and nvcc_version() is None, reason="no NVRTC or nvcc"
)


def gpu(test):
    """Marked for scripts/gpu-check, and skipped where no GPU is."""
    no_gpu = pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU")
    return pytest.mark.gpu(no_gpu(test))


@needs_compiler
def test_build_without_gpu_gives_source_and_clear_call_error():
    if device_count():
        pytest.skip("a GPU is present")
    rt_mod = build_lowered(window_sum("cuda"), "cuda")
    dev_mod = rt_mod.imported_modules[0]
    assert "__shared__ float A_shared[130];" in dev_mod.get_source()
    assert dev_mod.arch == "sm_90" and dev_mod.cubin[:4] == b"\x7fELF"
    a = np.ones(1026, "float32")
    with pytest.raises(CUDAError, match="no CUDA device"):
        rt_mod["main"](a, np.ones(1024, "float32"))
    with pytest.raises(CUDAError, match="no CUDA device"):
        tw.nd.array(a, tw.cuda(0))


@needs_compiler
def test_target_arch_is_used_without_gpu():
    if device_count():
        pytest.skip("a GPU is present")
    rt_mod = build_lowered(vector_add("cuda"), "nvidia/a100")
    assert rt_mod.imported_modules[0].arch == "sm_80"


def test_metal_build_is_source_only():
    rt_mod = build_lowered(window_sum("metal"), "metal")
    assert "kernel void main_kernel(" in rt_mod.imported_modules[0].get_source()
    with pytest.raises(RuntimeError, match="metal kernels cannot run here"):
        rt_mod["main"](np.ones(1026, "float32"), np.ones(1024, "float32"))


# ---- on a GPU (scripts/gpu-check) ------------------------------------------------------------


@gpu
def test_vector_add_on_gpu():
    rt_mod = build_lowered(vector_add("cuda"), "cuda")
    a, b = np.random.rand(1024).astype("float32"), np.random.rand(1024).astype("float32")
    c = tw.nd.empty((1024,), "float32", tw.cuda(0))
    rt_mod["main"](tw.nd.array(a, tw.cuda(0)), tw.nd.array(b, tw.cuda(0)), c)
    np.testing.assert_allclose(c.numpy(), a + b, rtol=1e-6)


@gpu
@pytest.mark.parametrize("scope", ["shared", "shared.dyn"])
def test_shared_memory_window_sum_on_gpu(scope):
    rt_mod = build_lowered(window_sum("cuda", scope), "cuda")
    a = np.random.rand(1026).astype("float32")
    b = tw.nd.empty((1024,), "float32", tw.cuda(0))
    rt_mod["main"](tw.nd.array(a, tw.cuda(0)), b)
    np.testing.assert_allclose(b.numpy(), a[:-2] + a[1:-1] + a[2:], rtol=1e-6)


@gpu
def test_float4_and_symbolic_kernels_on_gpu():
    rt_mod = build_lowered(vector_scale("cuda"), "cuda")
    a = np.random.rand(1024).astype("float32")
    b = tw.nd.empty((1024,), "float32", tw.cuda(0))
    rt_mod["main"](tw.nd.array(a, tw.cuda(0)), b)
    np.testing.assert_allclose(b.numpy(), 3 * a, rtol=1e-6)
    rt_mod = build_lowered(symbolic_add("cuda"), "cuda")
    a = np.random.rand(1000).astype("float32")
    b = tw.nd.empty((1000,), "float32", tw.cuda(0))
    rt_mod["main"](tw.nd.array(a, tw.cuda(0)), b, 0.5)
    np.testing.assert_allclose(b.numpy(), a + 0.5, rtol=1e-6)


@gpu
def test_torch_tensors_are_accepted_directly():
    torch = pytest.importorskip("torch")
    rt_mod = build_lowered(vector_add("cuda"), "cuda")
    a, b = (torch.rand(1024, device="cuda") for _ in range(2))
    c = torch.empty(1024, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        rt_mod["main"](a, b, c)
    stream.synchronize()
    torch.testing.assert_close(c, a + b)


@gpu
def test_host_array_is_refused_on_gpu():
    rt_mod = build_lowered(vector_add("cuda"), "cuda")
    a = np.ones(1024, "float32")
    d = tw.nd.array(a, tw.cuda(0))
    with pytest.raises(ValueError, match=r"argument A is on cpu\(0\) but the kernel runs on cuda"):
        rt_mod["main"](a, d, d)


@gpu
def test_time_evaluator_uses_events():
    rt_mod = build_lowered(vector_add("cuda"), "cuda")
    args = [tw.nd.array(np.ones(1024, "float32"), tw.cuda(0)) for _ in range(3)]
    result = rt_mod.time_evaluator("main", tw.cuda(0), number=20, repeat=3)(*args)
    assert len(result.results) == 3 and 0 < result.mean < 1e-2


@gpu
def test_repeated_calls_launch_from_the_cache_and_recheck_what_changes():
    torch = pytest.importorskip("torch")
    rt_mod = build_lowered(symbolic_add("cuda"), "cuda")
    f = rt_mod["main"]
    a, b = torch.rand(1000, device="cuda"), torch.empty(1000, device="cuda")
    f(a, b, 0.5)  # checked, then remembered
    cache = f._cache
    assert cache is not None and len(cache.entries) == 1
    a2, b2 = torch.rand(1000, device="cuda"), torch.empty(1000, device="cuda")
    assert cache.launch((a2, b2, 0.5))  # same key (new tensors): launched from the cache
    assert not cache.launch((a2, b2, 0.25))  # a scalar is part of the key
    torch.cuda.synchronize()
    torch.testing.assert_close(b2, a2 + 0.5)
    # Another size and another scalar: checked again, a second entry, right grid.
    a3, b3 = torch.rand(3000, device="cuda"), torch.empty(3000, device="cuda")
    f(a3, b3, 1.5)
    f(a3, b3, 1.5)
    torch.cuda.synchronize()
    torch.testing.assert_close(b3, a3 + 1.5)
    assert len(cache.entries) == 2
    # What the checked path refuses is still refused after the key was cached.
    with pytest.raises(TypeError, match="argument A has dtype float64"):
        f(a.double(), b, 0.5)
    with pytest.raises(ValueError, match="dimension 0 must be n = 1000"):
        f(a, torch.empty(999, device="cuda"), 0.5)
    with pytest.raises(ValueError, match="C-contiguous"):
        f(torch.rand(2000, device="cuda")[::2], b, 0.5)
    # tilewright arrays on the GPU key too; the result lands on torch's current stream.
    x = tw.nd.array(np.arange(1000, dtype="float32"), tw.cuda(0))
    y = tw.nd.empty((1000,), "float32", tw.cuda(0))
    f(x, y, 2.0)
    f(x, y, 3.0)
    np.testing.assert_allclose(y.numpy(), np.arange(1000, dtype="float32") + 3.0)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            f(a2, b2, 7.0)
    stream.synchronize()
    torch.testing.assert_close(b2, a2 + 7.0)


@gpu
def test_cached_launch_checks_alignment_of_new_pointers():
    torch = pytest.importorskip("torch")
    rt_mod = build_lowered(vector_scale("cuda"), "cuda")  # float4 accesses: 16-byte aligned
    f = rt_mod["main"]
    a, b = torch.rand(1025, device="cuda"), torch.empty(1024, device="cuda")
    f(a[:1024], b)
    assert f._cache is not None and len(f._cache.entries) == 1
    with pytest.raises(ValueError, match="not a multiple of 16 bytes"):
        f(a[1:], b)  # same key, pointer off by 4 bytes: the checked path refuses it
