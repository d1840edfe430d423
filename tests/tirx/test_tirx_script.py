"""The tirx script namespaces: the seed page's program parses as written, tile programs print
and parse back, and bad scope ids, layouts and operands are reported where they are."""

from __future__ import annotations

import pytest

from tilewright.ir import (
    Block,
    BlockRealize,
    Call,
    Evaluate,
    IfThenElse,
    SeqStmt,
    assert_structural_equal,
    intrinsics,
)
from tilewright.ir.tile import DeviceEntry, ScopeId, TileOp
from tilewright.layout import ComposeLayout, S, SwizzleLayout, TileLayout, laneid
from tilewright.script import ParseError, from_source
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx
from tilewright.tirx.transform import LowerTIRx, TIRxError

shape, dtype = (32, 32), "float32"
s_layout = TileLayout(S[shape])
fs = (slice(0, 32), slice(0, 32))


@T.prim_func
def kernel(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, shape, dtype)
    B = T.match_buffer(B_ptr, shape, dtype)
    T.device_entry()
    T.cta_id([1]); T.lane_id([32]); T.thread_id([32])  # noqa: E702  # fmt: skip
    A_smem = T.alloc_buffer(shape, dtype, scope="shared", layout=s_layout)
    Tx.warp.copy(A_smem[fs], A[fs])  # global -> shared  (this dispatch)
    T.cuda.cta_sync()
    Tx.warp.copy(B[fs], A_smem[fs])  # shared -> global  (this dispatch)


def test_page_program_parses_as_written():
    assert isinstance(kernel.body, BlockRealize)
    root: Block = kernel.body.block
    (smem,) = root.alloc_buffers
    assert smem.scope == "shared" and smem.layout is s_layout
    entry = root.body
    assert isinstance(entry, DeviceEntry)
    scopes = []
    node = entry.body
    while isinstance(node, ScopeId):
        scopes.append((node.kind, node.extents))
        node = node.body
    assert scopes == [("cta_id", (1,)), ("lane_id", (32,)), ("thread_id", (32,))]
    assert isinstance(node, SeqStmt) and len(node.seq) == 3
    first, sync, second = node.seq
    assert isinstance(first, TileOp) and (first.op, first.scope) == ("copy", "warp")
    assert first.args[0].buffer is smem and first.args[1].buffer.name == "A"
    assert isinstance(sync, Evaluate) and intrinsics.CTA_SYNC.matches(sync)
    assert second.args[0].buffer.name == "B" and second.args[1].buffer is smem


def test_page_program_prints_and_parses_back():
    text = kernel.script()
    assert text.startswith("from tilewright.script import tirx as T\n")
    for line in (
        'A_smem = T.alloc_buffer((32, 32), scope="shared", '
        "layout=T.TileLayout(S[(32, 32) : (32, 1)]))",
        "T.device_entry()",
        "cta_id = T.cta_id([1])",
        "lane_id = T.lane_id([32])",
        "Tx.warp.copy(A_smem[0:32, 0:32], A[0:32, 0:32])",
        "T.evaluate(T.cuda.cta_sync())",
        "Tx.warp.copy(B[0:32, 0:32], A_smem[0:32, 0:32])",
    ):
        assert f"    {line}\n" in text + "\n", line
    assert_structural_equal(from_source(text), kernel)


def test_named_scopes_swizzles_dispatch_and_fill_round_trip():
    swizzled = ComposeLayout(SwizzleLayout.from_bytes(128, 16), TileLayout(S[(16, 64)]))
    regs = TileLayout(S[(32, 8) : (1 @ laneid, 1)])

    @T.prim_func
    def tiles(A: T.Buffer((64, 64), "float16"), C: T.Buffer((32, 8), "float16")):
        T.device_entry()
        bx, by = T.cta_id([2, 2])
        w = T.warp_id([4])
        tid = T.thread_id([128])
        lane = T.lane_id([32])
        S_ = T.alloc_buffer((16, 64), "float16", scope="shared", layout=swizzled)
        R = T.alloc_buffer((32, 8), "float16", scope="local", layout=regs)
        Tx.cta.fill(S_[0:16, 0:64], T.float16(0))
        Tx.cta.copy(S_[0:16, 0:64], A[bx * 16 : bx * 16 + 16, 0:64], dispatch="gmem_smem")
        if w == 0:
            Tx.warp.copy(R[0:32, 0:8], S_[0:8, 0:32])
            Tx.thread.copy(C[lane, 0:8], A[by, tid % 8 : tid % 8 + 8])

    text = tiles.script()
    assert "bx, by = T.cta_id([2, 2])" in text
    assert (
        "layout=T.ComposeLayout(T.SwizzleLayout(3, 3, 3), T.TileLayout(S[(16, 64) : (64, 1)]))"
        in text
    )
    assert "layout=T.TileLayout(S[(32, 8) : (1@laneid, 1)])" in text
    assert (
        'Tx.cta.copy(S_[0:16, 0:64], A[bx * 16:bx * 16 + 16, 0:64], dispatch="gmem_smem")' in text
    )
    assert "Tx.cta.fill(S_[0:16, 0:64], T.float16(0.0))" in text
    assert_structural_equal(from_source(text), tiles)


def test_scope_variables_are_the_scope_ids():
    @T.prim_func
    def narrowed(A: T.Buffer((32,), "float32")):
        T.device_entry()
        lane = T.lane_id([32])
        if lane < 16:
            Tx.thread.fill(A[lane : lane + 1], 1.0)

    scope = narrowed.body
    assert isinstance(scope, DeviceEntry) and isinstance(scope.body, ScopeId)
    branch = scope.body.body
    assert isinstance(branch, IfThenElse)
    assert branch.condition.a is scope.body.vars[0]


def test_cuda_intrinsics():
    @T.prim_func
    def raw(A: T.Buffer((64,), "uint8"), B: T.Buffer((64,), "uint8")):
        T.cuda.copy_128b(T.address_of(B[0]), T.address_of(A[0]))
        T.cuda.copy_8b(T.address_of(B[16]), T.address_of(A[16]))

    calls = [s.value for s in raw.body.seq]
    assert len(calls) == 2 and all(intrinsics.COPY_BYTES.matches(c) for c in calls)
    assert [c.args[2].value for c in calls] == [16, 1]
    assert all(
        isinstance(c.args[0], Call) and intrinsics.ADDRESS_OF.matches(c.args[0]) for c in calls
    )
    with pytest.raises(ValueError, match=r"T.cuda.copy_bytes moves 1, 2, 4, 8 or 16 bytes, got 3"):
        T.cuda.copy_bytes(calls[0].args[0], calls[0].args[1], 3)


def test_layout_size_must_match_the_shape():
    with pytest.raises(ParseError, match=r"layout S\[16 : 1\] indexes 16 elements but shape "
                       r"\[32, 32\] has 1024"):  # fmt: skip

        @T.prim_func
        def bad(A: T.Buffer((32, 32), "float32")):
            X = T.alloc_buffer((32, 32), scope="shared", layout=TileLayout(S[16]))
            A[0, 0] = X[0, 0]


def test_scope_id_names_must_match_extents():
    with pytest.raises(ParseError, match=r"T.cta_id with 1 extents binds 1 names"):

        @T.prim_func
        def bad(A: T.Buffer((32,), "float32")):
            T.device_entry()
            bx, by = T.cta_id([4])
            A[bx + by] = 0.0


def test_copy_operands_must_be_regions():
    with pytest.raises(ParseError, match=r"Tx.warp.copy: src must be a buffer region"):

        @T.prim_func
        def bad(A: T.Buffer((32,), "float32")):
            Tx.warp.copy(A[0:32], 3)


def test_unknown_exec_scope():
    with pytest.raises(ValueError, match=r"unknown execution scope 'grid'"):
        TileOp("copy", "grid", ())


def test_lane_id_spans_a_warp():
    @T.prim_func
    def bad(A: T.Buffer((32,), "float32")):
        T.device_entry()
        T.lane_id([16])
        Tx.warp.fill(A[0:32], 0.0)

    with pytest.raises(TIRxError, match=r"T.lane_id spans a warp: \[32\], got \[16\]"):
        LowerTIRx("cuda")(bad)


def test_tile_op_outside_a_kernel():
    @T.prim_func
    def bad(A: T.Buffer((32,), "float32")):
        Tx.warp.fill(A[0:32], 0.0)

    with pytest.raises(TIRxError, match=r"Tx.warp.fill is only allowed after T.device_entry\(\)"):
        LowerTIRx("cuda")(bad)


def test_warps_and_threads_must_agree():
    @T.prim_func
    def bad(A: T.Buffer((32,), "float32")):
        T.device_entry()
        T.warp_id([2])
        T.thread_id([32])
        Tx.cta.fill(A[0:32], 0.0)

    with pytest.raises(TIRxError, match=r"T.warp_id\(\[2\]\) and T.thread_id\(\[32\]\) disagree"):
        LowerTIRx("cuda")(bad)
