"""Dispatch of ``Tx.<scope>.gemm``: the ``wgmma`` variant's decisions and each reason it
declines (scope, layouts, dtypes, memory, shapes, target), and the warpgroup scope id."""

from __future__ import annotations

import pytest
from gemm_kernels import gemm_kernel, interleaved, swizzled

from tilewright.ir import For, LetStmt, assert_structural_equal, decl_buffer, post_order_visit
from tilewright.layout import ComposeLayout, S, SwizzleLayout, TileLayout
from tilewright.script import from_source
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx
from tilewright.tirx import DispatchError
from tilewright.tirx.transform import LowerTIRx
from tilewright.tirx.transform.lower_tirx import TIRxError


def decide(kernel, target="cuda"):
    lower = LowerTIRx(target)
    lower(kernel)
    (decision,) = lower.decisions
    return decision


@pytest.mark.parametrize(
    ("kwargs", "notes"),
    [
        ({}, {"m": 64, "n": 128, "k": 64, "k_steps": 4, "m_blocks": 1, "swizzle_a": 128}),
        ({"m": 128, "n": 256, "k": 32}, {"k_steps": 2, "m_blocks": 2, "n": 256}),
        ({"n": 8, "k": 16}, {"k_steps": 1, "n": 8}),
        ({"a_layout": swizzled(64, 64, 64)}, {"swizzle_a": 64, "k_steps": 4}),
        ({"a_layout": swizzled(64, 64, 32)}, {"swizzle_a": 32}),
        ({"a_layout": interleaved(64, 64)}, {"swizzle_a": 0}),
        ({"dtype": "bfloat16"}, {"k_steps": 4}),
        ({"op": "gemm_async"}, {"k_steps": 4}),
        ({"threads": 256}, {"m_blocks": 1}),
    ],
)
def test_wgmma_accepts(kwargs, notes):
    decision = decide(gemm_kernel(**kwargs))
    assert decision.variant == "wgmma"
    assert {key: decision.notes[key] for key in notes} == notes


def test_the_h200_tag_and_sm_90a_are_accepted():
    for target in ("nvidia/h200", "cuda -arch=sm_90a"):
        assert decide(gemm_kernel(), target).variant == "wgmma"


# (kwargs, target, the reason's text)
REFUSALS = [
    ({"scope": "cta"}, "cuda", "wgmma runs on a warpgroup (Tx.warpgroup / Tx.wg), not the cta"),
    ({"scope": "warp"}, "cuda", "not the warp scope"),
    ({"narrow": True}, "cuda", "narrowed by the enclosing `if tid < 64`"),
    ({"threads": 64}, "cuda", "needs 128 threads but the CTA has 64"),
    ({}, "cuda -arch=sm_80", "target arch sm_80 has no wgmma (needs sm_90a)"),
    ({}, "c", "does not spell tw.cuda.wgmma_mma_async"),
    ({"transB": True}, "cuda", "transB=True (B MN-major) is not supported yet"),
    ({"dtype": "float32"}, "cuda", "must both be float16 or bfloat16, got float32"),
    ({"c_dtype": "float16"}, "cuda", "C acc must be a float32 accumulator, got float16"),
    ({"c_scope": "shared.dyn", "c_layout": None}, "cuda", "wgmma accumulates in registers"),
    (
        {"a_scope": "global"},
        "cuda",
        "A As is in 'global' memory; wgmma reads A from shared memory or registers",
    ),
    ({"c_layout": None}, "cuda", "is not the wgmma m64nNk16 fragment layout"),
    (
        {"c_layout": TileLayout(S[(64, 128) : (1, 64)])},
        "cuda",
        "T.wgmma_accumulator_layout(64, 128)",
    ),
    (
        {"m": 32, "c_layout": None, "a_layout": swizzled(32, 64)},
        "cuda",
        "M = 32 is not a multiple of 64 (wgmma blocks are m64)",
    ),
    ({"k": 8, "a_layout": TileLayout(S[64, 8])}, "cuda", "K = 8 is not a multiple of 16"),
    ({"c_shape": (64, 64)}, "cuda", "shapes do not match: C is 64 x 64, A 64 x 64, B 128 x 64"),
    (
        {"a_layout": TileLayout(S[64, 64])},
        "cuda",
        "puts consecutive rows 64 elements apart; wgmma needs 8 (one 16-byte core-matrix row",
    ),
    (
        {
            "a_layout": ComposeLayout(
                SwizzleLayout.from_bytes(128, 16), TileLayout(S[(64, 64) : (1, 64)])
            )
        },
        "cuda",
        "not K-major: k has stride 64",
    ),
    (
        {"a_layout": ComposeLayout(SwizzleLayout(2, 3, 3), TileLayout(S[64, 64]))},
        "cuda",
        "is not a 32/64/128-byte shared-memory swizzle of float16",
    ),
    (
        {"a_layout": ComposeLayout(SwizzleLayout.from_bytes(64, 16), TileLayout(S[64, 64]))},
        "cuda",
        "consecutive rows 64 elements apart; wgmma needs 32 (one swizzle row, 64 bytes)",
    ),
    ({"align": 128}, "cuda", "declare the buffer with align=1024 (it has 128)"),
    ({"a_scope": "shared"}, "cuda", "use scope='shared.dyn'"),
    (
        {"m": 128, "a_rows": (4, 68), "c_shape": (64, 128)},
        "cuda",
        "the region starts at element 256, not on a 1024-byte atom boundary",
    ),
]


@pytest.mark.parametrize(("kwargs", "target", "reason"), REFUSALS)
def test_wgmma_declines_with_a_reason(kwargs, target, reason):
    with pytest.raises(DispatchError) as info:
        LowerTIRx(target)(gemm_kernel(**kwargs))
    message = str(info.value)
    assert "no variant applies" in message and "  wgmma: " in message
    assert reason in message, message


def test_forced_and_unknown_variants():
    with pytest.raises(DispatchError, match=r"dispatch='wgmma' does not apply: .*warpgroup"):
        LowerTIRx("cuda")(gemm_kernel(scope="cta", op="gemm").with_body(_forced("wgmma")))
    with pytest.raises(DispatchError, match="no variant named 'mma'; variants are wgmma"):
        LowerTIRx("cuda")(gemm_kernel().with_body(_forced("mma")))


def _forced(name):
    kernel = gemm_kernel(scope="cta")
    text = kernel.script().replace("accum=T.bool(True))", f'accum=T.bool(True), dispatch="{name}")')
    return from_source(text).body


def test_gemm_prints_and_parses_back():
    kernel = gemm_kernel(accum=False, transB=True)
    text = kernel.script()
    assert (
        "Tx.warpgroup.gemm(acc[0:64, 0:128], As[0:64, 0:64], Bs[0:128, 0:64], "
        "accum=T.bool(False), transB=True)" in text
    )
    assert_structural_equal(from_source(text), kernel)


def test_gemm_arguments_are_checked_in_the_script():
    with pytest.raises(TypeError, match=r"Tx\.warpgroup\.gemm: C must be a buffer region"):
        Tx.wg.gemm(1, None, None)
    buf = decl_buffer((64, 64), "float16")
    with pytest.raises(TypeError, match="transA must be True or False"):
        Tx.wg.gemm(buf, buf, buf, transA="yes")
    with pytest.raises(TypeError, match="accum must be a bool or a boolean expression"):
        Tx.wg.gemm_async(buf, buf, buf, accum="yes")
    with pytest.raises(ValueError, match="wgmma_wait_group takes a constant 0 to 7"):
        T.cuda.wgmma_wait_group(8)


def test_warpgroup_id_binds_threadidx_over_128():
    lowered = LowerTIRx("cuda")(_warpgroup_kernel())["main"]
    lets, loops = [], []
    post_order_visit(lowered.body, lambda n: lets.append(n) if isinstance(n, LetStmt) else None)
    post_order_visit(lowered.body, lambda n: loops.append(n) if isinstance(n, For) else None)
    (wg,) = [let for let in lets if let.var.name == "wg"]
    tx = next(f.loop_var for f in loops if f.thread_tag == "threadIdx.x")
    assert_structural_equal(wg.value, tx // 128)
    assert {f.thread_tag: f.extent.value for f in loops}["threadIdx.x"] == 256


def _warpgroup_kernel(threads=None):
    @T.prim_func
    def main(A: T.Buffer((256,), "float32")):
        T.device_entry()
        T.cta_id([1])
        wg = T.warpgroup_id([2])
        if threads is not None:
            T.thread_id([threads])
        A[wg] = T.float32(1)

    return main


def test_warpgroups_and_threads_must_agree():
    with pytest.raises(TIRxError, match=r"T.warpgroup_id\(\[2\]\) and T.thread_id\(\[128\]\)"):
        LowerTIRx("cuda")(_warpgroup_kernel(128))
    LowerTIRx("cuda")(_warpgroup_kernel(256))


def test_a_condition_on_the_warpgroup_keeps_warpgroup_ops_whole():
    kernel = gemm_kernel(threads=256)
    text = kernel.script().replace("tid = T.thread_id([256])", "wg = T.warpgroup_id([2])")
    text = text.replace("    Tx.warpgroup.gemm", "    if wg == 1:\n        Tx.warpgroup.gemm")
    lower = LowerTIRx("cuda")
    lower(from_source(text))
    assert [d.variant for d in lower.decisions] == ["wgmma"]
