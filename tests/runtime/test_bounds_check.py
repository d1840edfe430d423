"""bounds_check=True builds: a bad index raises BoundsError naming buffer, index and kernel,
and nothing is read or written out of range (C, OpenCL on PoCL; CUDA in gpu-check)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tilewright as tw
from tilewright import config
from tilewright.artifact import Artifact
from tilewright.demo import blocking_with_shared, matmul_module
from tilewright.runtime import BoundsError, opencl_runtime
from tilewright.runtime.cuda_runtime import device_count
from tilewright.script import tir as T
from tilewright.transform import PassContext


@T.prim_func
def gather(
    A: T.Buffer((1024,), "float32"), idx: T.Buffer((256,), "int32"), B: T.Buffer((256,), "float32")
):
    for i in range(256):
        with T.block("B"):
            vi = T.axis.spatial(256, i)
            B[vi] = A[idx[vi]]


@T.prim_func
def scatter(
    A: T.Buffer((64,), "float32"), idx: T.Buffer((64,), "int32"), B: T.Buffer((64,), "float32")
):
    for i in range(64):
        with T.block("B"):
            vi = T.axis.spatial(64, i)
            B[idx[vi]] = A[vi]


@T.prim_func
def gather_rows(
    A: T.Buffer((32, 16), "float32"), idx: T.Buffer((8,), "int32"), B: T.Buffer((8, 16), "float32")
):
    for i, j in T.grid(8, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[idx[vi], vj]


def _on_threads(func, block: str = "B", threads: int = 64) -> tw.IRModule:
    sch = tw.tir.Schedule(func)
    bx, tx = sch.split(sch.get_loops(sch.get_block(block))[0], [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch.mod


def _indices(n: int, bad: dict[int, int]) -> np.ndarray:
    idx = np.arange(n, dtype="int32")
    for where, value in bad.items():
        idx[where] = value
    return idx


# ---- C ---------------------------------------------------------------------------------------


def test_in_range_data_runs_as_without_checks():
    rt_mod = tw.build(gather, "c", bounds_check=True)
    a = np.arange(1024, dtype="float32")
    idx = np.random.default_rng(0).integers(0, 1024, 256).astype("int32")
    b = np.zeros(256, "float32")
    rt_mod["main"](a, idx, b)
    np.testing.assert_array_equal(b, a[idx])


def test_a_bad_gather_index_raises_naming_buffer_index_and_kernel():
    rt_mod = tw.build(gather, "c", bounds_check=True)
    a = np.arange(1024, dtype="float32")
    b = np.full(256, -1, "float32")
    with pytest.raises(BoundsError) as info:
        rt_mod["main"](a, _indices(256, {40: 5000}), b)
    assert str(info.value) == (
        "main: kernel main accessed buffer A at index 5000, outside [0, 1024) (1024 elements); "
        "index expression: idx[i]; the access was skipped"
    )
    assert (info.value.buffer, info.value.index, info.value.kernel) == ("A", 5000, "main")
    assert isinstance(info.value, IndexError)
    assert b[40] == -1 and np.array_equal(np.delete(b, 40), np.delete(a[:256], 40))
    # The record is cleared: the next good call passes.
    rt_mod["main"](a, _indices(256, {}), b)
    np.testing.assert_array_equal(b, a[:256])


def test_a_bad_scatter_index_writes_nothing_outside_the_buffer():
    rt_mod = tw.build(scatter, "c", bounds_check=True)
    memory = np.full(64 + 32, 7.0, "float32")  # B is the middle 64 elements, guarded by 7s
    b = memory[16:80]
    b[:] = 0
    with pytest.raises(BoundsError, match=r"buffer B at index -16,"):
        rt_mod["main"](np.ones(64, "float32"), _indices(64, {3: -16}), b)
    with pytest.raises(BoundsError, match=r"buffer B at index 64,"):
        rt_mod["main"](np.ones(64, "float32"), _indices(64, {9: 64}), b)
    assert (memory[:16] == 7).all() and (memory[80:] == 7).all()


def test_a_two_dimensional_buffer_names_the_element():
    rt_mod = tw.build(gather_rows, "c", bounds_check=True)
    with pytest.raises(BoundsError) as info:
        rt_mod["main"](
            np.zeros((32, 16), "float32"), _indices(8, {2: 40}), np.zeros((8, 16), "float32")
        )
    message = str(info.value)
    assert info.value.index // 16 == 40  # the last thread to fail wrote the record
    assert f"buffer A at index {info.value.index} (element [40, {info.value.index % 16}]), " in (
        message
    )
    assert "outside [0, 512) (512 elements, shape (32, 16)); index expression: idx[i] * 16 + j" in (
        message
    )


def test_callers_pass_the_parameters_only():
    rt_mod = tw.build(gather, "c", bounds_check=True)
    func = rt_mod["main"]
    assert repr(func) == "<PackedFunc main(A, idx, B) on cpu(0)>"
    with pytest.raises(TypeError, match=r"main expects 3 arguments \(A, idx, B\), got 2"):
        func(np.zeros(1024, "float32"), np.zeros(256, "int32"))


def test_a_bound_launcher_raises_on_each_bad_run_and_times_a_good_one():
    rt_mod = tw.build(gather, "c", bounds_check=True)
    a, b = np.arange(1024, dtype="float32"), np.zeros(256, "float32")
    idx = _indices(256, {0: 1024})
    run = rt_mod["main"].bind(a, idx, b)
    for _ in range(2):
        with pytest.raises(BoundsError, match="index 1024"):
            run()
    idx[0] = 0
    run()
    timing = rt_mod.time_evaluator("main", tw.cpu(0), number=3)(a, idx, b)
    assert timing.mean > 0


def test_the_pass_context_spelling_asks_for_checks():
    with PassContext(config={"tir.instrument_bound_checkers": True}):
        checked = tw.build(gather, "c")
        unchecked = tw.build(gather, "c", bounds_check=False)  # an explicit choice wins
    plain = tw.build(gather, "c")
    assert checked["main"].signature.bounds_checks
    assert not unchecked["main"].signature.bounds_checks
    assert not plain["main"].signature.bounds_checks
    assert unchecked.get_source() == plain.get_source()


def test_the_pass_context_refuses_unknown_keys_and_wrong_types():
    with pytest.raises(ValueError, match=r"unknown config key 'tir.instrument_bound_checker' "
                       r"\(did you mean 'tir.instrument_bound_checkers'\?\)"):  # fmt: skip
        PassContext(config={"tir.instrument_bound_checker": True})
    with pytest.raises(TypeError, match=r"'tir.instrument_bound_checkers' takes a bool, got str"):
        PassContext(config={"tir.instrument_bound_checkers": "yes"})
    with PassContext(opt_level=3) as outer:
        assert PassContext.current() is outer
    assert PassContext.current().config == {}


def test_the_checks_travel_in_the_artifact(tmp_path):
    artifact = tw.build_artifact(gather, "c", bounds_check=True)
    checks = artifact.functions[0].bounds_checks
    assert [(c.buffer, c.kernel, c.index, c.extent, c.shape) for c in checks] == [
        ("A", "", "idx[i]", "1024", (1024,))
    ]
    loaded = tw.runtime.load(Artifact.from_bytes(artifact.to_bytes()))
    with pytest.raises(BoundsError, match="buffer A at index -1,"):
        loaded["main"](np.zeros(1024, "float32"), _indices(256, {1: -1}), np.zeros(256, "f4"))
    path = artifact.save(tmp_path / "gather.so")
    description = json.loads((tmp_path / "gather.so.json").read_text())
    assert description["functions"][0]["bounds_checks"][0]["buffer"] == "A"
    assert tw.runtime.load_module(path)["main"].signature == artifact.functions[0]
    plain = tw.build_artifact(gather, "c")
    assert "bounds_checks" not in plain.functions[0].to_json()


# ---- OpenCL (PoCL) ---------------------------------------------------------------------------


@pytest.fixture
def opencl():
    if not opencl_runtime.available():
        if config.get().ci:
            pytest.fail("no OpenCL platform: CI installs PoCL (pocl-opencl-icd)")
        pytest.skip("no OpenCL platform (apt-get install pocl-opencl-icd)")
    return tw.opencl(0)


def test_opencl_gather_raises_naming_the_kernel(opencl):
    rt_mod = tw.build(_on_threads(gather), "opencl", bounds_check=True)
    assert "bounds_errors" in rt_mod.get_source()
    a = tw.nd.array(np.arange(1024, dtype="float32"), opencl)
    b = tw.nd.array(np.zeros(256, "float32"), opencl)
    with pytest.raises(BoundsError) as info:
        rt_mod["main"](a, tw.nd.array(_indices(256, {100: 1030}), opencl), b)
    assert str(info.value) == (
        "main: kernel main_kernel accessed buffer A at index 1030, outside [0, 1024) "
        "(1024 elements); index expression: idx[i_0 * 64 + i_1]; the access was skipped"
    )
    assert info.value.kernel == "main_kernel"
    rt_mod["main"](a, tw.nd.array(_indices(256, {}), opencl), b)
    np.testing.assert_array_equal(b.numpy(), np.arange(256, dtype="float32"))


def test_opencl_scatter_writes_nothing_out_of_range(opencl):
    rt_mod = tw.build(_on_threads(scatter, threads=32), "opencl", bounds_check=True)
    b = tw.nd.array(np.zeros(64, "float32"), opencl)
    with pytest.raises(BoundsError, match=r"kernel main_kernel accessed buffer B at index 100,"):
        rt_mod["main"](
            tw.nd.array(np.ones(64, "float32"), opencl),
            tw.nd.array(_indices(64, {5: 100}), opencl),
            b,
        )
    got = b.numpy()
    assert got[5] == 0 and (np.delete(got, 5) == 1).all()


def test_kernels_whose_accesses_are_all_proven_are_unchanged(opencl):
    sch = blocking_with_shared(tw.tir.Schedule(matmul_module(64)), 2, 2, 8, 8, 8)
    checked = tw.build(sch.mod, "opencl", bounds_check=True)
    assert checked.get_source() == tw.build(sch.mod, "opencl").get_source()
    assert not checked["main"].signature.bounds_checks
    a, b = (np.random.default_rng(3).standard_normal((64, 64)).astype("float32") for _ in "ab")
    c = tw.nd.array(np.zeros((64, 64), "float32"), opencl)
    checked["main"](tw.nd.array(a, opencl), tw.nd.array(b, opencl), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)


# ---- CUDA (scripts/gpu-check) ----------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU")
def test_cuda_gather_raises_naming_buffer_index_and_kernel():
    dev = tw.cuda(0)
    rt_mod = tw.build(_on_threads(gather), "cuda", bounds_check=True)
    a = tw.nd.array(np.arange(1024, dtype="float32"), dev)
    b = tw.nd.array(np.zeros(256, "float32"), dev)
    with pytest.raises(BoundsError) as info:
        rt_mod["main"](a, tw.nd.array(_indices(256, {100: 1030, 200: -5}), dev), b)
    assert info.value.kernel == "main_kernel" and info.value.buffer == "A"
    assert info.value.index in (1030, -5)  # two threads raced on one record: either is right
    assert f"accessed buffer A at index {info.value.index}, outside [0, 1024)" in str(info.value)
    got = b.numpy()
    assert got[100] == 0 and got[200] == 0
    rt_mod["main"](a, tw.nd.array(_indices(256, {}), dev), b)
    np.testing.assert_array_equal(b.numpy(), np.arange(256, dtype="float32"))
