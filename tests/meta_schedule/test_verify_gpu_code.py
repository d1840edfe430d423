"""VerifyGPUCode: kernels within the target's limits pass; too many threads a block (also as
soon as the loops are bound), too much shared memory, too many virtual threads, vectors
wider than 16 bytes, thread extents outside a block's range, symbolic extents and what GPU
lowering refuses are rejected; an unexpected error is not swallowed."""

from __future__ import annotations

import pytest
from postproc_context import initialized, scale_n

from tilewright.ir import PrimFunc
from tilewright.meta_schedule import postproc as P
from tilewright.meta_schedule.analysis import THREAD_EXTENT_HIGH, THREAD_EXTENT_LOW
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.schedule import Schedule


def _verify(sch: Schedule, func: PrimFunc, target: str = "opencl") -> bool:
    return initialized(P.VerifyGPUCode(), func, target).apply(sch)


def _elementwise(
    threads: int, tag: str = "threadIdx.x", n: int = 1024
) -> tuple[Schedule, PrimFunc]:
    func = WORKLOADS["vector_add"].func(n=n)
    sch = Schedule(func)
    (i,) = sch.get_loops("T_add")
    i0, i1 = sch.split(i, [None, threads])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, tag)
    return sch, func


def test_verify_accepts_a_kernel_within_the_limits() -> None:
    sch, func = _elementwise(256)
    assert _verify(sch, func)


def test_verify_rejects_too_many_threads_per_block() -> None:
    sch, func = _elementwise(512)  # OpenCL's default limit is 256
    assert not _verify(sch, func)
    assert _verify(sch, func, "cuda")  # 1024 on CUDA


def test_verify_rejects_too_many_threads_as_soon_as_they_are_bound() -> None:
    # The early check (after each bind) counts threads per block, so that a candidate with
    # too many is dropped before the rest of its replay and its lowering.
    for threads, target, ok in ((512, "opencl", False), (256, "opencl", True), (512, "cuda", True)):
        sch, func = _elementwise(threads)
        post = initialized(P.VerifyGPUCode(), func, target)
        bind = [inst for inst in sch.trace.insts if inst.kind == "bind"][-1]
        assert post.early_check(bind, sch) is ok, (threads, target)
        assert post.reason == ("" if ok else "threads per block")


def test_threads_per_block_counts_a_warp_execution_block() -> None:
    from tilewright.meta_schedule.postproc.verify_gpu_code import threads_per_block

    sch, _ = _elementwise(8, tag="threadIdx.y")
    assert threads_per_block(sch.mod["main"].body, 32) == 8
    sch.annotate("T_add", "warp_execution", 1)  # the block runs threadIdx.x over a warp
    assert threads_per_block(sch.mod["main"].body, 32) == 256


def test_verify_rejects_too_much_shared_memory() -> None:
    # Each thread block (one column j) caches the whole of A: 128 x 128 float32 = 64 KB.
    func = WORKLOADS["matmul"].func(m=128, n=2, k=128)
    sch = Schedule(func)
    i, j, _ = sch.get_loops("C")
    sch.reorder(j, i)
    sch.bind(j, "blockIdx.x")
    sch.bind(i, "threadIdx.x")
    cache = sch.cache_read("C", 0, "shared")
    sch.compute_at(cache, j)
    fetch = sch.fuse(*sch.get_loops(cache)[1:])
    sch.bind(sch.split(fetch, [None, 128])[1], "threadIdx.x")
    assert not _verify(sch, func)  # OpenCL allows 32 KB
    assert _verify(sch, func, "cuda")  # 227 KB on CUDA


def test_verify_rejects_more_than_eight_virtual_threads() -> None:
    func = WORKLOADS["vector_add"].func(n=1024)
    sch = Schedule(func)
    (i,) = sch.get_loops("T_add")
    bx, vt, tx = sch.split(i, [None, 16, 32])
    sch.bind(bx, "blockIdx.x")
    sch.bind(vt, "vthread.x")
    sch.bind(tx, "threadIdx.x")
    assert not _verify(sch, func)


def test_verify_rejects_vectors_wider_than_16_bytes() -> None:
    for lanes, ok in ((4, True), (8, False)):
        func = WORKLOADS["vector_add"].func(n=1024)
        sch = Schedule(func)
        (i,) = sch.get_loops("T_add")
        bx, tx, vec = sch.split(i, [None, 32, lanes])
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")
        sch.vectorize(vec)
        assert _verify(sch, func) is ok, lanes


@pytest.mark.parametrize(("low", "high", "ok"), [(32, 64, True), (64, 128, False), (8, 16, False)])
def test_verify_checks_the_thread_extent_range_of_a_block(low: int, high: int, ok: bool) -> None:
    sch, func = _elementwise(32)
    sch.annotate("T_add", THREAD_EXTENT_LOW, low)
    sch.annotate("T_add", THREAD_EXTENT_HIGH, high)
    assert _verify(sch, func) is ok


def test_verify_rejects_what_gpu_lowering_refuses() -> None:
    func = WORKLOADS["vector_add"].func(n=64)
    assert not _verify(Schedule(func), func)  # no thread binding at all


def test_verify_rejects_a_symbolic_thread_extent() -> None:
    sch = Schedule(scale_n)
    (i,) = sch.get_loops("B")
    sch.bind(i, "threadIdx.x")
    assert not _verify(sch, scale_n)


def test_verify_lets_an_unexpected_error_through(monkeypatch: pytest.MonkeyPatch) -> None:
    from tilewright.meta_schedule.postproc import verify_gpu_code

    def broken(*args: object, **kwargs: object) -> None:
        raise TypeError("a bug in a lowering pass")

    monkeypatch.setattr(verify_gpu_code, "lower_module", broken)
    sch, func = _elementwise(256)
    with pytest.raises(TypeError, match="a bug"):
        _verify(sch, func)
