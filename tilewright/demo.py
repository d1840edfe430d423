"""The demo (``scripts/demo``): the seed notebook's matmul, scheduled, built, checked, timed.

Runs on the GPU when one is present and the CUDA back end is available, on the CPU otherwise.
``python -m tilewright.demo --size 512`` picks a smaller problem.
"""

import argparse
import time

import numpy as np

import tilewright as tw
from tilewright.script import tir as T


def matmul_module(n: int) -> tw.IRModule:
    """The seed notebook's ``MyModuleMatmul`` at size ``n``."""

    @tw.script.ir_module
    class MyModuleMatmul:
        @T.prim_func
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
    sch.decompose_reduction(block, k0)
    sch.unroll(i1)
    sch.vectorize(j1)
    sch.parallel(j0)
    return sch


def _heading(text: str) -> None:
    print(f"\n== {text} ==")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024, help="matrix size (default 1024)")
    args = parser.parse_args(argv)
    n = args.size

    mod = matmul_module(n)
    _heading("the program")
    mod.show()

    sch = cpu_schedule(mod)
    _heading("scheduled for the CPU")
    sch.mod.show()
    _heading("schedule trace")
    print(sch.trace)

    start = time.perf_counter()
    rt_mod = tw.build(sch.mod, target="c")
    _heading(f"generated C (built in {time.perf_counter() - start:.2f} s)")
    print(rt_mod.get_source())

    rng = np.random.default_rng(0)
    a_np = rng.random((n, n), dtype=np.float32)
    b_np = rng.random((n, n), dtype=np.float32)
    dev = tw.cpu(0)
    a, b = tw.nd.array(a_np, dev), tw.nd.array(b_np, dev)
    c = tw.nd.array(np.full((n, n), np.nan, dtype=np.float32), dev)
    rt_mod["main"](a, b, c)
    reference = a_np.astype(np.float64) @ b_np.astype(np.float64)
    error = float(np.max(np.abs(c.numpy() - reference) / (np.abs(reference) + 1.0)))
    _heading("check against numpy (float64 reference)")
    ok = error < 1e-4
    print(f"max relative error {error:.2e}: {'OK' if ok else 'MISMATCH'}")

    flops = 2.0 * n**3
    ours = rt_mod.time_evaluator("main", dev, number=3, repeat=3)(a, b, c).median
    times = []
    for _ in range(5):
        start = time.perf_counter()
        np.matmul(a_np, b_np)
        times.append(time.perf_counter() - start)
    peer = float(np.median(times))
    _heading("timing on the CPU")
    print(f"tilewright  {flops / ours / 1e9:8.2f} GFLOP/s  ({ours * 1e3:.2f} ms)")
    print(f"numpy       {flops / peer / 1e9:8.2f} GFLOP/s  ({peer * 1e3:.2f} ms)")
    print(f"ratio       {peer / ours:8.2f}x numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
