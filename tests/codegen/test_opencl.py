"""OpenCL printer: golden text on hand-lowered kernels."""

from __future__ import annotations

from gpu_kernels import symbolic_add, vector_add, vector_scale, window_sum

from tilewright.codegen import codegen_opencl


def test_vector_add_text():
    text = codegen_opencl(vector_add("opencl"))
    assert (
        "__kernel void main_kernel(__global float* restrict A, __global float* restrict B, "
        "__global float* restrict C) {\n"
        "  int i_0 = (int)get_group_id(0);\n"
        "  int i_1 = (int)get_local_id(0);\n"
        "  C[i_0 * 128 + i_1] = A[i_0 * 128 + i_1] + B[i_0 * 128 + i_1];\n"
        "}\n"
    ) in text


def test_local_memory_is_declared_at_kernel_scope_with_one_barrier():
    text = codegen_opencl(window_sum("opencl"))
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("__kernel"))
    assert lines[head + 1] == "  __local float A_shared[130];"
    assert text.count("barrier(CLK_LOCAL_MEM_FENCE);") == 1


def test_vload_vstore():
    text = codegen_opencl(vector_scale("opencl"))
    assert (
        "vstore4(((vload4(0, A + (i_0 * 64 + i_1) * 4) * ((float4)(2.0f))) + "
        "vload4(0, A + (i_0 * 64 + i_1) * 4)), 0, B + (i_0 * 64 + i_1) * 4);"
    ) in text


def test_half_enables_the_extension():
    text = codegen_opencl(vector_scale("opencl", lanes=2, dt="float16"))
    assert "#pragma OPENCL EXTENSION cl_khr_fp16 : enable" in text
    assert "vload2(0, A + (i_0 * 64 + i_1) * 2) * ((half2)((half)2.0f))" in text


def test_scalar_parameters():
    text = codegen_opencl(symbolic_add("opencl"))
    assert "__global float* restrict B, int n, float x) {" in text
    assert "if (i_0 * 64 + i_1 < n) {" in text


def test_parameters_named_like_dialect_keywords_are_renamed_and_run():
    import numpy as np
    import pytest

    import tilewright as tw
    from tilewright.runtime import opencl_runtime
    from tilewright.script import from_source

    func = from_source(
        """
@T.prim_func
def main(kernel: T.Buffer((8,), "float32"), local: T.Buffer((8,), "float32")):
    for i in T.thread_binding(8, thread="threadIdx.x"):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            local[vi] = kernel[vi] * T.float32(2)
"""
    )
    source = tw.build_artifact(func, target="opencl").source
    assert "float* kernel" not in source and "float* local" not in source, source
    if not opencl_runtime.available():
        pytest.skip("no OpenCL platform")
    rt_mod = tw.build(func, target="opencl")
    a = tw.nd.array(np.arange(8, dtype="float32"), tw.opencl(0))
    b = tw.nd.array(np.zeros(8, "float32"), tw.opencl(0))
    rt_mod["main"](a, b)
    np.testing.assert_array_equal(b.numpy(), np.arange(8, dtype="float32") * 2)
