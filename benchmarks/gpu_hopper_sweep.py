"""The Hopper GEMM's parameters swept by the tuner (issue 14): ``ms.tune_params`` builds
``tilewright.tirx.hopper_gemm`` (``--kernel raw``) or the tile-layer
``tilewright.tirx.tile_hopper_gemm`` (``--kernel tile``, its epilogue swept too) for every
configuration with the tuner's builder, checks each
output against a float32 product of the same random inputs, times it with the tuner's runner
(inputs rotated so that L2 does not flatter) and prints the table, fastest first, beside
cuBLAS (``torch.matmul``) on the same shapes.

    python benchmarks/gpu_hopper_sweep.py [--size 4096] [--dtype float16] [--kernel raw]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
from cuda_events import cuda_median

from tilewright import meta_schedule as ms
from tilewright.tirx.hopper_gemm import hopper_gemm
from tilewright.tirx.tile_hopper_gemm import tile_hopper_gemm

KERNELS = {
    "raw": (hopper_gemm, {"block_n": [128, 256], "stages": [3, 4, 5], "group_m": [4, 8, 16]}),
    "tile": (
        tile_hopper_gemm,
        {"block_n": [128, 256], "stages": [3, 4], "group_m": [4, 8], "epilogue": ["tma", "direct"]},
    ),
}


def reference(a: np.ndarray, bt: np.ndarray, c: np.ndarray) -> None:
    """C = A @ Bt.T in float32, rounded to C's type: called like the kernel."""
    c[...] = a.astype(np.float32) @ bt.astype(np.float32).T


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    parser.add_argument("--kernel", default="raw", choices=sorted(KERNELS))
    args = parser.parse_args()
    n, dtype = args.size, args.dtype
    kernel, space = KERNELS[args.kernel]
    result = ms.tune_params(
        lambda **p: kernel(n, n, n, in_dtype=dtype, out_dtype=dtype, **p),
        space,
        target="cuda",
        reference=reference,
        rtol=2e-2,
        atol=1e-2,
    )
    flops = 2 * n**3
    print(f"{dtype} {n}^3, {len(result.results)} configurations:")
    print(result.table(flops=flops))
    best = result.best
    if best is None:
        print("no configuration ran correctly")
        return 1
    tdt = {"float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    a = torch.rand(n, n, device="cuda", dtype=torch.float32).to(tdt)
    bt = torch.rand(n, n, device="cuda", dtype=torch.float32).to(tdt)
    out = torch.empty(n, n, device="cuda", dtype=tdt)
    peer = cuda_median(lambda: torch.matmul(a, bt.t(), out=out), runs=20, warmup=2)
    ours = best.median_secs
    print(
        f"best {best.params}: {flops / ours / 1e12:.1f} TFLOP/s (the runner's median); cuBLAS "
        f"{flops / peer / 1e12:.1f} TFLOP/s (CUDA events, median of 20); ratio {peer / ours:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
