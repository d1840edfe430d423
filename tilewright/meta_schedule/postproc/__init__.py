"""Postprocessors (TVM's ``meta_schedule.postproc`` names): each finishes a sampled
schedule, turning the rules' annotations into primitives, or rejects it.

Example::

    from tilewright.meta_schedule import postproc as P
    posts = [P.DisallowDynamicLoop(), P.RewriteReductionBlock()]
    ok = all(p.apply(sch) for p in posts)
"""

from tilewright.meta_schedule.postproc.disallow_dynamic_loop import DisallowDynamicLoop
from tilewright.meta_schedule.postproc.postproc import Postproc
from tilewright.meta_schedule.postproc.rewrite_cooperative_fetch import RewriteCooperativeFetch
from tilewright.meta_schedule.postproc.rewrite_parallel_vectorize_unroll import (
    RewriteParallelVectorizeUnroll,
)
from tilewright.meta_schedule.postproc.rewrite_reduction_block import RewriteReductionBlock
from tilewright.meta_schedule.postproc.rewrite_unbound_block import RewriteUnboundBlock
from tilewright.meta_schedule.postproc.verify_gpu_code import VerifyGPUCode

# TVM's subclassable spelling; the base class here is a Python class already.
PyPostproc = Postproc

__all__ = [
    "PyPostproc",
    "DisallowDynamicLoop",
    "Postproc",
    "RewriteCooperativeFetch",
    "RewriteParallelVectorizeUnroll",
    "RewriteReductionBlock",
    "RewriteUnboundBlock",
    "VerifyGPUCode",
]
