"""CUDA printer: golden text on hand-lowered kernels, and the source compiles for sm_90."""

from __future__ import annotations

import importlib.util
import shutil

import pytest
from gpu_kernels import expressions, vector_add, vector_copy, vector_scale, window_sum

from tilewright import config
from tilewright.codegen import CodegenError, codegen_cuda, generate_cuda
from tilewright.runtime.cuda_runtime.nvrtc import CUDACompileError, compile_cuda, nvrtc_version


def _compilers() -> list[str]:
    found = []
    if nvrtc_version() is not None:
        found.append("nvrtc")
    if shutil.which("nvcc"):
        found.append("nvcc")
    if not found and config.get().ci:
        pytest.fail("neither NVRTC nor nvcc is available to compile CUDA")
    return found


def test_vector_add_text():
    text = codegen_cuda(vector_add())
    assert (
        'extern "C" __global__ void __launch_bounds__(128) main_kernel(float* __restrict__ A, '
        "float* __restrict__ B, float* __restrict__ C) {\n"
        "  int i_0 = (int)blockIdx.x;\n"
        "  int i_1 = (int)threadIdx.x;\n"
        "  C[i_0 * 128 + i_1] = A[i_0 * 128 + i_1] + B[i_0 * 128 + i_1];\n"
        "}\n"
    ) in text


def test_window_sum_has_one_shared_array_and_one_barrier():
    text = codegen_cuda(window_sum())
    assert text.count("__shared__ float A_shared[130];") == 1
    assert text.count("__syncthreads();") == 1
    body = text[text.index("{") :]
    assert body.index("A_shared[130]") < body.index("int i_0")  # declared at kernel scope
    assert "B[i_0 * 128 + i_1] = A_shared[i_1] + A_shared[i_1 + 1] + A_shared[i_1 + 2];" in text


def test_let_is_a_lambda_and_floordiv_a_helper():
    text = codegen_cuda(expressions())
    assert "[&]() { float t = A[i] * 1.5f; return max(t, 0.25f); }()" in text
    assert "static __device__ __forceinline__ int tw_floordiv_i32(int a, int b)" in text


def test_dynamic_shared_memory():
    src = generate_cuda(window_sum(scope="shared.dyn"))
    assert "extern __shared__ __align__(1024) unsigned char tw_dyn_shared[];" in src.text
    assert "float* A_shared = (float*)tw_dyn_shared;" in src.text
    assert src.dyn_shared_bytes == {"main_kernel": 528}  # 520 rounded up to 16


def test_symbolic_extent_gives_no_launch_bounds():
    from tilewright.ir import Var, attrs, dtype

    mod = vector_add()
    kernel = mod["main_kernel"]
    n = Var("n", dtype("int32"))
    kernel = kernel.with_attr("thread_extent", attrs({"blockIdx.x": n, "threadIdx.x": 128}))
    text = codegen_cuda(mod.with_function("main_kernel", kernel))
    assert "__launch_bounds__(128) main_kernel(" in text


def test_float4_load_and_store_with_operators():
    text = codegen_cuda(vector_scale())
    assert "*(float4*)(B + (i_0 * 64 + i_1) * 4) = " in text
    assert "*(float4*)(A + (i_0 * 64 + i_1) * 4) * make_float4(2.0f, 2.0f, 2.0f, 2.0f)" in text
    assert "float4 operator+(float4 a, float4 b)" in text
    assert "float4 operator*(float4 a, float4 b)" in text
    assert "operator-" not in text  # only the operators used are defined


def test_half2_uses_cuda_fp16():
    text = codegen_cuda(vector_scale(lanes=2, dt="float16"))
    assert "#include <cuda_fp16.h>" in text
    assert "*(half2*)(B + (i_0 * 64 + i_1) * 2) = " in text
    assert "__half2half2((half)2.0f)" in text
    assert "operator" not in text  # cuda_fp16.h defines half2 arithmetic


def test_half8_copy_is_a_raw_16_byte_copy():
    text = codegen_cuda(vector_copy())
    assert "*(uint4*)(B + i * 8) = *(uint4*)(A + i * 8);" in text


def test_unaligned_ramp_falls_back_to_lanes():
    from tilewright.ir import BufferStore, IntImm, Ramp

    mod = vector_scale()
    kernel = mod["main_kernel"]
    store = kernel.body.body.body
    strided = Ramp(store.indices[0].base, IntImm(2, store.indices[0].base.dtype), 4)
    kernel = kernel.with_body(
        kernel.body.replace(
            body=kernel.body.body.replace(
                body=BufferStore(store.buffer, store.buffer.load([strided]), (strided,))
            )
        )
    )
    text = codegen_cuda(mod.with_function("main_kernel", kernel))
    assert "float4" not in text
    assert "for (int lane = 0; lane < 4; ++lane) {" in text


def test_unknown_thread_tag_is_an_error():
    from tilewright.ir import For

    mod = vector_add()
    kernel = mod["main_kernel"]
    outer: For = kernel.body
    bad = kernel.with_body(outer.replace(thread_tag="vthread.x"))
    with pytest.raises(CodegenError, match=r"main_kernel: loop i_0 is bound to 'vthread.x'"):
        codegen_cuda(mod.with_function("main_kernel", bad))


@pytest.mark.parametrize(
    "build",
    [vector_add, window_sum, vector_scale, vector_copy,
     lambda: vector_scale(lanes=2, dt="float16"), lambda: window_sum(scope="shared.dyn"),
     expressions, lambda: expressions(dt="float16")],
)  # fmt: skip
def test_source_compiles_for_sm90(build):
    text = codegen_cuda(build())
    for compiler in _compilers():
        cubin = compile_cuda(text, "sm_90", ["main_kernel"], compiler)
        assert cubin[:4] == b"\x7fELF"


def test_compile_error_names_the_kernel_and_shows_the_log():
    bad = 'extern "C" __global__ void broken_kernel(float* A) { A[0] = undefined_name; }\n'
    for compiler in _compilers():
        with pytest.raises(CUDACompileError, match=r"(?s)broken_kernel.*undefined_name"):
            compile_cuda(bad, "sm_90", ["broken_kernel"], compiler)


def test_cubins_are_cached(tmp_path):
    if nvrtc_version() is None:
        pytest.skip("NVRTC is not installed")
    with config.scope(cache_dir=tmp_path):
        compile_cuda(codegen_cuda(vector_add()), "sm_90", ["main_kernel"], "nvrtc")
        assert len(list((tmp_path / "cuda").glob("*.cubin"))) == 1
        compile_cuda(codegen_cuda(vector_add()), "sm_90", ["main_kernel"], "nvrtc")
        assert len(list((tmp_path / "cuda").glob("*.cubin"))) == 1


def test_unknown_or_missing_compiler_is_a_clear_error():
    with pytest.raises(ValueError, match="compiler must be auto, nvrtc, nvcc or cupy, got 'clang'"):
        compile_cuda("", "sm_90", ["k"], "clang")
    if importlib.util.find_spec("cupy_backends") is None:
        with pytest.raises(CUDACompileError, match="cannot compile CUDA kernel k: cupy's NVRTC"):
            compile_cuda("", "sm_90", ["k"], "cupy")
