"""The tile-layer Hopper GEMM (issue 14): ``tilewright.tirx.tile_hopper_gemm`` (TMA loads by
``Tx.thread.copy_async``, ``Tx.wg.gemm_async`` on wgmma, a warp-specialised persistent ring)
beside cuBLAS (``torch.matmul(a, bt.t())``).

First a small problem with tails in M, N and K (a wrong or hanging kernel shows in seconds),
then ``C = A @ Bt.T`` at 4096^3 and 8192^3 in float16 and bfloat16 (C in the input type, as
cuBLAS writes it). Every problem is checked against a float64 product before it is timed
(max error relative to the largest output: at most 1e-2). Timing: CUDA events around 10
queued calls (the kernels' own time), median of 20 samples; the same for cuBLAS on the same
operands. A faulthandler watchdog ends the process if a kernel hangs.

    python benchmarks/gpu_tile_hopper_gemm.py [--sizes 4096 8192] [--block-n 256]
        [--stages 4] [--grid CTAS] [--group-m 8] [--watchdog 240]
"""

from __future__ import annotations

import argparse
import faulthandler
import sys

import torch
from cuda_events import cuda_median

import tilewright as tw
from tilewright.tirx.tile_hopper_gemm import tile_hopper_gemm

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def check_and_time(m: int, n: int, k: int, dtype: str, timed: bool, **kwargs: int) -> bool:
    """Build, check against float64, and (when ``timed``) time beside cuBLAS."""
    tdt = TORCH_DTYPES[dtype]
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(m, k, device="cuda", generator=gen, dtype=torch.float32).to(tdt) - 0.5
    bt = torch.rand(n, k, device="cuda", generator=gen, dtype=torch.float32).to(tdt) - 0.5
    func = tile_hopper_gemm(m, n, k, in_dtype=dtype, out_dtype=dtype, **kwargs)
    f = tw.build(func, target="cuda")
    c = torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
    f(a, bt, c)  # A's and Bt's TMA maps are encoded from the tensors at launch
    want = a.double() @ bt.double().t()
    error = float((c.double() - want).abs().max()) / float(want.abs().max())
    settings = ", ".join(f"{key} {value}" for key, value in kwargs.items())
    name = f"{dtype} {m} x {n} x {k} ({settings})"
    if not error < 1e-2:  # NaN (an element never stored) fails too
        print(f"{name}: WRONG (max relative error {error:.2e})", flush=True)
        return False
    if not timed:
        print(f"{name}: correct (error {error:.1e})", flush=True)
        return True
    out = torch.empty_like(c)
    cublas = cuda_median(lambda: torch.matmul(a, bt.t(), out=out), runs=20, warmup=2, calls=10)
    ours = cuda_median(lambda: f(a, bt, c), runs=20, warmup=2, calls=10)
    flops = 2 * m * n * k
    print(
        f"{name}: ours {flops / ours / 1e12:6.1f} TFLOP/s, cuBLAS {flops / cublas / 1e12:6.1f}"
        f", ratio {cublas / ours:.2f} (error {error:.1e})",
        flush=True,
    )
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="*", default=[4096, 8192])
    parser.add_argument("--block-n", type=int, default=256)
    parser.add_argument("--stages", type=int, default=4)
    parser.add_argument("--grid", type=int, help="persistent CTAs (default: one per SM)")
    parser.add_argument("--group-m", type=int, default=8, help="rows of tiles per group")
    parser.add_argument("--watchdog", type=float, default=240, help="seconds before giving up")
    args = parser.parse_args()
    # A kernel waiting on an mbarrier phase that never completes hangs in the driver: dump
    # the traceback and exit instead of spending the caller's whole budget.
    faulthandler.dump_traceback_later(args.watchdog, exit=True)
    grid = args.grid or torch.cuda.get_device_properties(0).multi_processor_count
    config = {"block_n": args.block_n, "stages": args.stages, "grid": grid}
    config["group_m"] = args.group_m
    # Tails everywhere, few CTAs (each loops over several tiles): fast to fail.
    ok = check_and_time(1000, 700, 520, "float16", False, **dict(config, grid=5, group_m=3))
    for dtype in ("float16", "bfloat16"):
        for size in args.sizes if ok else []:
            ok = check_and_time(size, size, size, dtype, True, **config) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
