"""Copy and fill dispatch: forced variants, the page's decline reasons, register and fill
variants, and the error that lists every variant with its reason."""

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run_kernel

import tilewright as tw
from tilewright.layout import S, TileLayout, laneid
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx
from tilewright.tirx.dispatch import DispatchError
from tilewright.tirx.ops import COPY_VARIANTS, FILL_VARIANTS
from tilewright.tirx.transform import LowerTIRx

SMEM = TileLayout(S[(32, 32)])


def variants_of(lower):
    return [d.variant for d in lower.decisions]


def test_variant_tables_are_literal_and_ordered():
    assert [(v.name, v.priority) for v in COPY_VARIANTS] == [
        ("gmem_smem", 30),
        ("stmatrix", 25),
        ("ldmatrix", 25),
        ("register", 20),
        ("scalar", 0),
    ]
    assert [v.name for v in FILL_VARIANTS] == ["vectorized", "scalar"]


def test_narrowed_scope_declines_gmem_smem():
    @T.prim_func
    def kernel(A: T.Buffer((32, 32), "float32")):
        T.device_entry()
        lane = T.lane_id([32])
        A_smem = T.alloc_buffer((32, 32), scope="shared", layout=SMEM)
        if lane < 16:
            Tx.warp.copy(A_smem[0:32, 0:32], A[0:32, 0:32], dispatch="gmem_smem")

    with pytest.raises(DispatchError, match=r"dispatch='gmem_smem' does not apply: not all "
                       r"threads of the warp scope are active: narrowed by the enclosing "
                       r"`if lane < 16`"):  # fmt: skip
        LowerTIRx("cuda")(kernel)


def test_narrowed_scope_falls_back_to_scalar():
    @T.prim_func
    def kernel(A: T.Buffer((32, 32), "float32")):
        T.device_entry()
        lane = T.lane_id([32])
        A_smem = T.alloc_buffer((32, 32), scope="shared", layout=SMEM)
        if lane < 16:
            Tx.warp.copy(A_smem[0:32, 0:32], A[0:32, 0:32])

    lower = LowerTIRx("cuda")
    lower(kernel)
    assert variants_of(lower) == ["scalar"]


def test_register_operand_declines_gmem_smem():
    @T.prim_func
    def kernel(A: T.Buffer((32, 8), "float32")):
        T.device_entry()
        T.lane_id([32])
        R = T.alloc_buffer((32, 8), scope="local")
        Tx.warp.copy(R[0:32, 0:8], A[0:32, 0:8], dispatch="gmem_smem")

    with pytest.raises(DispatchError, match=r"a register operand: R is in scope 'local'"):
        LowerTIRx("cuda")(kernel)


def test_indivisible_element_count_declines_gmem_smem():
    @T.prim_func
    def kernel(A: T.Buffer((32, 32), "float32")):
        T.device_entry()
        T.lane_id([32])
        A_smem = T.alloc_buffer((32, 32), scope="shared", layout=SMEM)
        Tx.warp.copy(A_smem[0:30, 0:30], A[0:30, 0:30], dispatch="gmem_smem")

    with pytest.raises(
        DispatchError,
        match=r"element count 900 is not divisible by the thread count 32 of the warp scope",
    ):
        LowerTIRx("cuda")(kernel)


def test_non_cuda_target_reason():
    @T.prim_func
    def kernel(A: T.Buffer((32, 32), "float32")):
        T.device_entry()
        T.lane_id([32])
        A_smem = T.alloc_buffer((32, 32), scope="shared", layout=SMEM)
        Tx.warp.copy(A_smem[0:32, 0:32], A[0:32, 0:32], dispatch="gmem_smem")

    with pytest.raises(
        DispatchError, match=r"target opencl has no tw.cuda.copy_bytes \(16-byte copies\)"
    ):
        LowerTIRx("opencl")(kernel)


def test_no_variant_applies_lists_every_reason():
    @T.prim_func
    def kernel(A: T.Buffer((32, 32), "float32")):
        T.device_entry()
        T.lane_id([32])
        A_smem = T.alloc_buffer((32, 32), "float16", scope="shared")
        Tx.warp.copy(A_smem[0:32, 0:32], A[0:32, 0:32])

    with pytest.raises(DispatchError) as info:
        LowerTIRx("cuda")(kernel)
    text = str(info.value)
    assert "no variant applies" in text
    assert "Tx.warp.copy(A_smem[0:32, 0:32], A[0:32, 0:32])" in text
    for name in ("gmem_smem", "register", "scalar"):
        assert f"  {name}: dtype mismatch: A_smem is float16, A is float32" in text


def test_unknown_forced_variant():
    @T.prim_func
    def kernel(A: T.Buffer((32, 32), "float32")):
        T.device_entry()
        T.lane_id([32])
        A_smem = T.alloc_buffer((32, 32), scope="shared")
        Tx.warp.copy(A_smem[0:32, 0:32], A[0:32, 0:32], dispatch="tma")

    with pytest.raises(DispatchError, match=r"no variant named 'tma'; variants are gmem_smem"):
        LowerTIRx("cuda")(kernel)


def test_forced_scalar_and_cta_scope_round_trip():
    @T.prim_func
    def kernel(A: T.Buffer((16, 64), "float16"), B: T.Buffer((16, 64), "float16")):
        T.device_entry()
        T.cta_id([1])
        T.warp_id([4])
        T.thread_id([128])
        A_smem = T.alloc_buffer((16, 64), "float16", scope="shared")
        Tx.cta.copy(A_smem[0:16, 0:64], A[0:16, 0:64], dispatch="scalar")
        T.cuda.cta_sync()
        Tx.cta.copy(B[0:16, 0:64], A_smem[0:16, 0:64])

    lower = LowerTIRx("cuda")
    mod = lower(kernel)
    assert variants_of(lower) == ["scalar", "gmem_smem"]
    assert lower.decisions[1].notes["vec"] == 8 and lower.decisions[1].notes["outer"] == 1
    a = np.arange(16 * 64, dtype="float16").reshape(16, 64)
    b = np.zeros_like(a)
    b = run_kernel(mod["main"], a, b).arrays[1]
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize(("width", "start", "vec"), [(8, 0, 4), (4, 0, 4), (4, 2, 2), (4, 1, 1)])
def test_register_variant_round_trip(width, start, vec):
    # Each lane holds a row of `width` floats read from A's columns start .. start + width:
    # the loads move float4s where A's side is 16-byte aligned, shrinking to the alignment
    # it has; the stores to B (aligned) always move float4s.
    regs = TileLayout(S[(32, width) : (1 @ laneid, 1)])

    @T.prim_func
    def kernel(A: T.Buffer((32, 8), "float32"), B: T.Buffer((32, width), "float32")):
        T.device_entry()
        T.lane_id([32])
        R = T.alloc_buffer((32, width), scope="local", layout=regs)
        Tx.warp.copy(R[0:32, 0:width], A[0:32, start : start + width])
        Tx.warp.copy(B[0:32, 0:width], R[0:32, 0:width])

    lower = LowerTIRx("cuda")
    mod = lower(kernel)
    assert variants_of(lower) == ["register", "register"]
    assert [d.notes["vec"] for d in lower.decisions] == [vec, 4]
    if width == 8:  # written out (the register loops are unrolled): 2 copies x 2 x 2 accesses
        assert tw.build_artifact(kernel, target="cuda").source.count("*(float4*)") == 8
    a = np.arange(256, dtype="float32").reshape(32, 8)
    b = run_kernel(mod["main"], a, np.zeros((32, width), "float32")).arrays[1]
    np.testing.assert_array_equal(b, a[:, start : start + width])


def test_fill_vectorized_then_copy_out():
    @T.prim_func
    def kernel(B: T.Buffer((32, 32), "float32")):
        T.device_entry()
        T.thread_id([64])
        A_smem = T.alloc_buffer((32, 32), scope="shared", layout=SMEM)
        Tx.cta.fill(A_smem[0:32, 0:32], 3.5)
        T.cuda.cta_sync()
        Tx.cta.copy(B[0:32, 0:32], A_smem[0:32, 0:32])

    lower = LowerTIRx("cuda")
    mod = lower(kernel)
    assert variants_of(lower) == ["vectorized", "gmem_smem"]
    assert lower.decisions[0].notes == {"vec": 4, "outer": 4}
    b = np.zeros((32, 32), "float32")
    b = run_kernel(mod["main"], b).arrays[0]
    assert (b == 3.5).all()


def test_fill_scalar_on_a_strided_region():
    @T.prim_func
    def kernel(B: T.Buffer((8, 8), "int32")):
        T.device_entry()
        T.lane_id([32])
        Tx.warp.fill(B[0:8, 0:3], 5)

    lower = LowerTIRx("cuda")
    mod = lower(kernel)
    assert variants_of(lower) == ["scalar"]
    b = np.zeros((8, 8), "int32")
    b = run_kernel(mod["main"], b).arrays[0]
    expect = np.zeros((8, 8), "int32")
    expect[:, :3] = 5
    np.testing.assert_array_equal(b, expect)


def test_a_warp_uniform_condition_narrows_the_cta_but_not_the_warp():
    @T.prim_func
    def kernel(A: T.Buffer((32, 32), "float32")):
        T.device_entry()
        w = T.warp_id([2])
        T.lane_id([32])
        A_smem = T.alloc_buffer((32, 32), scope="shared", layout=SMEM)
        if w == 0:
            Tx.warp.copy(A_smem[0:32, 0:32], A[0:32, 0:32])
            Tx.cta.copy(A_smem[0:32, 0:32], A[0:32, 0:32], dispatch="scalar")

    lower = LowerTIRx("cuda")
    lower(kernel)
    assert variants_of(lower) == ["gmem_smem", "scalar"]
    assert lower.decisions[0].notes["outer"] == 8

    @T.prim_func
    def cta_copy(A: T.Buffer((32, 32), "float32")):
        T.device_entry()
        w = T.warp_id([2])
        A_smem = T.alloc_buffer((32, 32), scope="shared", layout=SMEM)
        if w == 0:
            Tx.cta.copy(A_smem[0:32, 0:32], A[0:32, 0:32], dispatch="gmem_smem")

    with pytest.raises(DispatchError, match=r"narrowed by the enclosing `if w == 0`"):
        LowerTIRx("cuda")(cta_copy)
