"""The demo (``scripts/demo``): the seed notebook's matmul, scheduled, built, checked, timed.

Runs on the GPU when one is present and the CUDA back end is available, on the CPU otherwise.
``python -m tilewright.demo --size 512`` picks a smaller problem.
"""

import argparse
import os
import time
from collections.abc import Callable
from typing import no_type_check

import numpy as np

import tilewright as tw
from tilewright.script import tir as T


def matmul_module(n: int) -> tw.IRModule:
    """The seed notebook's ``MyModuleMatmul`` at size ``n``."""

    @tw.script.ir_module
    class MyModuleMatmul:
        # Script syntax (dtype strings in annotations, parsed frames) is not Python to mypy.
        @T.prim_func
        @no_type_check
        def main(
            A: T.Buffer((n, n), "float32"),
            B: T.Buffer((n, n), "float32"),
            C: T.Buffer((n, n), "float32"),
        ) -> None:
            T.func_attr({"global_symbol": "main", "tir.noalias": True})
            for i, j, k in T.grid(n, n, n):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C[vi, vj] = 0.0
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return MyModuleMatmul


def cpu_schedule(mod: tw.IRModule, tile_i: int = 8, tile_j: int = 32, tile_k: int = 4):
    """Column panels of B packed per thread (``cache_read`` into a contiguous local buffer),
    ``tile_i x tile_j`` register blocks accumulated in a local buffer (``cache_write``),
    panels in parallel, columns vectorized."""
    sch = tw.tir.Schedule(mod)
    block = sch.get_block("C")
    c_local = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, tile_i])
    j0, j1 = sch.split(j, [None, tile_j])
    k0, k1 = sch.split(k, [None, tile_k])
    sch.reorder(j0, i0, k0, k1, i1, j1)
    sch.reverse_compute_at(c_local, i0)
    b_panel = sch.cache_read(block, 1, "local")
    sch.compute_at(b_panel, j0)
    sch.unroll(i1)
    sch.vectorize(j1)
    sch.parallel(j0)  # before decompose_reduction: TVM refuses a loop over an init-less update
    sch.decompose_reduction(block, k0)
    return sch


# The notebook's GPU schedules, as the notebook writes them (benchmarks/gpu_matmul.py uses them).
def blocking(sch, tile_local_y, tile_local_x, tile_block_y, tile_block_x, tile_k):
    block_C = sch.get_block("C")
    C_local = sch.cache_write(block_C, 0, "local")
    i, j, k = sch.get_loops(block=block_C)
    i0, i1, i2 = sch.split(loop=i, factors=[None, tile_block_y, tile_local_y])
    j0, j1, j2 = sch.split(loop=j, factors=[None, tile_block_x, tile_local_x])
    k0, k1 = sch.split(loop=k, factors=[None, tile_k])
    sch.unroll(k1)
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(C_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    sch.decompose_reduction(block_C, k0)
    return sch


def cache_read_and_coop_fetch(sch, block, nthread, read_idx, read_loc):
    read_cache = sch.cache_read(block=block, read_buffer_index=read_idx, storage_scope="shared")
    sch.compute_at(block=read_cache, loop=read_loc)
    inner0, inner1 = sch.get_loops(block=read_cache)[-2:]
    inner = sch.fuse(inner0, inner1)
    _, tx, vec = sch.split(loop=inner, factors=[None, nthread, 4])
    sch.vectorize(vec)
    sch.bind(tx, "threadIdx.x")


def blocking_with_shared(sch, tile_local_y, tile_local_x, tile_block_y, tile_block_x, tile_k):
    block_C = sch.get_block("C")
    C_local = sch.cache_write(block_C, 0, "local")
    i, j, k = sch.get_loops(block=block_C)
    i0, i1, i2 = sch.split(loop=i, factors=[None, tile_block_y, tile_local_y])
    j0, j1, j2 = sch.split(loop=j, factors=[None, tile_block_x, tile_local_x])
    k0, k1 = sch.split(loop=k, factors=[None, tile_k])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(C_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    tx = sch.fuse(i1, j1)
    sch.bind(tx, "threadIdx.x")
    nthread = tile_block_y * tile_block_x
    cache_read_and_coop_fetch(sch, block_C, nthread, 0, k0)
    cache_read_and_coop_fetch(sch, block_C, nthread, 1, k0)
    sch.decompose_reduction(block_C, k0)
    return sch


def _heading(text: str) -> None:
    print(f"\n== {text} ==")


# Rounds of ours and the peer's timing, interleaved so that both see the same machine load.
ROUNDS = 7
# On the CPU each timing starts after a pause: numpy's OpenBLAS threads keep spinning for a
# moment after its last call and would take the cores from whatever runs next.
CPU_PAUSE_S = 0.2


def _blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "its BLAS's default threads (install threadpoolctl to see how many)"
    counts = [f"{p['internal_api']} {p['num_threads']} threads" for p in threadpool_info()]
    return ", ".join(counts) or "1 thread"


def _peer_cpu(a_np: np.ndarray, b_np: np.ndarray) -> tuple[str, Callable[[], float], str]:
    np.matmul(a_np, b_np)

    def one_round() -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            np.matmul(a_np, b_np)
            times.append(time.perf_counter() - start)
        return float(np.median(times))

    return "numpy", one_round, _blas_threads()


def _peer_gpu(a_np: np.ndarray, b_np: np.ndarray) -> tuple[str, Callable[[], float], str] | None:
    try:
        import torch
    except ImportError:
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
    c = torch.empty_like(a)
    torch.matmul(a, b, out=c)

    def one_round() -> float:
        times = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(a, b, out=c)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return float(np.median(times))

    return "cuBLAS (torch, fp32)", one_round, "the whole GPU"


def _row(name: str, flops: float, times: list[float], threads: str) -> str:
    best, worst, mid = min(times), max(times), float(np.median(times))
    return (
        f"{name:<22}{flops / mid / 1e9:10.1f} GFLOP/s  (median {mid * 1e3:.3f} ms, "
        f"{best * 1e3:.3f}-{worst * 1e3:.3f} over {len(times)} rounds; {threads})"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the demo; 0 when the kernel matches numpy. Example: ``main(["--size", "512"])``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024, help="matrix size (default 1024)")
    parser.add_argument("--cpu", action="store_true", help="use the CPU even if a GPU is present")
    args = parser.parse_args(argv)
    n = args.size
    on_gpu = not args.cpu and tw.cuda(0).exist
    where = "the GPU" if on_gpu else "the CPU"

    mod = matmul_module(n)
    _heading("the program")
    mod.show()

    if on_gpu:
        sch = blocking_with_shared(tw.tir.Schedule(mod), 8, 8, 8, 8, 8)
        target, dev = "cuda", tw.cuda(0)
    else:
        sch = cpu_schedule(mod)
        target, dev = "c", tw.cpu(0)
    _heading(f"scheduled for {where}")
    sch.mod.show()
    _heading("schedule trace")
    print(sch.trace)

    start = time.perf_counter()
    rt_mod = tw.build(sch.mod, target=target)
    source = rt_mod.imported_modules[0].get_source() if on_gpu else rt_mod.get_source()
    _heading(f"generated {target} code (built in {time.perf_counter() - start:.2f} s)")
    print(source)

    rng = np.random.default_rng(0)
    a_np = rng.random((n, n), dtype=np.float32)
    b_np = rng.random((n, n), dtype=np.float32)
    a, b = tw.nd.array(a_np, dev), tw.nd.array(b_np, dev)
    c = tw.nd.array(np.full((n, n), np.nan, dtype=np.float32), dev)
    rt_mod["main"](a, b, c)
    reference = a_np.astype(np.float64) @ b_np.astype(np.float64)
    error = float(np.max(np.abs(c.numpy() - reference) / (np.abs(reference) + 1.0)))
    _heading("check against numpy (float64 reference)")
    ok = error < 1e-4
    print(f"max relative error {error:.2e}: {'OK' if ok else 'MISMATCH'}")

    flops = 2.0 * n**3
    timer = rt_mod.time_evaluator("main", dev, number=3, repeat=1)
    peer = _peer_gpu(a_np, b_np) if on_gpu else _peer_cpu(a_np, b_np)
    ours_times: list[float] = []
    peer_times: list[float] = []
    pause = 0.0 if on_gpu else CPU_PAUSE_S
    for _ in range(ROUNDS):
        time.sleep(pause)
        ours_times.append(timer(a, b, c).mean)
        if peer is not None:
            time.sleep(pause)
            peer_times.append(peer[1]())
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    ours_threads = "the whole GPU" if on_gpu else f"OpenMP over {cores} cores"
    _heading(f"timing on {where} ({ROUNDS} interleaved rounds)")
    print(_row("tilewright", flops, ours_times, ours_threads))
    if peer is not None:
        name, _, threads = peer
        print(_row(name, flops, peer_times, threads))
        ratio = float(np.median(peer_times)) / float(np.median(ours_times))
        print(f"{'ratio':<22}{ratio:10.2f}x {name} (medians)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
