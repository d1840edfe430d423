"""tensorize with a tensor intrinsic written in C (a 4-element dot product): the matched
block becomes the intrinsic's call (expected script), the trace replays, the C computes what
the original computes; and what tensorize refuses."""

from __future__ import annotations

import numpy as np
import pytest
from schedule_checks import check_refused, check_replay

import tilewright as tw
from tilewright.script import tir as T
from tilewright.tir import Schedule, TensorIntrin

DOT4_C = """
static int dot4(float* c, int c_offset, const float* a, int a_offset, const float* b,
                int b_offset) {
  for (int k = 0; k < 4; ++k) c[c_offset] += a[a_offset + k] * b[b_offset + k];
  return 0;
}
"""


@T.prim_func
def dot4_desc(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4,), "float32", offset_factor=1)
    B = T.match_buffer(b, (4,), "float32", offset_factor=1)
    C = T.match_buffer(c, (1,), "float32", offset_factor=1)
    with T.block("root"):
        T.reads(C[0], A[0:4], B[0:4])
        T.writes(C[0])
        for i in range(4):
            with T.block("update"):
                vi = T.axis.remap("R", [i])
                C[0] = C[0] + A[vi] * B[vi]


@T.prim_func
def dot4_impl(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4,), "float32", offset_factor=1)
    B = T.match_buffer(b, (4,), "float32", offset_factor=1)
    C = T.match_buffer(c, (1,), "float32", offset_factor=1)
    with T.block("root"):
        T.reads(C[0], A[0:4], B[0:4])
        T.writes(C[0])
        T.evaluate(
            T.call_extern(
                "int32", "dot4", C.data, C.elem_offset, A.data, A.elem_offset, B.data,
                B.elem_offset,
            )
        )  # fmt: skip


TensorIntrin.register("test.dot4", dot4_desc, dot4_impl, override=True)


@T.prim_func
def matvec(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32"),
           C: T.Buffer((16,), "float32")):  # fmt: skip
    for i, k in T.grid(16, 16):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk] * B[vk]


def _tensorized() -> Schedule:
    sch = Schedule(matvec)
    block = sch.get_block("C")
    i, k = sch.get_loops(block)
    k0, k1 = sch.split(k, [None, 4])
    sch.decompose_reduction(block, k0)
    sch.tensorize(k1, "test.dot4")
    sch.annotate(i, "pragma_import_c", DOT4_C)
    return sch


def test_the_matched_block_calls_the_intrinsic_on_its_regions() -> None:
    sch = _tensorized()
    text = sch.mod.script()
    assert 'T.call_extern("int32", "dot4", C_1.data, C_1.elem_offset, A_1.data' in text, text
    assert "T.match_buffer(A[vi_o, vk_o * 4:vk_o * 4 + 4]" in text, text
    assert "T.match_buffer(C[vi_o], (1,)" in text, text
    assert_reparses = tw.script.from_source(text)
    tw.ir.assert_structural_equal(assert_reparses, sch.mod)
    check_replay(sch, matvec)


def test_the_tensorized_c_computes_what_the_original_computes() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 16)).astype("float32")
    b = rng.standard_normal(16).astype("float32")
    c = np.zeros(16, "float32")
    rt = tw.build(_tensorized().mod, target="c")
    assert "dot4(C, i, A, i * 16 + k_0 * 4, B, k_0 * 4);" in rt.get_source()
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_what_tensorize_refuses() -> None:
    sch = Schedule(matvec)
    block = sch.get_block("C")
    _, k = sch.get_loops(block)
    k0, k1 = sch.split(k, [None, 4])
    outer = sch.blockize(k1)
    check_refused(sch, lambda: sch.tensorize(outer, "test.dot4"), "has an init")
    sch = Schedule(matvec)
    block = sch.get_block("C")
    _, k = sch.get_loops(block)
    k0, k1 = sch.split(k, [None, 8])  # 8 iterations, desc has 4
    sch.decompose_reduction(block, k0)
    outer = sch.blockize(k1)
    check_refused(sch, lambda: sch.tensorize(outer, "test.dot4"), "runs 8 times, desc's 4")
    with pytest.raises(ValueError, match=r"no tensor intrinsic named 'test\.nothing'"):
        sch.tensorize(outer, "test.nothing")
    with pytest.raises(ValueError, match="already registered"):
        TensorIntrin.register("test.dot4", dot4_desc, dot4_impl)


DOT4_PTR_C = """
static int dot4p(float* c, const float* a, const float* b) {
  for (int k = 0; k < 4; ++k) c[0] += a[k] * b[k];
  return 0;
}
"""


@T.prim_func
def dot4_ptr_impl(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4,), "float32", offset_factor=1)
    B = T.match_buffer(b, (4,), "float32", offset_factor=1)
    C = T.match_buffer(c, (1,), "float32", offset_factor=1)
    with T.block("root"):
        T.reads(C[0], A[0:4], B[0:4])
        T.writes(C[0])
        T.evaluate(
            T.call_extern("int32", "dot4p", C.access_ptr("rw"), A.access_ptr("r"),
                          B.access_ptr("r"))
        )  # fmt: skip


def test_an_implementation_may_pass_access_pointers() -> None:
    TensorIntrin.register("test.dot4_ptr", dot4_desc, dot4_ptr_impl, override=True)
    sch = Schedule(matvec)
    block = sch.get_block("C")
    i, k = sch.get_loops(block)
    k0, k1 = sch.split(k, [None, 4])
    sch.decompose_reduction(block, k0)
    sch.tensorize(k1, "test.dot4_ptr")
    sch.annotate(i, "pragma_import_c", DOT4_PTR_C)
    tw.ir.assert_structural_equal(tw.script.from_source(sch.mod.script()), sch.mod)
    rt = tw.build(sch.mod, target="c")
    assert "dot4p((C + i), (A + i * 16 + k_0 * 4), (B + k_0 * 4));" in rt.get_source()
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 16)).astype("float32")
    b = rng.standard_normal(16).astype("float32")
    c = np.zeros(16, "float32")
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
