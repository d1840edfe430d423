"""Tensor cores: blockize moving a reduction's init out to the outer block (TVM's), the mma
intrinsics of ``tilewright.tir.tensor_intrin.cuda`` (registered, parsed, grouped), tensorize
with them in the hand GEMM schedule (trace replay, CUDA text, NVRTC for sm_80 and sm_90), what
tensorize refuses, and the tensorized kernels computing ``A @ B`` on the lockstep evaluator
(and, gpu-marked, on a GPU)."""

# ruff: noqa: E501 - expected scripts keep one statement per line

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from evaluator import run_module
from schedule_checks import check_refused, check_schedule
from schedule_corpus import matmul

import tilewright as tw
from tilewright import config
from tilewright.codegen import codegen_cuda
from tilewright.ir import Allocate, Buffer, PrimFunc, assert_structural_equal, post_order_visit
from tilewright.meta_schedule.testing.tensor_core import fragment_layout, mma_matmul, schedule_mma
from tilewright.runtime.cuda_runtime import device_count
from tilewright.runtime.cuda_runtime.nvrtc import compile_cuda, nvrtc_version
from tilewright.schedule import BlockRV, LoopRV, Schedule
from tilewright.script import tir as T
from tilewright.tir import TensorIntrin
from tilewright.tir.tensor_intrin import cuda

needs_nvrtc = pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC is not installed")
needs_gpu = pytest.mark.skipif(device_count() == 0, reason="needs a CUDA GPU")


@pytest.fixture(autouse=True)
def _kernel_cache(tmp_path_factory):
    # Compiled kernels go to a per-session directory, not the user's cache.
    with config.scope(cache_dir=tmp_path_factory.getbasetemp() / "kernel-cache"):
        yield


# -- blockize of a reduction whose outer block reduces ---------------------------------------


@T.prim_func
def matmul_reduction_blockized(
    A: T.Buffer((8, 10), "float32"),
    B: T.Buffer((10, 12), "float32"),
    C: T.Buffer((8, 12), "float32"),
):
    for i_0, j_0, k_0 in T.grid(2, 3, 2):
        with T.block("C_o"):
            vi_o, vj_o, vk_o = T.axis.remap("SSR", [i_0, j_0, k_0])
            T.reads(
                A[vi_o * 4 : vi_o * 4 + 4, vk_o * 5 : vk_o * 5 + 5],
                B[vk_o * 5 : vk_o * 5 + 5, vj_o * 4 : vj_o * 4 + 4],
            )
            T.writes(C[vi_o * 4 : vi_o * 4 + 4, vj_o * 4 : vj_o * 4 + 4])
            with T.init():
                for i_1, j_1 in T.grid(4, 4):
                    with T.block("C_init"):
                        vi_i_init, vj_i_init = T.axis.remap("SS", [i_1, j_1])
                        T.reads()
                        T.writes(C[vi_o * 4 + vi_i_init, vj_o * 4 + vj_i_init])
                        C[vi_o * 4 + vi_i_init, vj_o * 4 + vj_i_init] = T.float32(0)
            for i_1, j_1, k_1 in T.grid(4, 4, 5):
                with T.block("C"):
                    vi_i, vj_i, vk_i = T.axis.remap("SSR", [i_1, j_1, k_1])
                    # An outer iterator reduces: the inner block also reads what it writes.
                    T.reads(
                        C[vi_o * 4 + vi_i, vj_o * 4 + vj_i],
                        A[vi_o * 4 + vi_i, vk_o * 5 + vk_i],
                        B[vk_o * 5 + vk_i, vj_o * 4 + vj_i],
                    )
                    T.writes(C[vi_o * 4 + vi_i, vj_o * 4 + vj_i])
                    C[vi_o * 4 + vi_i, vj_o * 4 + vj_i] = (
                        C[vi_o * 4 + vi_i, vj_o * 4 + vj_i]
                        + A[vi_o * 4 + vi_i, vk_o * 5 + vk_i] * B[vk_o * 5 + vk_i, vj_o * 4 + vj_i]
                    )


def _tiled_matmul(k_factor: int | None) -> tuple[Schedule, LoopRV]:
    """The corpus matmul tiled 4 x 4 (x ``k_factor`` when given), ready to blockize at i_1."""
    sch = Schedule(matmul)
    i, j, k = sch.get_loops("C")
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 4])
    if k_factor is None:
        sch.reorder(i0, j0, i1, j1)
    else:
        k0, k1 = sch.split(k, [None, k_factor])
        sch.reorder(i0, j0, k0, i1, j1, k1)
    return sch, i1


def test_blockize_moves_the_init_to_an_outer_block_that_reduces() -> None:
    sch, i1 = _tiled_matmul(5)
    outer = sch.blockize(i1)
    assert sch.get(outer).name == "C_o"
    assert sch.get(sch.get_block("C")).init is None
    check_schedule(sch, matmul, matmul_reduction_blockized)


def test_the_moved_init_computes_what_the_original_computes_in_c() -> None:
    sch, i1 = _tiled_matmul(5)
    sch.blockize(i1)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 10)).astype("float32")
    b = rng.standard_normal((10, 12)).astype("float32")
    results = []
    for mod in (matmul, sch.mod):
        c = np.full((8, 12), np.nan, "float32")  # the init must overwrite every element
        tw.build(mod, target="c")["main"](a, b, c)
        results.append(c)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(results[1], a @ b, rtol=1e-5, atol=1e-5)


def test_blockize_with_the_whole_reduction_inside_moves_the_init_out_too() -> None:
    # TVM's: the outer block always takes the init (here it reduces over vk_o, of extent 1).
    sch, i1 = _tiled_matmul(None)
    outer = sch.blockize(i1)
    assert sch.get(outer).init is not None
    assert sch.get(sch.get_block("C")).init is None
    assert "vk_o = T.axis.reduce(1, 0)" in sch.mod.script()
    check_schedule(sch, matmul)


# -- the registered intrinsics ---------------------------------------------------------------


def test_the_intrinsic_set_is_tvms() -> None:
    names = set(cuda.INTRIN_NAMES.values())
    assert len(names) == 36
    for dtype in ("f16", "bf16"):
        for operand in ("a", "b"):
            for suffix in ("", "_trans", "_dyn", "_trans_dyn"):
                assert f"mma_ldmatrix_{dtype}_{operand}{suffix}" in names
    for compute in ("f16f16f32", "f16f16f16", "bf16bf16f32"):
        for suffix in ("", "_trans_a", "_trans_b", "_trans_a_trans_b"):
            assert f"mma_{compute}{suffix}" in names
    for out in ("f32", "f16"):
        assert f"mma_fill_16x16_{out}" in names
        for where in ("global", "shared", "shared_dyn"):
            assert f"mma_store_16x16_{out}_{where}_" in names
    assert cuda.LDMATRIX_f16_A_INTRIN == "mma_ldmatrix_f16_a"
    assert cuda.LDMATRIX_bf16_B_TRANS_DYN_INTRIN == "mma_ldmatrix_bf16_b_trans_dyn"
    assert cuda.MMA_f16f16f32_TRANS_B_INTRIN == "mma_f16f16f32_trans_b"
    assert cuda.MMA_fill_16x16_f16_INTRIN == "mma_fill_16x16_f16"
    assert cuda.MMA_store_16x16_f32_shared_dyn_INTRIN == "mma_store_16x16_f32_shared_dyn_"


@pytest.mark.parametrize("name", sorted(cuda.INTRIN_NAMES.values()))
def test_every_intrinsic_is_registered_and_its_functions_parse_back(name: str) -> None:
    intrin = TensorIntrin.get(name)
    assert intrin is not None and intrin.name == name
    for func in (intrin.desc, intrin.impl):
        assert_structural_equal(tw.script.from_source(func.script()), func)
    warp = [b for b in intrin.desc_buffers if b.scope == "warp"]
    assert warp and all([int(s) for s in b.shape] == [32, 8] for b in warp)
    assert [b.scope for b in intrin.desc_buffers] == [b.scope for b in intrin.impl_buffers]


def test_the_fragment_layout_is_ptxs_and_a_bijection() -> None:
    layout = cuda.shared_16x16_to_ldmatrix_32x8_layout
    inverse = cuda.ldmatrix_32x8_to_shared_16x16_layout
    seen = set()
    for row in range(16):
        for col in range(16):
            lane, register = layout(row, col)
            # PTX ISA, mma.m16n8k16 with .f16 A: a_i of lane (group g = lane / 4, t = lane % 4)
            # is row g (+8 for i in 2, 3, 6, 7), column 2 * t + i % 2 (+8 for i >= 4); the
            # accumulator's two 16x8 halves take registers 0-3 and 4-7 the same way.
            assert row == lane // 4 + 8 * (register % 4 // 2)
            assert col == 2 * (lane % 4) + register % 2 + 8 * (register // 4)
            assert inverse(lane, register) == (row, col)
            seen.add((lane, register))
    assert len(seen) == 256


def test_get_mma_intrin_group() -> None:
    group = cuda.get_mma_intrin_group("shared", "global", "float16", "float32", False, False)
    assert group == {
        "init": "mma_fill_16x16_f32",
        "load_a": "mma_ldmatrix_f16_a",
        "load_b": "mma_ldmatrix_f16_b",
        "compute": "mma_f16f16f32",
        "store": "mma_store_16x16_f32_global_",
    }
    group = cuda.get_mma_intrin_group(
        "shared.dyn", "shared.dyn", "bfloat16", "float32", False, True
    )
    assert group == {
        "init": "mma_fill_16x16_f32",
        "load_a": "mma_ldmatrix_bf16_a_dyn",
        "load_b": "mma_ldmatrix_bf16_b_trans_dyn",
        "compute": "mma_bf16bf16f32_trans_b",
        "store": "mma_store_16x16_f32_shared_dyn_",
    }
    for load in ("shared", "shared.dyn"):
        for store in ("global", "shared", "shared.dyn"):
            for in_dtype, out_dtype in (
                ("float16", "float32"),
                ("float16", "float16"),
                ("bfloat16", "float32"),
            ):
                for trans_b in (False, True):
                    group = cuda.get_mma_intrin_group(
                        load, store, in_dtype, out_dtype, False, trans_b
                    )
                    for name in group.values():
                        assert TensorIntrin.get(name, allow_missing=True) is not None, name


@pytest.mark.parametrize(
    "args, match",
    [
        (("shared", "global", "float32", "float32", False, False), "no mma intrinsics for float32 inputs and float32"),
        (("shared", "global", "int8", "int32", False, False), "no mma intrinsics for int8 inputs and int32"),
        (("shared", "global", "bfloat16", "float16", False, False), "bfloat16 inputs accumulate in float32"),
        (("global", "global", "float16", "float32", False, False), "load_scope is shared or shared.dyn, not 'global'"),
        (("shared", "local", "float16", "float32", False, False), "store_scope is global, shared or shared.dyn, not 'local'"),
    ],
)  # fmt: skip
def test_get_mma_intrin_group_refuses(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        cuda.get_mma_intrin_group(*args)


# -- tensorize in the hand GEMM schedule ------------------------------------------------------

# (in dtype, out dtype, stages) -> the mma instruction the kernel must use.
VARIANTS = {
    ("float16", "float32", 1): "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    ("float16", "float32", 2): "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    ("bfloat16", "float32", 2): "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    ("float16", "float16", 2): "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
}


def _schedule_mma(
    in_dtype: str, out_dtype: str, stages: int, n: int = 32
) -> tuple[Schedule, PrimFunc]:
    original = mma_matmul(n, n, n, in_dtype, out_dtype)
    sch = Schedule(original)
    schedule_mma(
        sch, warps_m=1, warps_n=1, frags_m=2, frags_n=2, k_frags=1, stages=stages,
        in_dtype=in_dtype, out_dtype=out_dtype,
    )  # fmt: skip
    return sch, original


def _tensorized(sch: Schedule) -> list[str]:
    return [str(inst.attrs[0]) for inst in sch.trace if inst.kind == "tensorize"]


@pytest.mark.parametrize("in_dtype, out_dtype, stages", list(VARIANTS))
def test_schedule_mma_tensorizes_and_replays(in_dtype: str, out_dtype: str, stages: int) -> None:
    sch, original = _schedule_mma(in_dtype, out_dtype, stages)
    group = cuda.get_mma_intrin_group("shared", "global", in_dtype, out_dtype, False, False)
    assert sorted(_tensorized(sch)) == sorted(group.values())
    check_schedule(sch, original, numeric=False)  # numbers: on the lowered kernel below
    text = sch.mod.script()
    assert text.count("T.ptx_ldmatrix(") == 2 and text.count("T.ptx_mma(") == 2
    assert text.count("T.mma_fill(") == 1 and text.count("T.mma_store(") == 1


def _allocations(func: PrimFunc) -> list[Buffer]:
    found: list[Buffer] = []
    post_order_visit(
        func.body, lambda n: found.append(n.buffer) if isinstance(n, Allocate) else None
    )
    return found


@pytest.mark.parametrize("in_dtype, out_dtype, stages", list(VARIANTS))
def test_schedule_mma_cuda_source_and_nvrtc(in_dtype: str, out_dtype: str, stages: int) -> None:
    sch, _ = _schedule_mma(in_dtype, out_dtype, stages)
    lowered = tw.lower(sch.mod, "cuda")
    assert not any(b.scope == "warp" for _, f in lowered.items() for b in _allocations(f))
    text = codegen_cuda(lowered)
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in text  # A
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in text  # a row-major B
    assert VARIANTS[in_dtype, out_dtype, stages] in text
    assert ("cp.async.cg.shared.global" in text) == (stages > 1)
    if stages > 1:
        assert "cp.async.commit_group" in text and "cp.async.wait_group" in text
    if in_dtype == "bfloat16":
        assert "#include <cuda_bf16.h>" in text
    # The accumulator tiles are stored a pair of adjacent columns at a time (C's rows and
    # the tiles' offsets are even).
    pair = {"float32": "float2", "float16": "half2"}[out_dtype]
    assert f"for (int tw_p = 0; tw_p < 4; ++tw_p) *({pair}*)" in text
    assert "for (int tw_i = 0; tw_i < 8; ++tw_i) ((" not in text  # no element-wise store
    # Each intrinsic's own threadIdx.x binding is declared only where it is used.
    declared = re.findall(r"int (\w+) = \(int\)threadIdx\.x;", text)
    assert declared and all(
        re.search(rf"\b{name}\b[^;]*;", text.split(f"int {name} =")[1]) for name in declared
    )
    if nvrtc_version() is None:
        if config.get().ci:
            pytest.fail("NVRTC is not available to compile CUDA")
        pytest.skip("NVRTC is not installed")
    for arch in ("sm_80", "sm_90"):
        cubin = compile_cuda(text, arch, ["main_kernel"], "nvrtc")
        assert cubin[:4] == b"\x7fELF"


def _inputs(n: int, m: int, k: int, in_dtype: str, seed: int = 0) -> tuple[np.ndarray, ...]:
    np_dtype = ml_dtypes.bfloat16 if in_dtype == "bfloat16" else np.float16
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, k)).astype(np_dtype)
    return a, rng.standard_normal((k, m)).astype(np_dtype)


def _check_product(got: np.ndarray, a: np.ndarray, b: np.ndarray, out_dtype: str) -> None:
    want = a.astype("float64") @ b.astype("float64")
    # float16 accumulation rounds every partial sum; float32 only the sums' order differs
    tolerance = 1e-2 if out_dtype == "float16" else 1e-5
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got.astype("float64"), want, rtol=tolerance, atol=tolerance * scale)


@pytest.mark.parametrize("in_dtype, out_dtype, stages", list(VARIANTS))
def test_schedule_mma_computes_a_times_b_on_the_evaluator(
    in_dtype: str, out_dtype: str, stages: int
) -> None:
    sch, _ = _schedule_mma(in_dtype, out_dtype, stages)
    a, b = _inputs(32, 32, 32, in_dtype)
    c = np.full((32, 32), np.nan, out_dtype)  # mma_fill must zero every accumulator
    got = run_module(tw.lower(sch.mod, "cuda"), "main", a, b, c)[2]
    _check_product(got, a, b, out_dtype)


def test_grouped_block_order_numbers_tiles_down_a_group_of_rows_first() -> None:
    # 64 x 96 in 32 x 32 block tiles: 2 rows x 3 columns, numbered in groups of 2 rows.
    original = mma_matmul(64, 96, 32)
    sch = Schedule(original)
    schedule_mma(sch, warps_m=1, warps_n=1, frags_m=2, frags_n=2, k_frags=2, stages=2, group_rows=2)
    check_schedule(sch, original, numeric=False)  # trace replay; numbers below
    # The fused loop is (groups of rows, columns, rows of a group); one group here: block b
    # is tile (b % 2, b // 2), fragments of 16 rows and columns two a tile.
    text = sch.mod.script()
    fused = "i_0_0_0_j_0_0_i_0_0_1_fused"
    assert f'for {fused} in T.thread_binding(6, thread="blockIdx.x"):' in text
    assert f"vi_o = T.axis.spatial(4, {fused} % 2 * 2 + 0 + i_0_2_init)" in text
    assert f"vj_o = T.axis.spatial(6, {fused} // 2 * 2 + 0 + j_0_2_init)" in text
    a, b = _inputs(64, 96, 32, "float16")
    c = np.full((64, 96), np.nan, "float32")
    got = run_module(tw.lower(sch.mod, "cuda"), "main", a, b, c)[2]
    _check_product(got, a, b, "float32")


@needs_nvrtc
def test_build_artifact_of_the_mma_schedule_is_an_sm90_cubin() -> None:
    sch, _ = _schedule_mma("float16", "float32", 2)
    artifact = tw.build_artifact(sch.mod, target="nvidia/h200")
    assert artifact.arch == "sm_90" and artifact.binary[:4] == b"\x7fELF"
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in artifact.source


# -- one 16x16x16 tile, scheduled step by step ------------------------------------------------


def _one_tile(
    func: PrimFunc, *, a_scope: str | None = "shared", layout: bool = True
) -> tuple[Schedule, list[BlockRV]]:
    """One warp computing a 16x16 tile: A and B fetched to ``shared`` (A read from global when
    ``a_scope`` is None), the fragments cached in ``warp`` buffers (in the fragment layout when
    ``layout``); returns the schedule and the blocks (A load, B load, gemm, init, store)."""
    sch = Schedule(func)
    gemm = sch.get_block("C")
    i = sch.get_loops(gemm)[0]
    bx, i = sch.split(i, [1, 16])
    sch.bind(bx, "blockIdx.x")
    for index, scope in ((0, a_scope), (1, "shared")):
        if scope is not None:
            tile = sch.cache_read(gemm, index, scope)
            sch.compute_at(tile, bx)
            _, tx = sch.split(sch.fuse(*sch.get_loops(tile)[-2:]), [None, 32])
            sch.bind(tx, "threadIdx.x")
    loads = []
    for index in (0, 1):
        fragment = sch.cache_read(gemm, index, "warp")
        if len(sch.get_loops(fragment)) == 2:  # not yet under bx: A read from global
            sch.compute_at(fragment, bx)
        if layout:
            sch.transform_layout(fragment, ("write", 0), fragment_layout)
        loads.append(fragment)
    store = sch.cache_write(gemm, 0, "warp")
    sch.reverse_compute_at(store, bx)
    if layout:
        sch.transform_layout(store, ("read", 0), fragment_layout)
    init = sch.decompose_reduction(gemm, i)
    return sch, [*loads, gemm, init, store]


def _tensorize_all(sch: Schedule, blocks: list[BlockRV], group: dict[str, str]) -> None:
    load_a, load_b, gemm, init, store = blocks
    sch.tensorize(sch.get_loops(load_a)[-2], group["load_a"])
    sch.tensorize(sch.get_loops(load_b)[-2], group["load_b"])
    sch.tensorize(sch.get_loops(gemm)[-3], group["compute"])
    sch.tensorize(sch.get_loops(init)[-2], group["init"])
    sch.tensorize(sch.get_loops(store)[-2], group["store"])


@pytest.mark.parametrize(
    "func, trans_b", [(mma_matmul(16, 16, 16), False), (mma_matmul(16, 16, 16, trans_b=True), True)]
)
def test_one_tile_tensorizes_with_b_row_or_column_major(func: PrimFunc, trans_b: bool) -> None:
    sch, blocks = _one_tile(func)
    group = cuda.get_mma_intrin_group("shared", "global", "float16", "float32", False, trans_b)
    _tensorize_all(sch, blocks, group)
    check_schedule(sch, func, numeric=False)
    # Each tensorized block touches the regions the implementation's root block declares
    # (the first index is 0: as in TVM, an outer iterator of extent one, vi_o bound to the
    # blockIdx.x loop of extent one, is not in the inner block's indices).
    regions = {}
    for name in ("A_shared_warp_o", "C_init_o", "C_update_o", "C_warp_o"):
        block = sch.get(sch.get_block(name))
        regions[name] = ([str(r) for r in block.reads], [str(r) for r in block.writes])
    assert regions == {
        "A_shared_warp_o": (["A_shared[0:16, 0:16]"], ["A_shared_warp[0, 0, 0:32, 0:8]"]),
        "C_init_o": ([], ["C_warp[0, 0, 0:32, 0:8]"]),
        "C_update_o": (
            [
                "C_warp[0, 0, 0:32, 0:8]",
                "A_shared_warp[0, 0, 0:32, 0:8]",
                "B_shared_warp[0, 0, 0:32, 0:8]",
            ],
            ["C_warp[0, 0, 0:32, 0:8]"],
        ),
        "C_warp_o": (["C_warp[0, 0, 0:32, 0:8]"], ["C[0:16, 0:16]"]),
    }
    text = codegen_cuda(tw.lower(sch.mod, "cuda"))
    assert text.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 1 + trans_b
    assert text.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 1 - trans_b
    assert text.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 2


@pytest.mark.parametrize(
    "func, trans_a, trans_b",
    [
        (mma_matmul(16, 16, 16), False, False),
        (mma_matmul(16, 16, 16, trans_b=True), False, True),
        (mma_matmul(16, 16, 16, trans_a=True), True, False),
        (mma_matmul(16, 16, 16, trans_a=True, trans_b=True), True, True),
    ],
)
def test_one_tile_computes_a_times_b_on_the_evaluator(
    func: PrimFunc, trans_a: bool, trans_b: bool
) -> None:
    sch, blocks = _one_tile(func)
    group = cuda.get_mma_intrin_group("shared", "global", "float16", "float32", trans_a, trans_b)
    _tensorize_all(sch, blocks, group)
    check_schedule(sch, func, numeric=False)
    a, b = _inputs(16, 16, 16, "float16", seed=1)
    c = np.full((16, 16), np.nan, "float32")
    # trans_b stores B as n x k, trans_a A as k x m.
    a_stored = np.ascontiguousarray(a.T) if trans_a else a
    b_stored = np.ascontiguousarray(b.T) if trans_b else b
    got = run_module(tw.lower(sch.mod, "cuda"), "main", a_stored, b_stored, c)[2]
    _check_product(got, a, b, "float32")


# -- what tensorize refuses ---------------------------------------------------------------------


def test_a_load_outside_the_fragment_layout_is_refused() -> None:
    sch, blocks = _one_tile(mma_matmul(16, 16, 16), layout=False)
    load_a = sch.blockize(sch.get_loops(blocks[0])[-2])
    check_refused(
        sch,
        lambda: sch.tensorize(load_a, "mma_ldmatrix_f16_a"),
        r"block 'A_shared_warp_o' does not compute what tensor intrinsic 'mma_ldmatrix_f16_a' "
        r"describes: the region of A_shared_warp standing for desc's warp moves with loop "
        r"ax0, ax1 inside the block",
    )


def test_mma_on_other_dtypes_is_refused() -> None:
    sch, blocks = _one_tile(mma_matmul(16, 16, 16, "float32", "float32"))
    gemm = sch.blockize(sch.get_loops(blocks[2])[-3])
    # float32 inputs: no widening cast where desc has one
    check_refused(
        sch,
        lambda: sch.tensorize(gemm, "mma_f16f16f32"),
        r"block 'C_update_o' does not compute what tensor intrinsic 'mma_f16f16f32' "
        r"describes: A_shared_warp\[.*\] where desc has T\.Cast\(\"float32\"",
    )
    load_a = sch.blockize(sch.get_loops(blocks[0])[-2])
    check_refused(
        sch,
        lambda: sch.tensorize(load_a, "mma_ldmatrix_f16_a"),
        "buffer A_shared_warp is float32, desc's warp float16",
    )
    sch, blocks = _one_tile(mma_matmul(16, 16, 16, "float16", "float16"))
    gemm = sch.blockize(sch.get_loops(blocks[2])[-3])
    check_refused(
        sch,
        lambda: sch.tensorize(gemm, "mma_f16f16f32"),
        "buffer C_warp is float16, desc's C float32",
    )
    sch.tensorize(gemm, "mma_f16f16f16")  # the float16 accumulation matches


def test_mma_with_the_wrong_b_layout_is_refused() -> None:
    sch, blocks = _one_tile(mma_matmul(16, 16, 16, trans_b=True))
    gemm = sch.blockize(sch.get_loops(blocks[2])[-3])
    check_refused(
        sch, lambda: sch.tensorize(gemm, "mma_f16f16f32"), "does not compute what tensor intrinsic"
    )
    sch.tensorize(gemm, "mma_f16f16f32_trans_b")


def test_a_refused_tensorize_of_a_loop_changes_nothing() -> None:
    sch, blocks = _one_tile(mma_matmul(16, 16, 16), layout=False)
    loop = sch.get_loops(blocks[0])[-2]
    check_refused(sch, lambda: sch.tensorize(loop, "mma_ldmatrix_f16_a"), "moves with loop")


def test_ldmatrix_onto_a_global_buffer_is_refused() -> None:
    sch, blocks = _one_tile(mma_matmul(16, 16, 16), a_scope=None)
    load_a = sch.blockize(sch.get_loops(blocks[0])[-2])
    check_refused(sch, lambda: sch.tensorize(load_a, "mma_ldmatrix_f16_a"), "scope")


# -- on a GPU ---------------------------------------------------------------------------------


def _on_gpu(mod: tw.IRModule, a: np.ndarray, b: np.ndarray, out_dtype: str) -> np.ndarray:
    args = [tw.nd.array(x, tw.cuda(0)) for x in (a, b)]
    args.append(tw.nd.array(np.full((a.shape[0], b.shape[1]), np.nan, out_dtype), tw.cuda(0)))
    tw.build(mod, target="cuda")["main"](*args)
    return args[2].numpy()


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("in_dtype, out_dtype, stages", list(VARIANTS))
def test_schedule_mma_computes_a_times_b_on_the_gpu(
    in_dtype: str, out_dtype: str, stages: int
) -> None:
    sch, _ = _schedule_mma(in_dtype, out_dtype, stages, n=64)
    a, b = _inputs(64, 64, 64, in_dtype)
    _check_product(_on_gpu(sch.mod, a, b, out_dtype), a, b, out_dtype)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize(
    "func, trans_b", [(mma_matmul(16, 16, 16), False), (mma_matmul(16, 16, 16, trans_b=True), True)]
)
def test_one_tile_computes_a_times_b_on_the_gpu(func: PrimFunc, trans_b: bool) -> None:
    sch, blocks = _one_tile(func)
    group = cuda.get_mma_intrin_group("shared", "global", "float16", "float32", False, trans_b)
    _tensorize_all(sch, blocks, group)
    a, b = _inputs(16, 16, 16, "float16", seed=1)
    got = _on_gpu(sch.mod, a, np.ascontiguousarray(b.T) if trans_b else b, "float32")
    _check_product(got, a, b, "float32")
