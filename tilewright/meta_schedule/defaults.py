"""The default schedule rules, postprocessors and mutator probabilities of each target kind
(TVM's ``"from-target"`` choices), in one place.

CPU kinds (``c``, spelled ``llvm`` too) tile ``SSRSRS`` or ``SSRS`` and parallelize, vectorize and
unroll; GPU kinds (``cuda``, ``opencl``, ``metal``) tile ``SSSRRSRS`` bound to blockIdx,
vthread and threadIdx, with inputs fetched cooperatively into shared memory.
"""

from __future__ import annotations

from tilewright.meta_schedule import mutator as M
from tilewright.meta_schedule import postproc as P
from tilewright.meta_schedule import schedule_rule as R
from tilewright.runtime.c_compiler import native_vector_bytes
from tilewright.target import Target

GPU_KINDS = ("cuda", "opencl", "metal")


def is_gpu(target: Target) -> bool:
    return target.kind.name in GPU_KINDS


def schedule_rules(target: Target) -> list[R.ScheduleRule]:
    """The rules of ``target``'s design space, in the order they apply."""
    if is_gpu(target):
        return [
            R.ApplyCustomRule(),
            # A float16/bfloat16 GEMM on CUDA sm_80+ goes to the tensor cores; the rule
            # leaves every other block (and target) to the rules below.
            R.MultiLevelTilingTensorCore(),
            R.MultiLevelTiling(
                structure="SSSRRSRS",
                tile_binds=["blockIdx.x", "vthread.x", "threadIdx.x"],
                max_innermost_factor=64,
                vector_load_lens=[1, 2, 3, 4, 8, 16],
                reuse_read=R.ReuseType(req="must", levels=[4], scope="shared"),
                reuse_write=R.ReuseType(req="must", levels=[3], scope="local"),
                # Beyond TVM: on CUDA sm_80+ the shared-memory fetch is a 3-stage cp.async
                # pipeline (hand SGEMM 4096^3: 0.85x -> 0.89x cuBLAS).
                pipeline_stages=3,
            ),
            R.InlineConstantScalars(),
            R.AutoInline(
                into_producer=True,
                into_consumer=True,
                inline_const_tensor=True,
                disallow_if_then_else=False,
                require_injective=False,
                require_ordered=False,
                disallow_op=None,
            ),
            R.CrossThreadReduction(thread_extents=[4, 8, 16, 32, 64, 128, 256, 512]),
            R.ParallelizeVectorizeUnroll(
                max_jobs_per_core=-1,
                max_vectorize_extent=-1,
                unroll_max_steps=[0, 16, 64, 512, 1024],
                unroll_explicit=True,
            ),
            R.AutoBind(max_threadblocks=256, thread_extents=[32, 64, 128, 256, 512, 1024]),
        ]
    return [
        R.ApplyCustomRule(),
        R.InlineConstantScalars(),
        R.AutoInline(
            into_producer=False,
            into_consumer=True,
            inline_const_tensor=True,
            disallow_if_then_else=True,
            require_injective=True,
            require_ordered=True,
            disallow_op=["tir.exp"],
        ),
        R.AddRFactor(max_jobs_per_core=16, max_innermost_factor=64),
        R.MultiLevelTiling(
            # TVM's structure, and beyond it "SSRS": the register tile innermost under the
            # whole reduction, the shape of a BLAS micro-kernel. SSRSRS holds it too, but only
            # where its third spatial level is all ones, which random draws seldom give.
            structure=["SSRSRS", "SSRS"],
            tile_binds=None,
            max_innermost_factor=64,
            vector_load_lens=None,
            # Beyond TVM's CPU space: optionally pack the inputs the vectorized inner loop
            # streams (B's columns in a matmul) into a contiguous panel per outer tile.
            reuse_read=R.ReuseType(req="may", levels=[1], scope="global", buffers="vector"),
            reuse_write=R.ReuseType(req="may", levels=[1, 2], scope="global"),
            # Beyond TVM: the vectorized innermost tile is whole vector registers.
            vector_bytes=native_vector_bytes(),
        ),
        R.ParallelizeVectorizeUnroll(
            max_jobs_per_core=16,
            max_vectorize_extent=64,
            unroll_max_steps=[0, 16, 64, 512],
            # Our CPU code goes through a C compiler: `#pragma GCC unroll` (implicit) lets it
            # keep vector loops whole, where written-out copies measured slower.
            unroll_explicit=False,
        ),
        R.RandomComputeLocation(),
    ]


def postprocs(target: Target) -> list[P.Postproc]:
    """The postprocessors of ``target``'s candidates, in the order they run."""
    if is_gpu(target):
        return [
            P.DisallowDynamicLoop(),
            P.RewriteCooperativeFetch(),
            P.RewriteUnboundBlock(),
            P.RewriteParallelVectorizeUnroll(),
            P.RewriteReductionBlock(),
            P.VerifyGPUCode(),
        ]
    return [
        P.DisallowDynamicLoop(),
        P.RewriteParallelVectorizeUnroll(),
        P.RewriteReductionBlock(),
    ]


def mutator_probs(target: Target) -> dict[M.Mutator, float]:
    """The mutators of ``target``'s search, with the probability of picking each."""
    if is_gpu(target):
        return {
            M.MutateTileSize(): 0.9,
            M.MutateUnroll(): 0.08,
            M.MutateThreadBinding(): 0.02,
        }
    return {
        M.MutateTileSize(): 0.9,
        M.MutateComputeLocation(): 0.05,
        M.MutateUnroll(): 0.03,
        M.MutateParallel(): 0.02,
    }
