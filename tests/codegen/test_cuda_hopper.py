"""The Hopper intrinsics (mbarrier, TMA, wgmma, setmaxnreg, elect.sync, stmatrix): their CUDA
spellings, the sm_90a build they force, and the refusals of arguments PTX cannot take."""

from __future__ import annotations

import pytest

import tilewright as tw
from tilewright.backend import compilers
from tilewright.codegen.artifacts import device_artifact
from tilewright.codegen.c_like import CodegenError
from tilewright.codegen.cuda import codegen_cuda, generate_cuda
from tilewright.ir import intrinsics
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.runtime.cuda_runtime import driver, nvrtc
from tilewright.script import tir as T


def _kernel(n: int = 64, swizzle: int = 0, registers: int = 240, coords: int = 2):
    """One warpgroup: a TMA load of A's tile on an mbarrier, B's tile copied by the threads,
    one wgmma m64nNk16 from shared memory, the accumulators stored (compile checks only)."""
    box = [0] * coords

    @T.prim_func
    def kernel(B: T.Buffer((16, 64), "float16"), C: T.Buffer((64, 64), "float32"), tmap: T.handle):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            with T.block("warpgroup"):
                T.reads(B[0:16, 0:64])
                T.writes(C[0:64, 0:64])
                As = T.alloc_buffer((1024,), "float16", scope="shared")
                Bs = T.alloc_buffer((1024,), "float16", scope="shared")
                bar = T.alloc_buffer((1,), "uint64", scope="shared")
                acc = T.alloc_buffer((32,), "float32", scope="local")
                frag = T.alloc_buffer((4,), "uint32", scope="local")
                if tx == 0:
                    T.evaluate(
                        T.call_intrin("int32", "tw.cuda.mbarrier_init", T.address_of(bar[0]), 1)
                    )
                    T.evaluate(T.call_intrin("int32", "tw.cuda.fence_mbarrier_init"))
                T.evaluate(T.call_intrin("int32", "tw.sync_threads"))
                if T.call_intrin("bool", "tw.cuda.elect_sync"):
                    T.evaluate(
                        T.call_intrin(
                            "int32", "tw.cuda.mbarrier_arrive_expect_tx", T.address_of(bar[0]), 2048
                        )
                    )
                    T.evaluate(
                        T.call_intrin(
                            "int32",
                            "tw.cuda.tma_load",
                            As.access_ptr("w"),
                            tmap,
                            T.address_of(bar[0]),
                            *box,
                        )
                    )
                T.evaluate(T.call_intrin("int32", "tw.cuda.mbarrier_wait", T.address_of(bar[0]), 0))
                for i in range(8):
                    Bs[tx * 8 + i] = B[(tx * 8 + i) // 64, (tx * 8 + i) % 64]
                T.evaluate(T.call_intrin("int32", "tw.cuda.fence_proxy_async"))
                T.evaluate(T.call_intrin("int32", "tw.sync_threads"))
                T.evaluate(T.call_intrin("int32", "tw.cuda.setmaxnreg", 1, registers))
                T.evaluate(T.call_intrin("int32", "tw.cuda.wgmma_fence"))
                T.evaluate(
                    T.call_intrin(
                        "int32",
                        "tw.cuda.wgmma_mma_async",
                        n,
                        "f16",
                        T.call_intrin(
                            "uint64", "tw.cuda.wgmma_descriptor", As.access_ptr("r"), 128, 256, 0
                        ),
                        T.call_intrin(
                            "uint64",
                            "tw.cuda.wgmma_descriptor",
                            Bs.access_ptr("r"),
                            128,
                            256,
                            swizzle,
                        ),
                        T.address_of(acc[0]),
                        0,
                        0,
                        0,
                        1,
                    )
                )
                T.evaluate(
                    T.call_intrin(
                        "int32",
                        "tw.cuda.wgmma_mma_async_rs",
                        n,
                        "bf16",
                        T.address_of(frag[0]),
                        0,
                        T.call_intrin(
                            "uint64", "tw.cuda.wgmma_descriptor", Bs.access_ptr("r"), 128, 256, 0
                        ),
                        T.address_of(acc[0]),
                        0,
                        1,
                    )
                )
                T.evaluate(T.call_intrin("int32", "tw.cuda.wgmma_commit_group"))
                T.evaluate(T.call_intrin("int32", "tw.cuda.wgmma_wait_group", 0))
                T.evaluate(
                    T.call_intrin(
                        "int32",
                        "tw.cuda.stmatrix",
                        4,
                        0,
                        Bs.access_ptr("w"),
                        T.address_of(frag[0]),
                        0,
                    )
                )
                T.evaluate(
                    T.call_intrin("int32", "tw.cuda.tma_store", tmap, As.access_ptr("r"), *box)
                )
                T.evaluate(T.call_intrin("int32", "tw.cuda.bulk_commit_group"))
                T.evaluate(T.call_intrin("int32", "tw.cuda.bulk_wait_group_read", 0))
                for i in range(32):
                    C[
                        tx // 32 * 16 + i // 2 % 2 * 8 + tx % 32 // 4,
                        i // 4 * 8 + tx % 4 * 2 + i % 2,
                    ] = acc[i]

    return kernel


def test_every_hopper_intrinsic_is_in_the_one_table() -> None:
    for intrinsic in hopper.HOPPER:
        assert intrinsics.lookup(intrinsic.name) is intrinsic
    with pytest.raises(ValueError, match="already in the table"):
        intrinsics.register(hopper.WGMMA_FENCE)


def test_cuda_spells_each_intrinsic_in_ptx() -> None:
    source = generate_cuda(tw.lower(_kernel(), "cuda"))
    text = source.text
    for ptx in (
        "mbarrier.init.shared::cta.b64",
        "fence.mbarrier_init.release.cluster",
        "elect.sync",
        "mbarrier.arrive.expect_tx.shared::cta.b64",
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
        "[%0], [%1, {%2, %3}], [%4]",
        "mbarrier.try_wait.parity.shared::cta.b64",
        "fence.proxy.async.shared::cta",
        "setmaxnreg.inc.sync.aligned.u32 240",
        "wgmma.fence.sync.aligned",
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
        "wgmma.commit_group.sync.aligned",
        "wgmma.wait_group.sync.aligned 0",
        "stmatrix.sync.aligned.m8n8.x4.shared.b16",
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3]",
        "cp.async.bulk.commit_group",
        "cp.async.bulk.wait_group.read 0",
    ):
        assert ptx in text, ptx
    # 32 accumulators a thread for N = 64; the descriptor helper is defined once.
    assert '"+f"(((float*)(&acc[0] + 0))[31])' in text
    assert text.count("tw_wgmma_descriptor(\n") == 1
    # The shared tiles the TMA copy and wgmma reach through access_ptr keep their size.
    assert "half As[1024]" in text and "half Bs[1024]" in text
    assert source.required_arch == "sm_90a"


def test_plain_kernels_need_no_particular_architecture() -> None:
    @T.prim_func
    def copy(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for i in T.thread_binding(128, thread="threadIdx.x"):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi]

    assert generate_cuda(tw.lower(copy, "cuda")).required_arch == ""


@pytest.mark.skipif(nvrtc.nvrtc_version() is None, reason="needs NVRTC")
def test_the_kernel_compiles_for_sm_90a_with_nvrtc() -> None:
    artifact = tw.build_artifact(_kernel(n=256, swizzle=128, coords=3), target="cuda")
    assert artifact.format == "cubin" and artifact.arch == "sm_90a"
    assert len(artifact.binary) > 0


def test_a_gpu_of_another_architecture_refuses_sm_90a_code(monkeypatch) -> None:
    monkeypatch.setattr(nvrtc, "compiler_available", lambda: True)
    monkeypatch.setattr(driver, "device_arch", lambda index=0: "sm_80")
    made = device_artifact(tw.lower(_kernel(), "cuda"), generate_cuda, "cuda", "cuda")
    with pytest.raises(ValueError, match=r"sm_90a only .* the GPU .* is sm_80"):
        compilers.compile_cubin(made, tw.target.Target("cuda"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 12}, "wgmma m64n12k16 with f16 inputs is not supported"),
        ({"swizzle": 16}, "swizzles 0, 32, 64 or 128 bytes, not 16"),
        ({"registers": 20}, "setmaxnreg takes 24 to 256 registers in steps of 8, not 20"),
        ({"coords": 6}, "a TMA copy takes 1 to 5 coordinates"),
    ],
)
def test_arguments_ptx_cannot_take_are_refused(kwargs: dict, message: str) -> None:
    lowered = tw.lower(_kernel(**kwargs), "cuda")
    with pytest.raises(CodegenError, match=message):
        codegen_cuda(lowered)
