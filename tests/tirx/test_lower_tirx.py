"""LowerTIRx on the gmem_smem seed page: the lowered loop, the dtype table, swizzles, and a
numeric round trip through an interpreter of the lowered IR."""

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run_kernel

import tilewright as tw
from tilewright.ir import (
    Call,
    Evaluate,
    For,
    ForKind,
    LetStmt,
    assert_structural_equal,
    intrinsics,
    post_order_visit,
)
from tilewright.layout import ComposeLayout, S, SwizzleLayout, TileLayout
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx
from tilewright.tirx.transform import LowerTIRx, has_tirx


def round_trip_kernel(shape, dtype, s_layout):
    fs = tuple(slice(0, n) for n in shape)

    @T.prim_func
    def kernel(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, shape, dtype)
        B = T.match_buffer(B_ptr, shape, dtype)
        T.device_entry()
        T.cta_id([1])
        T.lane_id([32])
        T.thread_id([32])
        A_smem = T.alloc_buffer(shape, dtype, scope="shared", layout=s_layout)
        Tx.warp.copy(A_smem[fs], A[fs])
        T.cuda.cta_sync()
        Tx.warp.copy(B[fs], A_smem[fs])

    return kernel


def nodes(tree, cls):
    found = []
    post_order_visit(tree, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


def run(mod, shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 200, size=shape).astype(dtype)
    b = np.zeros(shape, dtype)
    result = run_kernel(mod["main"], a, b)
    return a, result.arrays[1], result


def test_page_program_lowers_to_the_page_loop():
    kernel = round_trip_kernel((32, 32), "float32", TileLayout(S[(32, 32)]))
    assert has_tirx(kernel)
    lower = LowerTIRx("cuda")
    mod = lower(kernel)
    assert [(d.variant, d.notes["vec"], d.notes["outer"]) for d in lower.decisions] == [
        ("gmem_smem", 4, 8),
        ("gmem_smem", 4, 8),
    ]
    func = mod["main"]
    assert not has_tirx(func)
    bound = [f for f in nodes(func.body, For) if f.kind is ForKind.THREAD_BINDING]
    assert sorted((f.thread_tag, f.extent.value) for f in bound) == [
        ("blockIdx.x", 1),
        ("threadIdx.x", 32),
    ]
    tx = next(f.loop_var for f in bound if f.thread_tag == "threadIdx.x")
    lets = {let.var.name: let for let in nodes(func.body, LetStmt)}
    lane = lets["lane_id"].var
    assert_structural_equal(lets["lane_id"].value, tx % 32)
    serial = [f for f in nodes(func.body, For) if f.kind is ForKind.SERIAL]
    assert [f.extent.value for f in serial] == [8, 8]
    f = serial[0].loop_var
    s_lin = serial[0].body
    assert isinstance(s_lin, LetStmt) and s_lin.var.name == "s_lin"
    assert_structural_equal(s_lin.value, f * 128 + lane * 4)
    copies = [c for c in nodes(func.body, Call) if intrinsics.COPY_BYTES.matches(c)]
    assert [c.args[2].value for c in copies] == [16, 16]
    # global -> shared first: the destination is the shared flat view
    assert copies[0].args[0].args[0].buffer.scope == "shared"
    assert copies[0].args[1].args[0].buffer.shape[0].value == 1024
    syncs = [e for e in nodes(func.body, Evaluate) if intrinsics.SYNC_THREADS.matches(e)]
    assert len(syncs) == 1


@pytest.mark.parametrize(
    ("dtype", "vec", "outer"), [("float32", 4, 8), ("float16", 8, 4), ("uint8", 16, 2)]
)
def test_dtype_table_and_round_trip(dtype, vec, outer):
    kernel = round_trip_kernel((32, 32), dtype, TileLayout(S[(32, 32)]))
    lower = LowerTIRx("cuda")
    mod = lower(kernel)
    assert {(d.variant, d.notes["vec"], d.notes["outer"]) for d in lower.decisions} == {
        ("gmem_smem", vec, outer)
    }
    assert {d.notes["vec_bytes"] for d in lower.decisions} == {16}
    a, b, result = run(mod, (32, 32), dtype)
    np.testing.assert_array_equal(b, a)
    assert result.effects[intrinsics.COPY_BYTES] == 2 * 32 * outer


def test_swizzle_caps_vec_and_routes_offsets():
    # A swizzle of 2-element chunks: vec drops from 4 to 2, outer doubles to 16.
    layout = ComposeLayout(SwizzleLayout(1, 2, 3), TileLayout(S[(32, 32)]))
    lower = LowerTIRx("cuda")
    mod = lower(round_trip_kernel((32, 32), "float32", layout))
    assert {(d.notes["vec"], d.notes["outer"]) for d in lower.decisions} == {(2, 16)}
    s_off = [let for let in nodes(mod["main"].body, LetStmt) if let.var.name == "s_off"]
    assert len(s_off) == 2
    assert s_off[0].value.op == "bitwise_xor"
    a, b, result = run(mod, (32, 32), "float32")
    np.testing.assert_array_equal(b, a)
    smem = next(iter(result.shared.values()))
    assert not np.array_equal(smem, a.reshape(-1)), "the swizzle did not permute shared memory"
    assert sorted(smem) == sorted(a.reshape(-1))


@pytest.mark.parametrize("dtype", ["float32", "float16", "uint8"])
def test_128_byte_swizzle_round_trip(dtype):
    bits = np.dtype(dtype).itemsize * 8
    layout = ComposeLayout(SwizzleLayout.from_bytes(128, bits), TileLayout(S[(32, 32)]))
    lower = LowerTIRx("cuda")
    mod = lower(round_trip_kernel((32, 32), dtype, layout))
    assert {d.notes["vec_bytes"] for d in lower.decisions} == {16}
    a, b, _ = run(mod, (32, 32), dtype)
    np.testing.assert_array_equal(b, a)


def test_column_major_shared_side_follows_the_global_order():
    # The global side drives the order; the shared side is transposed, so vec is 1.
    layout = TileLayout(S[(32, 32) : (1, 32)])
    lower = LowerTIRx("cuda")
    mod = lower(round_trip_kernel((32, 32), "float32", layout))
    assert {(d.variant, d.notes["vec"], d.notes["outer"]) for d in lower.decisions} == {
        ("gmem_smem", 1, 32)
    }
    a, b, _ = run(mod, (32, 32), "float32")
    np.testing.assert_array_equal(b, a)


def test_non_cuda_target_falls_back_to_scalar():
    lower = LowerTIRx("c")
    mod = lower(round_trip_kernel((32, 32), "float32", TileLayout(S[(32, 32)])))
    assert [d.variant for d in lower.decisions] == ["scalar", "scalar"]
    a, b, _ = run(mod, (32, 32), "float32")
    np.testing.assert_array_equal(b, a)


def test_target_from_context():
    from tilewright.target import Target

    lower = LowerTIRx()
    with Target("cuda"):
        lower(round_trip_kernel((32, 32), "float32", TileLayout(S[(32, 32)])))
    assert [d.variant for d in lower.decisions] == ["gmem_smem", "gmem_smem"]


def test_lowered_module_goes_through_the_cuda_pipeline():
    mod = LowerTIRx("cuda")(round_trip_kernel((32, 32), "float32", TileLayout(S[(32, 32)])))
    lowered = tw.lower(mod, "cuda")
    kernel = lowered["main_kernel"]
    assert kernel.attr("tir.is_kernel")
    copies = [c for c in nodes(kernel.body, Call) if intrinsics.COPY_BYTES.matches(c)]
    assert len(copies) == 2


def test_plain_stores_into_a_laid_out_buffer_go_through_the_layout():
    layout = TileLayout(S[(4, 8) : (1, 4)])

    @T.prim_func
    def kernel(B: T.Buffer((4, 8), "float32")):
        T.device_entry()
        T.thread_id([1])
        S_ = T.alloc_buffer((4, 8), scope="shared", layout=layout)
        S_[1, 2] = T.float32(7)
        B[1, 2] = S_[1, 2]

    func = LowerTIRx("cuda")(kernel)["main"]
    from tilewright.ir import BufferStore

    stores = nodes(func.body, BufferStore)
    assert stores[0].indices[0].value == 1 + 2 * 4
    assert stores[0].buffer.shape[0].value == 32
    assert stores[1].value.indices[0].value == 9
    assert stores[1].value.buffer is stores[0].buffer


def test_tiles_of_several_ctas_with_symbolic_bases():
    swizzled = ComposeLayout(SwizzleLayout.from_bytes(128, 16), TileLayout(S[(16, 64)]))

    @T.prim_func
    def tiles(A: T.Buffer((64, 64), "float16"), B: T.Buffer((64, 64), "float16")):
        T.device_entry()
        bx = T.cta_id([4])
        T.warp_id([2])
        T.thread_id([64])
        S_ = T.alloc_buffer((16, 64), "float16", scope="shared", layout=swizzled)
        Tx.cta.copy(S_[0:16, 0:64], A[bx * 16 : bx * 16 + 16, 0:64])
        T.cuda.cta_sync()
        Tx.cta.copy(B[bx * 16 : bx * 16 + 16, 0:64], S_[0:16, 0:64])

    lower = LowerTIRx("cuda")
    mod = lower(tiles)
    assert {(d.variant, d.notes["vec"], d.notes["outer"]) for d in lower.decisions} == {
        ("gmem_smem", 8, 2)
    }
    g_lin = [let for let in nodes(mod["main"].body, LetStmt) if let.var.name == "g_lin"]
    assert "bx * 1024" in g_lin[0].value.script()
    a, b, _ = run(mod, (64, 64), "float16")
    np.testing.assert_array_equal(b, a)
