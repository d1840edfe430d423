"""verify_gpu_code: threads, shared memory and thread extents against the target's limits."""

from __future__ import annotations

import pytest

from tilewright.driver import lower
from tilewright.ir import Allocate, PrimFunc, post_order_visit
from tilewright.script import from_source
from tilewright.target import Target
from tilewright.transform import (
    GPUCodeError,
    ThreadBindingError,
    verify_gpu_code,
)

from .gpu_programs import load


def _kernel(threads: str, shared: int = 0, dtype: str = "float32") -> PrimFunc:
    alloc = f'S = T.decl_buffer(({shared},), "{dtype}", scope="shared")' if shared else ""
    use = "S[tx] = A[tx]\n                B[tx] = S[tx]" if shared else "B[tx] = A[tx]"
    return from_source(f'''
from tilewright.script import tir as T
@T.prim_func
def main(A: T.Buffer((4096,), "{dtype}"), B: T.Buffer((4096,), "{dtype}")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding({threads}, thread="threadIdx.x"):
            if True:
                {alloc}
                {use}
''')  # type: ignore[return-value]


def _scopes(func: PrimFunc) -> list[str]:
    found: list[str] = []
    post_order_visit(
        func.body, lambda n: found.append(n.buffer.scope) if isinstance(n, Allocate) else None
    )  # type: ignore[arg-type, func-returns-value]
    return found


def test_a_kernel_within_the_limits_is_returned_unchanged():
    func = _kernel("1024", shared=1024)
    assert verify_gpu_code(func, Target("nvidia/h200")) is func


def test_2048_threads_per_block_are_refused():
    with pytest.raises(
        GPUCodeError,
        match=r"kernel main_kernel uses 2048 threads per block \(threadIdx.x=2048\); "
        r"the target nvidia/h200 allows 1024",
    ):
        verify_gpu_code(_kernel("2048"), "nvidia/h200")


def test_the_limit_comes_from_the_kinds_defaults():
    with pytest.raises(GPUCodeError, match=r"uses 512 threads per block .* allows 256"):
        verify_gpu_code(_kernel("512"), "opencl")


def test_300_kb_of_shared_memory_are_refused():
    with pytest.raises(
        GPUCodeError,
        match=r"kernel main_kernel uses 300 KB of shared memory; "
        r"the target nvidia/h200 allows 227 KB",
    ):
        verify_gpu_code(_kernel("32", shared=76800), "nvidia/h200")


def test_opencl_local_memory_is_limited_to_32_kb():
    with pytest.raises(
        GPUCodeError, match=r"uses 64 KB of shared memory; the target opencl allows 32 KB"
    ):
        verify_gpu_code(_kernel("32", shared=16384), "opencl")


def test_static_shared_memory_past_48_kb_becomes_dynamic_on_cuda():
    func = _kernel("32", shared=16384)  # 64 KB
    got = verify_gpu_code(func, "cuda")
    assert _scopes(got) == ["shared.dyn"]
    stores = []
    post_order_visit(
        got.body,
        lambda n: stores.append(n) if hasattr(n, "value") and hasattr(n, "buffer") else None,
    )  # type: ignore[arg-type, func-returns-value]
    assert {s.buffer.scope for s in stores} == {"shared.dyn", "global"}


def test_48_kb_stays_static():
    assert _scopes(verify_gpu_code(_kernel("32", shared=12288), "cuda")) == ["shared"]


def test_dynamic_shared_bytes_reach_the_launch_and_the_kernel():
    module = lower(
        from_source("""
from tilewright.script import tir as T
@T.prim_func
def main(A: T.Buffer((16384,), "float32"), B: T.Buffer((16384,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            S = T.decl_buffer((16384,), "float32", scope="shared")
            for j in range(128):
                S[j * 128 + tx] = A[j * 128 + tx]
            for j in range(128):
                B[j * 128 + tx] = S[16383 - j * 128 - tx]
"""),
        "cuda",
    )
    assert module["main_kernel"].attr("dyn_shared_memory_bytes") == 65536
    launch = module["main"].body.value  # type: ignore[attr-defined]
    assert launch.args[7].value == 65536


def test_per_axis_limits_of_cuda():
    func = from_source("""
from tilewright.script import tir as T
@T.prim_func
def main(A: T.Buffer((128,), "float32")):
    for tz in T.thread_binding(128, thread="threadIdx.z"):
        A[tz] = T.float32(1)
""")
    with pytest.raises(
        GPUCodeError, match=r"threadIdx.z has extent 128; the target cuda allows at most 64"
    ):
        verify_gpu_code(func, "cuda")  # type: ignore[arg-type]


def test_symbolic_block_sizes_are_refused():
    func = from_source("""
from tilewright.script import tir as T
@T.prim_func
def main(a: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    for tx in T.thread_binding(n, thread="threadIdx.x"):
        A[tx] = T.float32(1)
""")
    with pytest.raises(GPUCodeError, match=r"threadIdx.x has extent n, not a constant"):
        verify_gpu_code(func, "cuda")  # type: ignore[arg-type]


def test_target_options_override_the_kinds_defaults():
    tiny = Target("cuda -max_num_threads=16 -max_shared_memory_per_block=1024")
    with pytest.raises(
        GPUCodeError, match=r"uses 32 threads per block .* the target cuda -max_num_threads=16"
    ):
        verify_gpu_code(_kernel("32"), tiny)


def test_the_current_target_does_not_reach_the_pass():
    # Passes take their target explicitly: an ambient `with Target(...)` changes nothing.
    with Target("cuda -max_num_threads=16"):
        assert verify_gpu_code(_kernel("32"), "cuda") is not None


def test_inconsistent_thread_extents_name_both_loops():
    text = (
        load("Expected_4")
        .script()
        .replace(
            'ax0_1 in T.thread_binding(128, thread="threadIdx.x")',
            'ax0_1 in T.thread_binding(64, thread="threadIdx.x")',
        )
    )
    with pytest.raises(
        ThreadBindingError,
        match=r"kernel main_kernel: threadIdx.x is bound with extent 128 by loop i_1 and "
        r"with extent 64 by loop ax0_1",
    ):
        lower(from_source(text), "cuda")


def test_global_buffers_cannot_be_allocated_inside_a_kernel():
    func = from_source("""
from tilewright.script import tir as T
@T.prim_func
def main(A: T.Buffer((32,), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        G = T.decl_buffer((32,), "float32")
        G[tx] = A[tx]
        A[tx] = G[tx]
""")
    with pytest.raises(
        GPUCodeError, match=r"kernel main_kernel allocates buffer G in scope 'global'"
    ):
        verify_gpu_code(func, "cuda")  # type: ignore[arg-type]
