"""lower_warp_memory: warp buffers become each lane's local registers, checked as expected
scripts on hand-written placed (N-d, block-free) programs, on the evaluator against the
program before the pass, through the CUDA stage list; and what it refuses, with its message."""

# ruff: noqa: E501 - expected scripts keep one statement per line

from __future__ import annotations

import numpy as np
import pytest
from evaluator import run, run_kernel

import tilewright as tw
from tilewright.backend import lowering_stages
from tilewright.ir import Allocate, PrimFunc, assert_structural_equal, post_order_visit
from tilewright.meta_schedule.testing.tensor_core import mma_matmul, schedule_mma
from tilewright.schedule import Schedule
from tilewright.script import from_source
from tilewright.script import tir as T
from tilewright.transform.lower_warp_memory import WarpMemoryError, lower_warp_memory

HEADER = "from tilewright.script import tir as T\n"


def _parse(text: str) -> PrimFunc:
    return from_source(HEADER + text)  # type: ignore[return-value]


def _scopes(func: PrimFunc) -> dict[str, tuple[str, tuple[int, ...]]]:
    found = {}

    def visit(node: object) -> None:
        if isinstance(node, Allocate):
            found[node.buffer.name] = (node.buffer.scope, tuple(int(s) for s in node.buffer.shape))

    post_order_visit(func.body, visit)
    return found


# -- plain accesses at the thread's own lane ---------------------------------------------------

# Each lane writes and reads its own row of W.
PER_LANE = """
@T.prim_func
def main(A: T.Buffer((2, 32, 8), "float32"), B: T.Buffer((2, 32, 8), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        W = T.decl_buffer((2, 32, 8), "float32", scope="warp")
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            for i, r in T.grid(2, 8):
                W[i, tx, r] = A[i, tx, r] * T.float32(2)
            for i, r in T.grid(2, 8):
                B[i, tx, 7 - r] = W[i, tx, r] + T.float32(1)
"""

PER_LANE_LOWERED = """
@T.prim_func
def main(A: T.Buffer((2, 32, 8), "float32"), B: T.Buffer((2, 32, 8), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        W = T.decl_buffer((2, 8), "float32", scope="local")
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            for i, r in T.grid(2, 8):
                W[i, r] = A[i, tx, r] * T.float32(2)
            for i, r in T.grid(2, 8):
                B[i, tx, 7 - r] = W[i, r] + T.float32(1)
"""


def test_a_warp_buffer_becomes_each_lanes_registers() -> None:
    lowered = lower_warp_memory(_parse(PER_LANE))
    assert _scopes(lowered) == {"W": ("local", (2, 8))}
    assert_structural_equal(lowered, _parse(PER_LANE_LOWERED))


def test_the_lowered_kernel_computes_what_the_warp_program_does() -> None:
    before = _parse(PER_LANE)
    a = np.random.default_rng(0).standard_normal((2, 32, 8)).astype("float32")
    want = run(before, a, np.zeros_like(a))[1]  # thread loops in order: W one shared array
    got = run_kernel(lower_warp_memory(before), a, np.zeros_like(a)).arrays[1]  # W per thread
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, (a * 2 + 1)[:, :, ::-1], rtol=1e-6)


def test_a_lane_index_proven_equal_to_threadIdx_x_is_the_own_lane() -> None:
    text = PER_LANE.replace("W[i, tx, r] = A", "W[i, tx % 32, r] = A")
    assert_structural_equal(lower_warp_memory(_parse(text)), _parse(PER_LANE_LOWERED))


def test_a_function_without_warp_buffers_is_returned_as_is() -> None:
    func = _parse(PER_LANE.replace('scope="warp"', 'scope="shared"'))
    assert lower_warp_memory(func) is func


# -- tensor-core intrinsics' fragment operands -------------------------------------------------


def _region(buffer: str, first: str, last: str, what: str = "data") -> str:
    dtype = "handle" if what == "data" else "int32"
    return f'T.call_intrin("{dtype}", "tw.region_{what}", {buffer}[{first}], {buffer}[{last}])'


def _fragments(fill_offset: str = "", load_lane: str = "tx", lanes: str = "31") -> str:
    """A fill, two ldmatrix loads into ``Aw[i]`` and an mma, as tensorize and the lowering of
    match buffers leave them."""
    aw = lambda what: _region("Aw", "i, 0, 0", f"i, {lanes}, 7", what)
    cw = lambda what: _region("Cw", "0, 0", "31, 7", what)
    return f"""
@T.prim_func
def main(S: T.Buffer((2, 16, 16), "float16")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        Aw = T.decl_buffer((2, 32, 8), "float16", scope="warp")
        Cw = T.decl_buffer((32, 8), "float32", scope="warp")
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            T.evaluate(T.call_intrin("float32", "mma_fill", 8, {cw("data")}, {cw("offset")}{fill_offset}))
        for i in range(2):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                T.evaluate(T.call_intrin("float16", "ptx_ldmatrix", T.bool(False), 4, ".b16", {aw("data")}, {aw("offset")} + 8 * {load_lane}, T.call_intrin("handle", "tvm_access_ptr", S.data, i * 256, 256, 1), 16 * (tx % 16) + 8 * (tx // 16)))
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            T.evaluate(T.call_intrin("float32", "ptx_mma", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", {_region("Aw", "0, 0, 0", "0, 31, 7")}, {_region("Aw", "0, 0, 0", "0, 31, 7", "offset")} + tx * 8, {_region("Aw", "1, 0, 0", "1, 31, 7")}, {_region("Aw", "1, 0, 0", "1, 31, 7", "offset")} + tx * 8 + 4, {cw("data")}, {cw("offset")} + tx * 8 + 4, T.bool(False)))
"""


FRAGMENTS_LOWERED = f"""
@T.prim_func
def main(S: T.Buffer((2, 16, 16), "float16")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        Aw = T.decl_buffer((2, 8), "float16", scope="local")
        Cw = T.decl_buffer((8,), "float32", scope="local")
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            T.evaluate(T.call_intrin("float32", "mma_fill", 8, {_region("Cw", "0", "7")}, {_region("Cw", "0", "7", "offset")} + 0))
        for i in range(2):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                T.evaluate(T.call_intrin("float16", "ptx_ldmatrix", T.bool(False), 4, ".b16", {_region("Aw", "i, 0", "i, 7")}, {_region("Aw", "i, 0", "i, 7", "offset")} + 0, T.call_intrin("handle", "tvm_access_ptr", S.data, i * 256, 256, 1), 16 * (tx % 16) + 8 * (tx // 16)))
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            T.evaluate(T.call_intrin("float32", "ptx_mma", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", {_region("Aw", "0, 0", "0, 7")}, {_region("Aw", "0, 0", "0, 7", "offset")} + 0, {_region("Aw", "1, 0", "1, 7")}, {_region("Aw", "1, 0", "1, 7", "offset")} + 4, {_region("Cw", "0", "7")}, {_region("Cw", "0", "7", "offset")} + 4, T.bool(False)))
"""


def test_fragment_operands_drop_the_lanes() -> None:
    lowered = lower_warp_memory(_parse(_fragments()))
    assert _scopes(lowered) == {"Aw": ("local", (2, 8)), "Cw": ("local", (8,))}
    assert_structural_equal(lowered, _parse(FRAGMENTS_LOWERED))


def test_the_mma_schedule_lowers_its_warp_buffers_in_the_cuda_stages() -> None:
    names = [s.name for s in lowering_stages("cuda")]
    assert names.index("apply_storage_align") < names.index("lower_warp_memory")
    assert names.index("lower_warp_memory") + 1 == names.index("flatten_buffers")
    sch = schedule_mma(
        Schedule(mma_matmul(32, 32, 32)),
        warps_m=1,
        warps_n=1,
        frags_m=2,
        frags_n=2,
        k_frags=1,
        stages=1,
    )
    func = sch.mod["main"]
    seen = {}
    for stage in lowering_stages("cuda"):
        if stage.name == "lower_warp_memory":
            seen["before"], func = _scopes(func), stage.run(func)
            seen["after"] = _scopes(func)
            break
        func = stage.run(func)
    assert seen["before"]["C_warp"] == ("warp", (2, 2, 32, 8))
    assert seen["after"]["C_warp"] == ("local", (2, 2, 8))
    assert {s for name, (s, _) in seen["after"].items() if name.endswith("_warp")} == {"local"}


# -- what it refuses --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, dims, index",
    [
        ("(2, 16, 8)", "2, 16, 8", "i, 0, r"),
        ("(2, 8, 32)", "2, 8, 32", "i, r, tx"),
        ("(256,)", "256", "tx"),
    ],
)
def test_a_warp_buffer_not_in_lanes_and_registers_is_refused(
    shape: str, dims: str, index: str
) -> None:
    text = PER_LANE.replace(
        'T.decl_buffer((2, 32, 8), "float32", scope="warp")',
        f'T.decl_buffer({shape}, "float32", scope="warp")',
    )
    text = text.replace("W[i, tx, r]", f"W[{index}]")
    with pytest.raises(
        WarpMemoryError,
        match=rf"^main: warp buffer W has shape \({dims}\); its last two dimensions must be the 32 lanes and each lane's registers \(store it in a fragment layout with transform_layout\)",
    ):
        lower_warp_memory(_parse(text))


def test_a_symbolic_register_count_is_refused() -> None:
    text = PER_LANE.replace("A: T.Buffer", "n: T.int32, A: T.Buffer")
    text = text.replace(
        'T.decl_buffer((2, 32, 8), "float32"', 'T.decl_buffer((2, 32, n), "float32"'
    )
    with pytest.raises(WarpMemoryError, match=r"warp buffer W has shape \(2, 32, n\)"):
        lower_warp_memory(_parse(text))


@pytest.mark.parametrize(
    "old, new, what, lane",
    [
        ("B[i, tx, 7 - r] = W[i, tx, r]", "B[i, tx, 7 - r] = W[i, (tx + 1) % 32, r]", "a load", r"\(tx \+ 1\) % 32"),
        ("W[i, tx, r] = A", "W[i, 0, r] = A", "a store", "0"),
        ("W[i, tx, r] = A", "W[i, 31 - tx, r] = A", "a store", "31 - tx"),
    ],
)  # fmt: skip
def test_an_access_at_another_lane_is_refused(old: str, new: str, what: str, lane: str) -> None:
    with pytest.raises(
        WarpMemoryError,
        match=rf"^main: {what} of warp buffer W at lane {lane}, which is not the thread's own lane \(threadIdx.x\)",
    ):
        lower_warp_memory(_parse(PER_LANE.replace(old, new)))


def test_an_access_outside_any_threadIdx_x_loop_is_refused() -> None:
    text = PER_LANE.replace("B[i, tx, 7 - r] = W[i, tx, r]", "B[i, tx, 7 - r] = A[i, tx, r]")
    text = text.replace(
        '        for tx in T.thread_binding(32, thread="threadIdx.x"):\n            for i, r in T.grid(2, 8):\n                W',
        "        for tx in range(32):\n            for i, r in T.grid(2, 8):\n                W",
    )
    with pytest.raises(
        WarpMemoryError,
        match=r"a store of warp buffer W at lane tx, which is not the thread's own lane",
    ):
        lower_warp_memory(_parse(text))


@pytest.mark.parametrize("extent", [16, 64])
def test_threadIdx_x_over_other_than_32_lanes_is_refused(extent: int) -> None:
    text = PER_LANE.replace("T.thread_binding(32, thread=", f"T.thread_binding({extent}, thread=")
    with pytest.raises(
        WarpMemoryError,
        match=rf"^main: warp buffers need threadIdx.x to run over the 32 lanes of a warp; loop tx binds it to {extent} threads",
    ):
        lower_warp_memory(_parse(text))


def test_fragment_operands_that_do_not_fit_are_refused() -> None:
    with pytest.raises(
        WarpMemoryError,
        match=r"^main: .*mma_fill takes the start of a fragment of warp buffer Cw, not an offset tx \* 8 into it",
    ):
        lower_warp_memory(_parse(_fragments(fill_offset=" + tx * 8")))
    with pytest.raises(
        WarpMemoryError,
        match=r"^main: .*ptx_ldmatrix addresses the registers of lane \(tx \+ 1\) % 32 of warp buffer Aw, not the calling thread's \(threadIdx.x\)",
    ):
        lower_warp_memory(_parse(_fragments(load_lane="((tx + 1) % 32)")))
    with pytest.raises(
        WarpMemoryError,
        match=r"^main: .*ptx_ldmatrix takes a fragment of warp buffer Aw that does not span the 32 lanes \(lanes 0 to 15\)",
    ):
        lower_warp_memory(_parse(_fragments(lanes="15")))


def test_a_fragment_handed_to_another_call_is_refused() -> None:
    text = _fragments().replace('"float32", "mma_fill", 8,', '"int32", "my_fill", 8,')
    text = text.replace('T.call_intrin("int32", "my_fill"', 'T.call_extern("int32", "my_fill"')
    with pytest.raises(
        WarpMemoryError,
        match=r"^main: warp buffer Cw is handed to something other than a tensor-core intrinsic's fragment operand",
    ):
        lower_warp_memory(_parse(text))


def test_tw_lower_names_the_stage_of_the_refusal() -> None:
    @T.prim_func
    def shifted(A: T.Buffer((32, 8), "float32"), B: T.Buffer((32, 8), "float32")):
        W = T.alloc_buffer((32, 8), "float32", scope="warp")
        for _bx in T.thread_binding(1, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                for r in range(8):
                    with T.block("W"):
                        vt, vr = T.axis.remap("SS", [tx, r])
                        W[vt, vr] = A[vt, vr]
                for r in range(8):
                    with T.block("B"):
                        vt, vr = T.axis.remap("SS", [tx, r])
                        B[vt, vr] = W[(vt + 1) % 32, vr]

    with pytest.raises(
        WarpMemoryError, match=r"a load of warp buffer W at lane \(tx \+ 1\) % 32"
    ) as info:
        tw.lower(shifted, "cuda")
    assert "while building 'main', stage lower_warp_memory" in str(
        getattr(info.value, "__notes__", [])
    )
