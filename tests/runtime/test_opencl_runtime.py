"""OpenCL runtime: hand-lowered kernels run on PoCL (the CPU) and match numpy."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilewright as tw
from tilewright import config
from tilewright.driver import build_lowered
from tilewright.runtime import opencl_runtime

sys.path.insert(0, str(Path(__file__).parents[1] / "codegen"))
from gpu_kernels import (
    expressions,
    expressions_reference,
    symbolic_add,
    vector_add,
    vector_scale,
    window_sum,
)


@pytest.fixture(autouse=True)
def _need_opencl():
    if not opencl_runtime.available():
        if config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
        pytest.skip("no OpenCL platform (apt-get install pocl-opencl-icd)")


def _dev(x):
    return tw.nd.array(x, tw.opencl(0))


def test_vector_add_matches_numpy():
    rt_mod = build_lowered(vector_add("opencl"), "opencl")
    a, b = np.random.rand(1024).astype("float32"), np.random.rand(1024).astype("float32")
    c = tw.nd.empty((1024,), "float32", tw.opencl(0))
    rt_mod["main"](_dev(a), _dev(b), c)
    np.testing.assert_allclose(c.numpy(), a + b, rtol=1e-6)
    assert "__kernel void main_kernel" in rt_mod.imported_modules[0].get_source()


@pytest.mark.parametrize("scope", ["shared", "shared.dyn"])
def test_local_memory_and_barrier(scope):
    rt_mod = build_lowered(window_sum("opencl", scope), "opencl")
    a = np.random.rand(1026).astype("float32")
    b = tw.nd.empty((1024,), "float32", tw.opencl(0))
    rt_mod["main"](_dev(a), b)
    np.testing.assert_allclose(b.numpy(), a[:-2] + a[1:-1] + a[2:], rtol=1e-6)


def test_vectorized_kernel():
    rt_mod = build_lowered(vector_scale("opencl"), "opencl")
    a = np.random.rand(1024).astype("float32")
    b = tw.nd.empty((1024,), "float32", tw.opencl(0))
    rt_mod["main"](_dev(a), b)
    np.testing.assert_allclose(b.numpy(), 3 * a, rtol=1e-6)


def test_symbolic_grid_and_scalar_argument():
    rt_mod = build_lowered(symbolic_add("opencl"), "opencl")
    for n in (1, 64, 1000):
        a = np.random.rand(n).astype("float32")
        b = tw.nd.empty((n,), "float32", tw.opencl(0))
        rt_mod["main"](_dev(a), b, 2.5)
        np.testing.assert_allclose(b.numpy(), a + 2.5, rtol=1e-6)


def test_expressions_match_numpy():
    rt_mod = build_lowered(expressions("opencl"), "opencl")
    a = np.random.rand(256).astype("float32")
    b = tw.nd.empty((256,), "float32", tw.opencl(0))
    rt_mod["main"](_dev(a), b)
    np.testing.assert_allclose(b.numpy(), expressions_reference(a), rtol=1e-5)


def test_time_evaluator():
    rt_mod = build_lowered(vector_add("opencl"), "opencl")
    args = [_dev(np.ones(1024, "float32")) for _ in range(3)]
    result = rt_mod.time_evaluator("main", tw.opencl(0), number=3, repeat=2)(*args)
    assert len(result.results) == 2 and 0 < result.mean < 1.0


def test_host_array_is_refused():
    rt_mod = build_lowered(vector_add("opencl"), "opencl")
    a = np.ones(1024, "float32")
    with pytest.raises(ValueError, match=r"argument A is on cpu\(0\) but the kernel runs on "
                       r"opencl\(0\)"):  # fmt: skip
        rt_mod["main"](a, _dev(a), _dev(a))


def test_wrong_shape_is_refused_before_launch():
    rt_mod = build_lowered(vector_add("opencl"), "opencl")
    a = _dev(np.ones(1024, "float32"))
    with pytest.raises(ValueError, match=r"argument C has shape \(512,\)"):
        rt_mod["main"](a, a, _dev(np.ones(512, "float32")))


def test_build_error_shows_the_log():
    src = "__kernel void broken_kernel(__global float* A) { A[0] = undefined_name; }\n"
    with pytest.raises(opencl_runtime.OpenCLError, match=r"(?s)broken_kernel.*undefined_name"):
        opencl_runtime.CLProgram(src, ["broken_kernel"])


def test_device_array_round_trip():
    a = np.arange(12, dtype="float32").reshape(3, 4)
    arr = tw.nd.array(a, tw.opencl(0))
    assert arr.device == tw.opencl(0) and arr.shape == (3, 4)
    np.testing.assert_array_equal(arr.numpy(), a)
    arr.copyfrom(a * 2)
    np.testing.assert_array_equal(arr.numpy(), a * 2)
