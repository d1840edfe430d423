"""``Tx.<scope>.copy_async``: the dispatch table, the ``tma`` and ``cp_async`` variants' IR
and CUDA, each refusal's reason, NVRTC builds of the examples, and a model of where TMA puts
a box in shared memory checked against the tile layer's layouts (no GPU: the GPU run is
``benchmarks/gpu_tile_copy_async.py``)."""

from __future__ import annotations

import re

import pytest
from copy_async_kernels import copy_async_kernel, swizzled, tma_bytes

import tilewright as tw
from tilewright.codegen.artifacts import device_artifact
from tilewright.codegen.cuda import generate_cuda
from tilewright.ir import BufferRegion, Call, IntImm, Range, decl_buffer, post_order_visit
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.ir.intrinsics import CP_ASYNC, CP_ASYNC_COMMIT
from tilewright.ir.printer import script
from tilewright.layout import S, SwizzleLayout, TileLayout
from tilewright.layout.shard import MEMORY
from tilewright.runtime.cuda_runtime import nvrtc
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx
from tilewright.tirx.dispatch import DispatchError
from tilewright.tirx.operand import operand
from tilewright.tirx.ops import COPY_ASYNC_VARIANTS
from tilewright.tirx.tile_copy_async import cp_async_copy, tma_copy
from tilewright.tirx.transform import LowerTIRx

HOPPER = "cuda -arch=sm_90a"


def lowered(kernel, target="cuda"):
    lower = LowerTIRx(target)
    return lower(kernel)["main"], lower.decisions


def calls(func, intrinsic):
    found = []
    post_order_visit(
        func.body,
        lambda n: found.append(n) if isinstance(n, Call) and intrinsic.matches(n) else None,
    )
    return found


def cuda_source(kernel):
    return device_artifact(tw.lower(kernel, "cuda"), generate_cuda, "cuda", "cuda").source


def refusal(kernel, target="cuda"):
    with pytest.raises(DispatchError) as info:
        LowerTIRx(target)(kernel)
    return str(info.value)


def test_variant_table_is_literal_and_ordered():
    assert [(v.name, v.priority) for v in COPY_ASYNC_VARIANTS] == [("cp_async", 20), ("tma", 10)]


# -- tma: the example --------------------------------------------------------------------------


def test_tma_example_dispatches_a_tma_load_then_the_cta_copy():
    _, decisions = lowered(tma_copy(256, 128))
    assert [d.variant for d in decisions] == ["tma", "gmem_smem"]
    assert decisions[0].notes == {"direction": "load", "box": (128, 64), "swizzle": 128,
                                  "bytes": 16384}  # fmt: skip


def test_tma_load_ir_names_the_map_the_barrier_and_innermost_first_coordinates():
    func, _ = lowered(tma_copy(256, 128))
    (load,) = calls(func, hopper.TMA_LOAD)
    dst, tmap, bar, *coords = load.args
    assert script(dst) == "T.address_of(As_1[0])"
    assert hopper.TENSOR_MAP.matches(tmap)
    assert tmap.args[0].name == "A" and [a.value for a in tmap.args[1:]] == [128, 64, 128]
    assert script(bar) == "T.address_of(bar[0])"
    assert [script(c) for c in coords] == ["by * 64", "bx * 128"]


def test_tma_example_cuda_has_the_grid_constant_map_expect_tx_and_the_bulk_copy():
    text = cuda_source(tma_copy(256, 128))
    assert "const __grid_constant__ tw_tensor_map A_tmap" in text
    expect = text.index("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;")
    assert '"r"((unsigned)(16384))' in text[expect : expect + 200]
    copy = re.search(
        r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes"
        r" \[%0\], \[%1, \{%2, %3\}\], \[%4\];.*\n",
        text,
    )
    assert copy is not None and expect < copy.start()
    line = copy.group(0)
    assert "&As_1[0]" in line and "(&A_tmap)" in line and "&bar[0]" in line
    assert '"r"((int)(by * 64)), "r"((int)(bx * 128))' in line
    # Every thread waits on phase 0, then reads the tile through the same swizzle.
    assert "tw_mbarrier_wait((unsigned)__cvta_generic_to_shared(&bar[0]), (unsigned)(0));" in text
    assert "const int s_off = s_lin ^ s_lin / 64 % 8 * 8;" in text


def test_tma_store_emits_the_bulk_store_and_a_commit():
    func, decisions = lowered(copy_async_kernel(store=True, mbar=False, g_rows=(128, 256)))
    assert decisions[0].variant == "tma" and decisions[0].notes["direction"] == "store"
    (store,) = calls(func, hopper.TMA_STORE)
    assert [script(c) for c in store.args[2:]] == ["0", "128"]
    assert len(calls(func, hopper.BULK_COMMIT_GROUP)) == 1
    assert calls(func, hopper.TMA_LOAD) == []
    text = cuda_source(copy_async_kernel(store=True, mbar=False))
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" in text
    assert text.index("bulk_group [%0") < text.index("cp.async.bulk.commit_group;")


@pytest.mark.parametrize(
    ("kwargs", "box", "swizzle"),
    [
        ({}, (128, 64), 128),
        ({"s_shape": (64, 32), "layout": swizzled(64, 32, 64), "s_rows": (0, 64),
          "s_cols": (0, 32), "g_rows": (0, 64), "g_cols": (32, 64), "align": 512}, (64, 32), 64),
        ({"layout": TileLayout(S[128, 64]), "align": 128}, (128, 64), 0),
        ({"dtype": "float32", "s_shape": (16, 8), "layout": swizzled(16, 8, 32, 32),
          "s_rows": (0, 16), "s_cols": (0, 8), "g_rows": (16, 32), "g_cols": (0, 8),
          "align": 256}, (16, 8), 32),
    ],
    ids=["128B", "64B", "none", "32B-float32"],
)  # fmt: skip
def test_tma_accepts_each_swizzle_mode(kwargs, box, swizzle):
    _, decisions = lowered(copy_async_kernel(**kwargs))
    assert decisions[0].variant == "tma"
    assert (decisions[0].notes["box"], decisions[0].notes["swizzle"]) == (box, swizzle)


def test_the_op_prints_mbar_as_a_keyword():
    text = script(copy_async_kernel())
    assert "Tx.thread.copy_async(As[0:128, 0:64], A[0:128, 0:64], mbar=bar[0])" in text
    text = script(copy_async_kernel(scope="cta", mbar=False, first_thread=False))
    assert "Tx.cta.copy_async(As[0:128, 0:64], A[0:128, 0:64])" in text


def test_script_spellings_of_the_mbarrier_and_the_byte_count():
    @T.prim_func
    def kernel():
        T.device_entry()
        T.thread_id([32])
        bar = T.alloc_buffer((2,), "uint64", scope="shared.dyn", align=8)
        S_ = T.alloc_buffer((64, 64), "float16", scope="shared.dyn", align=1024)
        T.cuda.mbarrier_init(bar[1], 2)
        T.cuda.mbarrier_arrive_expect_tx(bar[1], T.cuda.region_bytes(S_[0:64, 0:32]))
        T.cuda.mbarrier_arrive(T.address_of(bar[0]))
        T.cuda.mbarrier_wait(bar[1], 1)
        T.cuda.bulk_commit_group()
        T.cuda.bulk_wait_group_read(0)
        T.cuda.cp_async_wait_group(1)

    text = script(kernel)
    assert 'T.call_intrin("int32", "tw.cuda.mbarrier_init", T.address_of(bar[1]), 2)' in text
    assert '"tw.cuda.mbarrier_arrive_expect_tx", T.address_of(bar[1]), 4096)' in text
    assert '"tw.cuda.mbarrier_arrive", T.address_of(bar[0]))' in text
    assert '"tw.cuda.mbarrier_wait", T.address_of(bar[1]), 1)' in text
    assert '"tw.cuda.bulk_wait_group_read", 0)' in text
    assert '"tw.cuda.cp_async_wait_group", 1)' in text
    with pytest.raises(TypeError, match="the mbarrier S_ must be a uint64 shared buffer"):
        T.cuda.mbarrier_arrive(decl_buffer((4,), "float16", "S_", "shared")[0])
    with pytest.raises(ValueError, match="takes a constant 0 to 7"):
        T.cuda.cp_async_wait_group(8)


# -- tma: refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "target", "reason"),
    [
        ({}, "cuda -arch=sm_80", r"target cuda .*has no TMA"),
        ({}, "c", r"has no TMA"),
        ({"scope": "warp"}, HOPPER, r"TMA is issued by a single thread: use Tx.thread.copy_async"),
        ({"mbar": False}, HOPPER, r"a TMA load into As completes on an mbarrier: pass mbar="),
        ({"bar_dtype": "int32"}, HOPPER, r"mbar bar must be a uint64 shared buffer, got int32"),
        ({"store": True}, HOPPER, r"a TMA store completes in bulk groups, not on an mbarrier"),
        ({"s_shape": (128, 32), "s_cols": (0, 32), "g_cols": (0, 32)}, HOPPER,
         r"the box's rows are 64 bytes \(32 x float16\) but As's 128-byte swizzle needs rows "
         r"of exactly 128 bytes"),
        ({"s_shape": (64, 128), "s_rows": (0, 64), "s_cols": (0, 128), "g_rows": (0, 64),
          "g_cols": (0, 128)}, HOPPER, r"the box's rows are 256 bytes"),
        ({"align": 128}, HOPPER,
         r"shared As: the 128-byte swizzle needs 1024-byte aligned storage; declare it with "
         r"align=1024 \(it has 128\)"),
        ({"s_scope": "shared"}, HOPPER, r"static shared arrays are at most 128-byte aligned"),
        ({"s_shape": (256, 64), "s_rows": (4, 132)}, HOPPER,
         r"shared As: the region starts at element 256, not on a 1024-byte boundary"),
        ({"layout": TileLayout(S[(128, 64) : (1, 128)])}, HOPPER,
         r"TMA writes the box row-major and densely"),
        ({"layout": TileLayout(S[128, 64]), "align": 64}, HOPPER,
         r"TMA needs 128-byte aligned storage"),
        ({"layout": swizzled(128, 64).replace(swizzle=SwizzleLayout(2, 3, 3))}, HOPPER,
         r"swizzle SwizzleLayout\(2, 3, 3\) is not one of TMA's 32-, 64- or 128-byte modes"),
        ({"g_shape": (512, 64), "s_shape": (512, 64), "s_rows": (0, 512), "g_rows": (0, 512)},
         HOPPER, r"the box's dimension 0 is 512 elements of A; TMA takes 1 to 256"),
        ({"layout": TileLayout(S[128, 64]), "align": 128, "s_cols": (0, 4), "g_cols": (0, 4),
          "s_shape": (128, 64)}, HOPPER, r"the box's rows are 8 bytes of A, not a multiple of 16"),
        ({"g_strides": (1, 256)}, HOPPER, r"global A's innermost stride is 256, not 1"),
        ({"g_shape": (256, 100)}, HOPPER, r"a stride of 200 bytes is not a multiple of 16"),
    ],
    ids=["sm_80", "c", "warp-scope", "no-mbar", "mbar-int32", "store-with-mbar", "narrow-rows",
         "wide-rows", "align", "static-shared", "start", "column-major", "unswizzled-align",
         "odd-swizzle", "box-256", "row-8-bytes", "inner-stride", "outer-stride"],
)  # fmt: skip
def test_tma_refuses_with_a_reason(kwargs, target, reason):
    message = refusal(copy_async_kernel(**kwargs), target)
    assert re.search(r"\n  tma: .*" + reason, message), message


def test_tma_refuses_rank_six():
    @T.prim_func
    def kernel(A: T.Buffer((2, 2, 2, 2, 8, 64), "float16")):
        T.device_entry()
        tid = T.thread_id([32])
        As = T.alloc_buffer((8, 64), "float16", scope="shared.dyn", align=1024)
        bar = T.alloc_buffer((1,), "uint64", scope="shared.dyn", align=8)
        if tid == 0:
            Tx.thread.copy_async(As[0:8, 0:64], A[0, 0, 0, 0, 0:8, 0:64], mbar=bar[0])

    assert "global A has rank 6; TMA takes at most 5" in refusal(kernel, HOPPER)


def test_no_variant_lists_both_reasons():
    message = refusal(copy_async_kernel(scope="thread", mbar=False), "cuda")
    assert "no variant applies" in message
    assert "cp_async: cp_async splits the copy over a warp, warpgroup or CTA" in message
    assert "tma: a TMA load into As completes on an mbarrier" in message


# -- cp_async ----------------------------------------------------------------------------------


def test_cp_async_example_issues_16_byte_copies_and_one_commit():
    func, decisions = lowered(cp_async_copy(128, 128))
    assert [d.variant for d in decisions] == ["cp_async", "gmem_smem"]
    assert decisions[0].notes == {"vec": 8, "outer": 4, "vec_bytes": 16}
    copies = calls(func, CP_ASYNC)
    assert len(copies) == 1 and copies[0].args[2].value == 16
    assert script(copies[0].args[0]) == "T.address_of(As_1[s_off])"
    assert len(calls(func, CP_ASYNC_COMMIT)) == 1
    text = cuda_source(cp_async_copy(128, 128))
    body = text[text.index("for (int f = 0; f < 4; ++f)") :]
    assert 'asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\n"' in body
    assert body.index("cp.async.cg") < body.index("cp.async.commit_group;")
    assert body.index("cp.async.commit_group;") < body.index("cp.async.wait_group 0;")
    assert body.count("__syncthreads();") == 1


def test_cp_async_refuses_a_narrowed_warp():
    kernel = copy_async_kernel(scope="warp", mbar=False, layout=TileLayout(S[128, 64]),
                               first_thread=False, s_rows=(0, 32), g_rows=(0, 32))  # fmt: skip
    with pytest.raises(DispatchError, match="narrowed by the enclosing `if tid < 128`"):
        LowerTIRx("cuda")(kernel)


@pytest.mark.parametrize(
    ("kwargs", "target", "reason"),
    [
        ({"scope": "cta", "mbar": False}, "cuda -arch=sm_75", r"has no cp.async"),
        ({"mbar": False}, "cuda", r"not the thread scope"),
        ({"scope": "cta", "mbar": False}, "cuda", r"not all threads of the cta scope are active"),
    ],
    ids=["sm_75", "thread", "narrowed"],
)
def test_cp_async_refuses_with_a_reason(kwargs, target, reason):
    message = refusal(copy_async_kernel(**kwargs), target)
    assert re.search(r"\n  cp_async: .*" + reason, message), message


def _cta_kernel(store=False, mbar=False, cols=(0, 64), layout=None):
    layout = layout or TileLayout(S[64, 64])
    c0, c1 = cols

    @T.prim_func
    def kernel(A: T.Buffer((64, 128), "float16")):
        T.device_entry()
        T.thread_id([128])
        As = T.alloc_buffer((64, 64), "float16", scope="shared", layout=layout)
        bar = T.alloc_buffer((1,), "uint64", scope="shared", align=8)
        if store:
            Tx.cta.copy_async(A[0:64, c0:c1], As[0:64, 0:64], dispatch="cp_async")
        elif mbar:
            Tx.cta.copy_async(As[0:64, 0:64], A[0:64, c0:c1], mbar=bar[0], dispatch="cp_async")
        else:
            Tx.cta.copy_async(As[0:64, 0:64], A[0:64, c0:c1], dispatch="cp_async")

    return kernel


def test_cp_async_accepts_a_full_cta():
    _, decisions = lowered(_cta_kernel())
    assert decisions[0].variant == "cp_async" and decisions[0].notes["vec_bytes"] == 16


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        (
            {"store": True},
            r"memory pair shared -> global \(As -> A\) is not one of global -> shared",
        ),
        ({"mbar": True}, r"cp_async completes in commit groups"),
        ({"cols": (1, 65)}, r"cp.async moves 4, 8 or 16"),
    ],
    ids=["store", "mbar", "2-byte-vectors"],
)
def test_cp_async_forced_refusals(kwargs, reason):
    message = refusal(_cta_kernel(**kwargs))
    assert re.search(r"dispatch='cp_async' does not apply: .*" + reason, message), message


# -- NVRTC -------------------------------------------------------------------------------------


@pytest.mark.skipif(nvrtc.nvrtc_version() is None, reason="needs NVRTC")
def test_tma_example_compiles_with_nvrtc_for_sm_90a():
    artifact = device_artifact(tw.lower(tma_copy(256, 128), "cuda"), generate_cuda, "cuda", "cuda")
    cubin = nvrtc.compile_cuda(artifact.source, "sm_90a", list(artifact.kernels))
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.skipif(nvrtc.nvrtc_version() is None, reason="needs NVRTC")
def test_tma_store_and_cp_async_compile_with_nvrtc():
    store = copy_async_kernel(store=True, mbar=False)
    for kernel, arch in ((store, "sm_90a"), (cp_async_copy(128, 128), "sm_80")):
        artifact = device_artifact(tw.lower(kernel, "cuda"), generate_cuda, "cuda", "cuda")
        assert nvrtc.compile_cuda(artifact.source, arch, list(artifact.kernels))[:4] == b"\x7fELF"


# -- where TMA writes vs the tile layer's layouts ------------------------------------------------


def _storage_bytes(region: BufferRegion) -> list[int]:
    """Byte offsets the tile layer gives the region's elements (row-major order)."""
    side = operand(region)
    element = region.buffer.dtype.bytes
    out = []
    for index in range(side.size()):
        linear = side.element_offset(index)[MEMORY]
        out.append(side.offset(linear) * element)
    return out


@pytest.mark.parametrize(
    ("shape", "dtype", "layout", "region", "swizzle"),
    [
        ((128, 64), "float16", swizzled(128, 64), (slice(0, 128), slice(0, 64)), 128),
        ((256, 64), "float16", swizzled(256, 64), (slice(128, 256), slice(0, 64)), 128),
        ((64, 32), "float16", swizzled(64, 32, 64), (slice(0, 64), slice(0, 32)), 64),
        ((32, 16), "float16", swizzled(32, 16, 32), (slice(16, 32), slice(0, 16)), 32),
        ((16, 32), "float32", swizzled(16, 32, 128, 32), (slice(8, 16), slice(0, 32)), 128),
        ((64, 64), "float16", TileLayout(S[64, 64]), (slice(8, 16), slice(0, 64)), 0),
    ],
    ids=["128B", "128B-second-half", "64B", "32B", "128B-float32", "none"],
)
def test_tma_model_agrees_with_the_layouts_the_variant_accepts(shape, dtype, layout, region,
                                                               swizzle):  # fmt: skip
    buffer = decl_buffer(shape, dtype, "As", "shared.dyn", align=1024, layout=layout)
    r = BufferRegion(buffer, tuple(_range(s) for s in region))
    side = operand(r)
    box = side.extents
    element = buffer.dtype.bytes
    want = tma_bytes(box, element, swizzle, side.base * element)
    assert _storage_bytes(r) == want


def test_tma_model_disagrees_with_a_layout_the_variant_refuses():
    # Column-major under the 128-byte swizzle: refused ("row-major and densely"), and indeed
    # not where TMA writes the box.
    layout = swizzled(128, 64).replace(tile=TileLayout(S[(128, 64) : (1, 128)]))
    buffer = decl_buffer((128, 64), "float16", "As", "shared.dyn", align=1024, layout=layout)
    r = BufferRegion(buffer, (_range(slice(0, 128)), _range(slice(0, 64))))
    assert _storage_bytes(r) != tma_bytes((128, 64), 2, 128, 0)
    assert sorted(_storage_bytes(r)) == sorted(tma_bytes((128, 64), 2, 128, 0))


def _range(s: slice):
    return Range.from_min_extent(IntImm(s.start, "int32"), IntImm(s.stop - s.start, "int32"))
