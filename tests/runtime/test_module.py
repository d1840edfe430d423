"""Runtime modules: calling kernels, argument checks, timing, export and load."""

from __future__ import annotations

import time

import numpy as np
import pytest

import tilewright as tw
from tilewright.driver import build_lowered
from tilewright.ir import (
    BufferStore,
    For,
    ForKind,
    IntImm,
    IRModule,
    PrimFunc,
    Var,
    decl_buffer,
    dtype,
)
from tilewright.runtime import (
    NDArray,
    check_arguments,
    cpu,
    cuda,
    load_module,
)

I32 = dtype("int32")


def scale_kernel() -> IRModule:
    """B[i, j] = A[i, j] * alpha for A, B of shape (n, 4); alpha a float32 scalar."""
    n = Var("n", I32)
    A, B = decl_buffer((n, 4), "float32", "A"), decl_buffer((n, 4), "float32", "B")
    a = decl_buffer((n * 4,), "float32", "A", data=A.data)
    b = decl_buffer((n * 4,), "float32", "B", data=B.data)
    alpha, i = Var("alpha", dtype("float32")), Var("i", I32)
    body = For(i, IntImm(0, I32), n * 4, ForKind.SERIAL, BufferStore(b, a[i] * alpha, (i,)))
    pa, pb = Var("A", dtype("handle")), Var("B", dtype("handle"))
    return IRModule({"main": PrimFunc((pa, pb, alpha), body, ((pa, A), (pb, B)))})


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    from tilewright import config

    with config.scope(cache_dir=tmp_path_factory.mktemp("module-cache")):
        return build_lowered(scale_kernel(), "c")


def arrays(rows: int = 3):
    return np.arange(rows * 4, dtype="float32").reshape(rows, 4), np.zeros((rows, 4), "float32")


def test_call_with_numpy_ndarray_and_dlpack(rt):
    a, b = arrays()
    rt["main"](a, b, 2.0)
    np.testing.assert_array_equal(b, a * 2)
    out = tw.nd.empty((3, 4), "float32")
    rt["main"](tw.nd.array(a), out, 0.5)
    np.testing.assert_array_equal(out.numpy(), a * 0.5)

    class CpuTensor:  # any DLPack producer on the CPU, as a torch CPU tensor would be
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return (1, 0)

    target = np.zeros((3, 4), "float32")
    rt["main"](CpuTensor(a), CpuTensor(target), 3.0)
    np.testing.assert_array_equal(target, a * 3)


def test_calling_the_module_calls_its_entry_function(rt):
    a, b = arrays()
    rt(a, b, 2.0)  # TVM's Module.__call__: the "main" function
    np.testing.assert_array_equal(b, a * 2)
    mod = scale_kernel()
    two = build_lowered(IRModule({"f": mod["main"], "g": mod["main"]}), "c")
    with pytest.raises(RuntimeError, match=r"no 'main' among \['f', 'g'\]"):
        two(a, b, 2.0)


def test_wrong_arity(rt):
    a, b = arrays()
    with pytest.raises(TypeError, match=r"main expects 3 arguments \(A, B, alpha\), got 2"):
        rt["main"](a, b)


def test_wrong_shape_and_inconsistent_symbolic_size(rt):
    a, b = arrays()
    with pytest.raises(ValueError, match=r"main: argument A must have 2 dimensions \(n, 4\), got "
                       r"shape \(12,\)"):  # fmt: skip
        rt["main"](a.reshape(12), b, 1.0)
    with pytest.raises(ValueError, match=r"argument A has shape \(2, 6\); expected \(n, 4\) "
                       r"\(dimension 1 must be 4, got 6\)"):  # fmt: skip
        rt["main"](a.reshape(2, 6), b, 1.0)
    with pytest.raises(ValueError, match=r"argument B has shape \(5, 4\); expected \(n, 4\) "
                       r"\(dimension 0 must be n = 3 as given by argument A, got 5\)"):  # fmt: skip
        rt["main"](a, np.zeros((5, 4), "float32"), 1.0)


def test_wrong_dtype(rt):
    a, b = arrays()
    with pytest.raises(TypeError, match=r"main: argument A has dtype float64, expected float32"):
        rt["main"](a.astype("float64"), b, 1.0)


def test_wrong_device(rt):
    _, b = arrays()
    fake = NDArray.from_device_buffer(object(), (3, 4), "float32", cuda(0))
    with pytest.raises(ValueError, match=r"main: argument A is on cuda\(0\) but the kernel runs "
                       r"on cpu"):  # fmt: skip
        rt["main"](fake, b, 1.0)


def test_checker_directly_with_a_gpu_dlpack_tensor(rt):
    class GpuTensor:
        def __dlpack_device__(self):
            return (2, 1)

        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be read")

    _, b = arrays()
    sig = rt.signatures["main"]
    with pytest.raises(ValueError, match=r"argument A is on cuda\(1\) but the kernel runs on cpu"):
        check_arguments(sig, (GpuTensor(), b, 1.0), cpu(0))


def test_non_contiguous_read_only_and_non_array_arguments(rt):
    a, b = arrays(6)
    with pytest.raises(ValueError, match=r"argument A must be C-contiguous"):
        rt["main"](a[::2], b[:3], 1.0)
    frozen = np.zeros((6, 4), "float32")
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"argument B is read-only but the kernel writes it"):
        rt["main"](a, frozen, 1.0)
    with pytest.raises(TypeError, match=r"argument A must be an array .* got list"):
        rt["main"]([1.0], b, 1.0)


def test_scalar_type_and_range(rt):
    a, b = arrays()
    with pytest.raises(TypeError, match=r"main: argument alpha must be a number \(float32\), "
                       r"got str"):  # fmt: skip
        rt["main"](a, b, "2")
    with pytest.raises(ValueError, match=r"argument alpha = 1e\+39 does not fit float32"):
        rt["main"](a, b, 1e39)
    rt["main"](a, b, np.float32(2))  # numpy scalars are fine
    np.testing.assert_array_equal(b, a * 2)


def test_time_evaluator(rt):
    a, b = arrays(64)
    result = rt.time_evaluator("main", cpu(0), number=5, repeat=3)(a, b, 1.0)
    assert len(result.results) == 3 and all(t > 0 for t in result.results)
    assert result.mean > 0 and result.median > 0 and result.min <= result.mean <= result.max
    slow = rt.time_evaluator("main", cpu(0), number=1, repeat=2, min_repeat_ms=5)(a, b, 1.0)
    assert slow.number > 1 and len(slow.results) == 2
    with pytest.raises(ValueError, match=r"number and repeat must be >= 1"):
        rt.time_evaluator("main", cpu(0), repeat=0)


def test_time_evaluator_warms_up_for_the_time_asked() -> None:
    from tilewright.runtime.time_evaluator import time_evaluator

    calls = []

    def run() -> None:
        calls.append(time.perf_counter())

    start = time.perf_counter()
    result = time_evaluator(lambda: run, cpu(0), number=2, repeat=1, warmup_ms=30)()
    timed = calls[-result.number :]
    assert timed[0] - start >= 0.03  # untimed calls for 30 ms first
    assert len(calls) > 1 + result.number  # the first call, the warm-up's, the timed ones
    with pytest.raises(ValueError, match=r"warmup_ms must be >= 0, got 0, -1"):
        time_evaluator(lambda: run, cpu(0), warmup_ms=-1)


def test_lookup_and_source(rt):
    assert "main" in rt and rt.imported_modules == []
    assert "TW_EXPORT int32_t main_kernel(" in rt.get_source()
    with pytest.raises(AttributeError, match=r"module has no function 'other' \(functions: main\)"):
        rt["other"]


def test_export_library_and_load_module(rt, tmp_path):
    path = rt.export_library(tmp_path / "lib" / "scale.so")
    assert path.exists() and (tmp_path / "lib" / "scale.so.json").exists()
    loaded = load_module(path)
    a, b = arrays(2)
    loaded["main"](a, b, 4.0)
    np.testing.assert_array_equal(b, a * 4)
    assert loaded.get_source() == rt.get_source()
    with pytest.raises(ValueError, match=r"argument B has shape"):
        loaded["main"](a, np.zeros((3, 4), "float32"), 1.0)
    with pytest.raises(FileNotFoundError, match=r"has no description other\.so\.json"):
        (tmp_path / "other.so").write_bytes(b"")
        load_module(tmp_path / "other.so")


def test_source_module_holds_text_only():
    from tilewright.runtime import SourceModule

    device_code = SourceModule("__global__ void k() {}", "cuda")
    host = SourceModule("host", "c", [device_code])
    assert host.imported_modules[0].get_source() == "__global__ void k() {}"
    with pytest.raises(RuntimeError, match=r"holds cuda code only; function 'k' cannot be called"):
        device_code["k"]
    with pytest.raises(RuntimeError, match=r"a source module has no built artifact to export"):
        host.export_library("/tmp/never.so")


def test_dump_dir_receives_the_generated_source(tmp_path):
    from tilewright import config

    with config.scope(dump_dir=tmp_path / "dumps", cache_dir=tmp_path / "cache"):
        build_lowered(scale_kernel(), "c")
    assert "main_kernel(" in (tmp_path / "dumps" / "main.00_source.c").read_text()


def test_build_times_and_target_recorded(tmp_path):
    from tilewright import config
    from tilewright.target import Target

    with config.scope(cache_dir=tmp_path):
        cold = build_lowered(scale_kernel(), Target("llvm"))
        warm = build_lowered(scale_kernel(), Target("llvm"))
    assert list(cold.build_times) == ["codegen", "compile", "load"]
    assert cold.build_times["compile"] > warm.build_times["compile"] >= 0
    assert cold.target == "llvm"
    assert load_module(cold.export_library(tmp_path / "m.so")).target == "llvm"
