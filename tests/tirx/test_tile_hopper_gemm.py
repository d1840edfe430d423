"""The tile-layer Hopper GEMM (``tilewright/tirx/tile_hopper_gemm.py``): its lowered IR and
CUDA (three warpgroups, TMA loads on a ring of mbarriers, wgmma with one group in flight, a
guarded epilogue), an NVRTC build for sm_90a, the refusals, and a CPU model run of the
emitted TMA copies and wgmmas on a problem with tails in M, N and K
(``hopper_pipeline_model``). The GPU runs are in tests/runtime/test_gpu_hopper_tiles.py and
benchmarks/gpu_hopper_gemm.py."""

from __future__ import annotations

import math
import re
from functools import cache
from itertools import pairwise

import numpy as np
import pytest
from hopper_pipeline_model import ev, run_cta

import tilewright as tw
from tilewright.artifact import TENSOR_MAP, TensorMapParam
from tilewright.codegen.artifacts import device_artifact
from tilewright.codegen.cuda import generate_cuda
from tilewright.ir import Call, post_order_visit
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.runtime.cuda_runtime import nvrtc
from tilewright.script.tirx import cuda as T_cuda
from tilewright.tirx.tile_hopper_gemm import tile_hopper_gemm
from tilewright.tirx.transform import LowerTIRx

SMALL = {"block_n": 128, "stages": 2, "grid": 2}  # 200 x 136 x 72: 2 x 2 tiles, 2 k tiles


@cache
def _lowered(m: int, n: int, k: int, **kwargs):
    lower = LowerTIRx("cuda")
    func = lower(tile_hopper_gemm(m, n, k, **kwargs))["main"]
    return func, tuple(d.variant for d in lower.decisions)


@cache
def _artifact(m: int, n: int, k: int, **kwargs):
    return device_artifact(
        tw.lower(tile_hopper_gemm(m, n, k, **kwargs), "cuda"), generate_cuda, "cuda", "cuda"
    )


def _calls(func, intrinsic) -> list[Call]:
    found: list[Call] = []
    post_order_visit(
        func.body,
        lambda n: found.append(n) if isinstance(n, Call) and intrinsic.matches(n) else None,
    )
    return found


def test_the_ops_lower_to_tma_and_wgmma() -> None:
    _, variants = _lowered(200, 136, 72, **SMALL)
    # Loads, the gemm, then the epilogue: cast, stmatrix into staging, a TMA store.
    assert variants == ("tma", "tma", "wgmma", "register", "stmatrix", "tma")
    _, variants = _lowered(200, 136, 72, epilogue="direct", **SMALL)
    assert variants == ("tma", "tma", "wgmma")


def test_three_warpgroups_one_producer_thread_and_register_split() -> None:
    artifact = _artifact(512, 512, 512)
    text = artifact.source
    assert artifact.arch == "sm_90a"
    assert "__launch_bounds__(384)" in text and "const int wg = threadIdx_x / 128;" in text
    # One CTA barrier (after the mbarrier init); the roles split on the warpgroup.
    assert text.count("__syncthreads()") == 1
    assert "if (wg == 0) {" in text and "if (tid == 0) {" in text
    assert "setmaxnreg.dec.sync.aligned.u32 40" in text
    assert "setmaxnreg.inc.sync.aligned.u32 232" in text
    # Each consumer warpgroup arrives on empty with one thread; 4 stages x (full, empty).
    assert text.count("mbarrier.init.shared::cta.b64") == 2
    assert "if (kt_1 > 0 && tid % 128 == 0) {" in text


@pytest.mark.parametrize(("n", "block_n", "stages"), [(300, 128, 2), (512, 256, 4)])
def test_the_ring_buffers_and_barriers_do_not_overlap(n: int, block_n: int, stages: int) -> None:
    # The ring is named only by address (TMA destinations, wgmma descriptors): lowering must
    # keep every stage of As and Bs, or the barriers land inside Bs (a fault on the GPU).
    text = _artifact(200, n, 200, block_n=block_n, stages=stages).source
    starts = {
        name: int(offset or 0)
        for name, offset in re.findall(
            r"\b(\w+) = \([^()]*\*\)\(?tw_dyn_shared(?: \+ (\d+))?", text
        )
    }
    ends = {
        "As_1": starts["As_1"] + stages * 128 * 64 * 2,
        "Bs_1": starts["Bs_1"] + stages * block_n * 64 * 2,
        "full": starts["full"] + stages * 8,
        "empty": starts["empty"] + stages * 8,
    }
    spans = sorted((starts[name], ends[name]) for name in ends)
    assert all(end <= start for (_, end), (start, _) in pairwise(spans)), spans
    assert _artifact(200, n, 200, block_n=block_n, stages=stages).kernels[
        "main_kernel"
    ].dyn_shared_bytes >= max(end for _, end in spans)


def test_tma_loads_take_their_maps_as_grid_constant_parameters() -> None:
    artifact = _artifact(200, 136, 72, epilogue="direct", **SMALL)
    text = artifact.source
    (kernel,) = artifact.kernels.values()
    assert kernel.params == (None, TENSOR_MAP, TENSOR_MAP)
    assert kernel.tensor_maps == (
        TensorMapParam(1, "A", "float16", (128, 64), 128),
        TensorMapParam(2, "Bt", "float16", (128, 64), 128),
    )
    assert (
        "main_kernel(half* __restrict__ C, const __grid_constant__ tw_tensor_map A_tmap, "
        "const __grid_constant__ tw_tensor_map Bt_tmap)"
    ) in text
    assert text.count("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier") == 2
    # The loads' coordinates (innermost first): k tile, then the tile's first row.
    (a_load, b_load) = _calls(_lowered(200, 136, 72, **SMALL)[0], hopper.TMA_LOAD)
    for bx, r, kt in [(0, 0, 0), (1, 0, 1), (0, 1, 1), (1, 1, 0)]:
        env = {"bx": bx, "r": r, "kt": kt}
        tile = r * 2 + bx  # grouped order with 2 x 2 tiles and groups of 2 rows: (t % 2, t // 2)
        assert [ev(x, env) for x in a_load.args[3:]] == [64 * kt, 128 * (tile % 2)]
        assert [ev(x, env) for x in b_load.args[3:]] == [64 * kt, 128 * (tile // 2)]


@pytest.mark.parametrize(("k", "stages"), [(640, 4), (192, 3)])
def test_ring_parities_count_on_across_tiles(k: int, stages: int) -> None:
    """Step g = r k_tiles + kt uses stage g % stages for the (g // stages)-th time: consumers
    wait for full's phase of that parity, the producer for the previous release of empty."""
    func, _ = _lowered(512, 512, k, stages=stages, grid=3)
    k_tiles = k // 64
    waits = _calls(func, hopper.MBARRIER_WAIT)
    (producer, consumer) = waits
    for r in range(3):
        for kt in range(k_tiles):
            g, env = r * k_tiles + kt, {"r": r, "kt": kt, "bx": 1}
            assert producer.args[0].args[0].buffer.name == "empty"
            assert ev(producer.args[0].args[0].indices[0], env) == g % stages
            assert ev(producer.args[1], env) == (g // stages + 1) % 2
            assert consumer.args[0].args[0].buffer.name == "full"
            assert ev(consumer.args[0].args[0].indices[0], env) == g % stages
            assert ev(consumer.args[1], env) == g // stages % 2
    releases = _calls(func, hopper.MBARRIER_ARRIVE)
    env = {"r": 2, "kt": 1}
    # Inside the k loop the previous step's stage; after it, the tile's last stage.
    assert ev(releases[0].args[0].args[0].indices[0], env) == (2 * k_tiles) % stages
    assert ev(releases[1].args[0].args[0].indices[0], env) == (3 * k_tiles - 1) % stages


def test_four_wgmmas_a_k_tile_and_one_group_in_flight() -> None:
    text = _artifact(512, 512, 512).source  # block_n 256
    assert text.count("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16") == 4
    assert text.count("wgmma.commit_group.sync.aligned") == 1
    loop = text[text.index("for (int kt_1 = 0;") :]
    assert loop.index("wgmma.commit_group") < loop.index("wgmma.wait_group.sync.aligned 1;")
    assert loop.index("wgmma.wait_group.sync.aligned 1;") < loop.index("&empty[")
    assert text.count("wgmma.wait_group.sync.aligned 1;") == 1
    assert text.count("wgmma.wait_group.sync.aligned 0;") == 1


def test_expect_tx_counts_whole_boxes_even_for_a_small_problem() -> None:
    func, _ = _lowered(200, 136, 72, **SMALL)
    (arm,) = _calls(func, hopper.MBARRIER_ARRIVE_EXPECT_TX)
    assert arm.args[1].value == (128 + 128) * 64 * 2
    # Fewer rows than a tile: the boxes shrink to the tensor (a box may not exceed it).
    func, _ = _lowered(100, 40, 64, block_n=64, stages=2)
    (arm,) = _calls(func, hopper.MBARRIER_ARRIVE_EXPECT_TX)
    assert arm.args[1].value == (100 + 40) * 64 * 2
    boxes = [tuple(x.value for x in c.args[1].args[1:3]) for c in _calls(func, hopper.TMA_LOAD)]
    assert boxes == [(100, 64), (40, 64)]


def test_the_direct_epilogue_guards_rows_and_columns() -> None:
    text = _artifact(200, 136, 72, epilogue="direct", **SMALL).source
    stores = re.findall(r"if \((.*)\) \{\n\s*\*\(half2\*\)\(C \+", text)
    assert len(stores) == 32  # 2 row halves x 16 column pairs a thread
    # row < 200 as tile row + 64 wg + 16 (warp) + lane // 4 < 264 (256 for the rows + 8).
    assert all(re.match(r"bx \* 128 \+ wg \* 64 .* < (264|256)", g) for g in stores)
    assert sum("tid % 4 <" in guard for guard in stores) == 30  # j = 0, 1 always fit
    # An odd n: pairs could straddle the edge, so each element has its own guard.
    odd = _artifact(200, 135, 72, **SMALL).source
    assert "half2" not in odd and odd.count("= (half)acc_1[") == 64


@pytest.mark.parametrize(
    ("epilogue", "activation", "bias"),
    [
        ("tma", None, False),
        ("direct", None, False),
        ("tma", "gelu", False),
        ("direct", "relu", False),
        ("tma", "relu", True),
        ("direct", None, True),
    ],
)
def test_cpu_model_of_the_emitted_copies_and_wgmmas_with_tails(epilogue, activation, bias) -> None:
    m, n, k = 200, 136, 72
    func, variants = _lowered(m, n, k, epilogue=epilogue, activation=activation, bias=bias, **SMALL)
    assert variants.count("register") == (activation is not None) + (epilogue == "tma")
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (m, k)).astype(np.float64)
    bt = rng.integers(-3, 4, (n, k)).astype(np.float64)
    tensors = {"A": a, "Bt": bt}
    if bias:  # C's type; columns past n never read (the model's array ends at n)
        tensors["Bias"] = rng.integers(-40, 40, n).astype(np.float16)
    c = np.full((m, n), np.nan)
    for bx in range(2):
        cta = run_cta(func, bx, tensors, c, regs=64)
        assert set(cta.wgmmas_per_wait) == {4}
    x = a @ bt.T
    if bias:
        x = x + tensors["Bias"].astype(np.float64)
    if activation == "relu":
        x = np.maximum(x, 0)
    elif activation == "gelu":
        x = x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))) / 2
    # C is float16: the model rounds the float32 result as the kernel does.
    np.testing.assert_array_equal(c, x.astype(np.float32).astype(np.float16))


def test_the_tma_epilogue_stages_64_columns_at_a_time() -> None:
    artifact = _artifact(200, 136, 72, **SMALL)
    text = artifact.source
    (kernel,) = artifact.kernels.values()
    # C's map: 64 x 64 boxes, 128-byte swizzle (one staging tile); 4 stmatrix.x4 a chunk.
    # C is reached only through it: every parameter is a tensor map.
    assert kernel.params == (TENSOR_MAP,) * 3
    (c_map,) = [m for m in kernel.tensor_maps if m.param == "C"]
    assert c_map == TensorMapParam(2, "C", "float16", (64, 64), 128)
    assert text.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 4
    assert text.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 1
    epilogue = text[text.index("wgmma.wait_group.sync.aligned 0;") :]
    order = [
        "cp.async.bulk.wait_group.read 0;",  # the previous tile's stores have read staging
        "for (int c = 0; c < 2; ++c)",
        "if (r_1 * 2 + c < 3) {",  # a chunk that starts inside C (the same in the warpgroup)
        "cp.async.bulk.wait_group.read 1;",  # the staging tile's store of two chunks ago
        'bar.sync %0, 128;\\n" :: "r"((unsigned)(wg))',
        "stmatrix.sync",
        "fence.proxy.async.shared::cta;",
        "cp.async.bulk.tensor.2d.global",
        "cp.async.bulk.commit_group;",
        "cp.async.bulk.wait_group.read 0;",  # before the CTA exits
    ]
    places, at = [], 0
    for marker in order:
        at = epilogue.index(marker, at)
        places.append(at)
    assert epilogue.count("bar.sync") == 2
    # The store and its commit are not guarded apart: every stored chunk commits one group.
    after_store = epilogue[epilogue.index("cp.async.bulk.tensor.2d.global") :]
    assert after_store.index("commit_group") < re.search(r"\n\s*\}", after_store).start()


@pytest.mark.skipif(nvrtc.nvrtc_version() is None, reason="needs NVRTC")
@pytest.mark.parametrize("epilogue", ["tma", "direct"])
def test_it_compiles_for_sm_90a(epilogue: str) -> None:
    out = "float32" if epilogue == "direct" else "bfloat16"
    for bias in (False, True):
        func = tile_hopper_gemm(
            300, 264, 200, in_dtype="bfloat16", out_dtype=out, epilogue=epilogue, bias=bias
        )
        assert [b.name for _, b in func.buffer_map] == ["A", "Bt", "C", "Bias"][: 3 + bias]
        artifact = tw.build_artifact(func, target="cuda")
        assert artifact.format == "cubin" and artifact.arch == "sm_90a"
        assert artifact.binary[:4] == b"\x7fELF"


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((256, 256, 100), {}, "multiple of 16 bytes"),
        ((256, 256, 32), {}, "less than one 64-wide k tile"),
        ((256, 256, 256), {"stages": 5}, "5 stages of 48 KB .* do not fit"),
        ((256, 256, 256), {"stages": 1}, "at least 2 stages"),
        ((256, 256, 256), {"block_n": 100}, "multiple of 8 from 8 to 256"),
        ((256, 256, 256), {"in_dtype": "float32"}, "float16 or bfloat16"),
        ((256, 256, 256), {"grid": 0}, "must be >= 1"),
        ((0, 256, 256), {}, "non-empty"),
        ((256, 256, 256), {"out_dtype": "float32", "epilogue": "tma"}, "16-bit C"),
        ((256, 56, 256), {"epilogue": "tma"}, "at least 64 wide"),
        ((256, 256, 256), {"block_n": 96, "epilogue": "tma"}, "multiple of 64"),
        ((256, 256, 256), {"epilogue": "smem"}, "'tma', 'direct' or 'auto'"),
        ((256, 256, 256), {"activation": "tanh"}, "activation is one of"),
    ],
)
def test_what_tma_or_shared_memory_cannot_take_is_refused(args, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        tile_hopper_gemm(*args, **kwargs)


def test_setmaxnreg_spelling() -> None:
    call = T_cuda.setmaxnreg(True, 232)
    assert hopper.SETMAXNREG.matches(call) and [a.value for a in call.args] == [1, 232]
    with pytest.raises(ValueError, match="multiple of 8"):
        T_cuda.setmaxnreg(False, 44)
    with pytest.raises(ValueError, match="24 to 256"):
        T_cuda.setmaxnreg(False, 8)


@pytest.mark.parametrize(
    ("m", "n", "kwargs"),
    [
        # N % 256 = 40: the last column tile stores one chunk of four.
        (128, 296, {"block_n": 256, "grid": 1}),
        # A tile with one chunk stored, then (the same CTA) a tile that needs both slots.
        (256, 136, {"block_n": 128, "grid": 1, "group_m": 1}),
    ],
)
def test_tma_epilogue_staging_is_reused_only_after_its_store_read_it(m, n, kwargs) -> None:
    """The model's TMA stores read their staging tile as late as the bulk groups allow: a
    staging tile written again before its store has read it fails, and C must be exact."""
    k = 64
    func, _ = _lowered(m, n, k, stages=2, **kwargs)
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (m, k)).astype(np.float64)
    bt = rng.integers(-3, 4, (n, k)).astype(np.float64)
    c = np.full((m, n), np.nan)
    run_cta(func, 0, {"A": a, "Bt": bt}, c, regs=kwargs["block_n"] // 2)
    np.testing.assert_array_equal(c, (a @ bt.T).astype(np.float16))
