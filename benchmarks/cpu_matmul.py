"""CPU matmul: a hand-written schedule of the seed matmul (1024^3, float32) beside numpy.

The schedule (``tilewright.demo.cpu_schedule``) packs 32-column panels of B into a contiguous
local buffer (`cache_read` + `compute_at`), accumulates 8 x 32 register blocks in a local
buffer (`cache_write` + `reverse_compute_at` + `decompose_reduction`), runs panels in
parallel (OpenMP) and vectorizes the 32 columns. Checks the result against a float64 reference, then
prints GFLOP/s for tilewright and for numpy's matmul (its BLAS) measured in the same run.

    python benchmarks/cpu_matmul.py [--size 1024]
"""

import argparse
import os
from functools import partial

import numpy as np
from cpu_timing import interleaved

import tilewright as tw
from tilewright.demo import cpu_schedule, matmul_module


def numpy_blas() -> str:
    try:
        config = np.show_config(mode="dicts")
        return config["Build Dependencies"]["blas"]["name"]
    except Exception:  # older numpy: no dict mode
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args()
    n = args.size

    sch = cpu_schedule(matmul_module(n))
    rt_mod = tw.build(sch.mod, target="c")
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    c = np.full((n, n), np.nan, dtype=np.float32)
    rt_mod["main"](a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.max(np.abs(c - ref) / np.abs(ref)))
    assert err < 1e-5, f"wrong result: max relative error {err:.2e}"

    # Rotated, paused rounds (cpu_timing): a noisy neighbour slows both alike, and numpy's
    # spinning threads do not slow ours.
    medians, ratios = interleaved(
        {"ours": partial(rt_mod["main"], a, b, c), "numpy": partial(np.matmul, a, b)}
    )
    ours, peer = medians["ours"], medians["numpy"]
    flops = 2.0 * n**3
    print(f"matmul {n}^3 float32 on {os.cpu_count()} cores; numpy BLAS: {numpy_blas()}")
    print(f"max relative error vs float64: {err:.1e}")
    print(f"tilewright {flops / ours / 1e9:8.1f} GFLOP/s  ({ours * 1e3:.2f} ms, median)")
    print(f"numpy      {flops / peer / 1e9:8.1f} GFLOP/s  ({peer * 1e3:.2f} ms, median)")
    print(f"ratio      {ratios['ours']:8.2f}x numpy (median of the per-round ratios)")


if __name__ == "__main__":
    main()
