"""What the postprocessor tests share: a postprocessor initialised from a tuning context, and
a program with a symbolic extent."""

from __future__ import annotations

from tilewright.ir import PrimFunc
from tilewright.meta_schedule import postproc as P
from tilewright.meta_schedule.space_generator import ScheduleFn
from tilewright.meta_schedule.tune_context import TuneContext
from tilewright.script import tir as T


def initialized(post: P.Postproc, func: PrimFunc, target: str) -> P.Postproc:
    """``post`` initialised from a tuning context of ``func`` for ``target``."""
    ctx = TuneContext(
        func,
        target=target,
        space_generator=ScheduleFn(lambda sch: None, sch_rules=[], postprocs=[], mutator_probs={}),
    )
    post._initialize_with_tune_context(ctx)
    return post


@T.prim_func
def scale_n(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (n,))
    B = T.match_buffer(b, (n,))
    for i in range(n):
        with T.block("B"):
            vi = T.axis.spatial(n, i)
            B[vi] = A[vi] * T.float32(2)
