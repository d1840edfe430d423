"""Devices and NDArray: creation, copies, numpy and DLPack exchange."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilewright as tw
from tilewright.runtime import NDArray, cpu, cuda, device, metal, opencl


def test_devices():
    assert (cpu(0).device_type, cuda(1).device_type, opencl(0).device_type) == (1, 2, 4)
    assert metal(0).device_type == 8
    assert repr(cuda(1)) == "cuda(1)" and cuda(1).device_id == 1
    assert device("cuda", 0) == cuda(0) and device("llvm") == cpu(0) and device(4) == opencl(0)
    assert tw.cpu(0) == cpu(0) and tw.cuda(0) == cuda(0)
    assert cpu(0).exist and not cuda(0).exist
    with pytest.raises(ValueError, match=r"unknown device kind 'tpu'; known kinds: cpu, cuda"):
        device("tpu")


def test_array_copies_and_numpy_round_trip():
    source = np.arange(6, dtype="float32").reshape(2, 3)
    a = tw.nd.array(source)
    source[0, 0] = 99
    assert a.shape == (2, 3) and a.dtype == "float32" and a.device == cpu(0)
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))
    out = a.numpy()
    out[0, 0] = -1  # numpy() is a copy
    assert a.numpy()[0, 0] == 0


def test_array_from_non_contiguous_and_lists():
    a = tw.nd.array(np.arange(10, dtype="int32")[::2])
    assert a.host_array().flags.c_contiguous
    np.testing.assert_array_equal(a.numpy(), [0, 2, 4, 6, 8])
    assert tw.nd.array([[1.0, 2.0]], dtype="float16").dtype == "float16"


def test_empty_copyfrom_copyto():
    a = tw.nd.empty((2, 2), "bfloat16")
    assert a.dtype == "bfloat16" and a.host_array().dtype == ml_dtypes.bfloat16
    a.copyfrom(np.ones((2, 2), "float32"))
    np.testing.assert_array_equal(a.numpy().astype("float32"), np.ones((2, 2)))
    b = a.copyto(cpu(0))
    assert b.host_array() is not a.host_array()
    with pytest.raises(ValueError, match=r"copyfrom: shape \(3,\) differs from \(2, 2\)"):
        a.copyfrom(np.zeros(3))
    assert tw.nd.empty(4, "bool").dtype == "bool"


def test_dlpack_both_ways():
    a = tw.nd.array(np.arange(4, dtype="float64"))
    view = np.from_dlpack(a)  # export: numpy reads our array without a copy
    view[0] = 42
    assert a.numpy()[0] == 42
    assert a.__dlpack_device__() == (1, 0)
    shared = tw.nd.from_dlpack(view)  # import without a copy
    shared.host_array()[1] = 7
    assert view[1] == 7
    copied = tw.nd.array(view)  # array() copies
    copied.host_array()[2] = -3
    assert view[2] != -3


def test_arrays_without_a_runtime_are_not_created():
    with pytest.raises(RuntimeError, match=r"no runtime for metal\(0\)"):
        tw.nd.array(np.zeros(2), tw.metal(0))
    fake = NDArray.from_device_buffer(object(), (2,), "float32", cuda(0))
    assert fake.device == cuda(0) and fake.shape == (2,)
    with pytest.raises(RuntimeError, match=r"array on cuda\(0\) has no host memory"):
        fake.numpy()


def test_foreign_dlpack_tensor_on_a_gpu_is_refused():
    class GpuTensor:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be read")

    with pytest.raises(ValueError, match=r"cannot read a tensor on cuda\(0\) without a cuda"):
        tw.nd.array(GpuTensor())
