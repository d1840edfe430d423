"""Vector accesses assume aligned buffers: a kernel that reads a buffer with 16-byte vectors
refuses, before it runs, an argument that does not start on a 16-byte boundary."""

from __future__ import annotations

import numpy as np
import pytest
import seed_notebook

import tilewright as tw
from tilewright.codegen.signature import FuncSignature, ParamSpec
from tilewright.runtime import check_arguments
from tilewright.runtime.cuda_runtime import device_count


class _FakeCudaArray:
    """Just enough of ``__cuda_array_interface__`` for the argument checks (no GPU needed)."""

    def __init__(self, address: int, shape: tuple[int, ...]) -> None:
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": "<f4",
            "data": (address, False),
            "strides": None,
            "version": 3,
        }


SIG = FuncSignature("main", "main_kernel", (ParamSpec("A", "float32", (64,), align=16),), ())


def test_misaligned_device_pointer_is_refused_before_launch():
    with pytest.raises(ValueError, match=r"main: argument A starts at address 0x1004, not a "
                       r"multiple of 16 bytes"):  # fmt: skip
        check_arguments(SIG, [_FakeCudaArray(0x1004, (64,))], tw.cuda(0))


def test_aligned_device_pointer_is_accepted():
    values = check_arguments(SIG, [_FakeCudaArray(0x1000, (64,))], tw.cuda(0))
    assert len(values) == 1


def test_misaligned_host_view_is_refused_for_a_vector_kernel():
    sig = FuncSignature("main", "main_kernel", (ParamSpec("A", "float32", (64,), align=16),))
    storage = np.zeros(65, np.float32)
    view = storage[1:] if storage.ctypes.data % 16 == 0 else storage[:-1]
    assert view.ctypes.data % 16
    with pytest.raises(ValueError, match="not a multiple of 16 bytes"):
        check_arguments(sig, [view], tw.cpu(0))


def test_vector_fetch_kernels_ask_for_aligned_inputs():
    # Expected_6 fetches A and B into shared memory with float4 loads; C is written per element.
    rt_mod = tw.build(seed_notebook.Expected_6, target="opencl")
    params = {p.name: p.align for p in rt_mod.signatures["main"].params}
    assert params == {"A": 16, "B": 16, "C": 1}


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU")
def test_offset_torch_view_is_refused_on_gpu():
    torch = pytest.importorskip("torch")
    rt_mod = tw.build(seed_notebook.Expected_6, target="cuda")
    storage = torch.zeros(1024 * 1024 + 1, device="cuda")
    a = storage[1:].view(1024, 1024)  # starts 4 bytes into the allocation
    b = torch.zeros(1024, 1024, device="cuda")
    c = torch.zeros(1024, 1024, device="cuda")
    with pytest.raises(ValueError, match="argument A starts at address"):
        rt_mod["main"](a, b, c)
