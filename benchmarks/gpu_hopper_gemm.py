"""Hopper GEMM (issue 14): the warp-specialised TMA + mbarrier + wgmma kernel of
``tilewright.tirx.hopper_gemm`` beside cuBLAS (``torch.matmul``).

``C = A @ Bt.T`` in float16 and bfloat16 at 4096^3 and 8192^3 (C in the input dtype, as
cuBLAS writes it): checked against a float64 product first (max error relative to the
largest output, 1e-2 at most), then timed with CUDA events (median of 20 single calls);
cuBLAS multiplies the same operands (``torch.matmul(a, bt.t())``). The kernel takes the
tensors themselves (``f(a, bt, c)``): their TMA maps are encoded on the host at launch and
passed as ``__grid_constant__`` parameters. Prints ours, cuBLAS's, the
ratio, and the SASS counts of HGMMA and UTMALDG when ``cuobjdump`` is on the path.

    python benchmarks/gpu_hopper_gemm.py [--sizes 4096 8192] [--block-n 128] [--stages 4]
        [--grid CTAS] [--group-m 8]
"""

from __future__ import annotations

import argparse
import faulthandler
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from cuda_events import cuda_median

import tilewright as tw
from tilewright.tirx.hopper_gemm import hopper_gemm

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def sass_counts(artifact: tw.artifact.Artifact) -> str:
    if shutil.which("cuobjdump") is None:
        return "cuobjdump not found"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(artifact.binary)
        sass = subprocess.run(
            ["cuobjdump", "-sass", str(path)], capture_output=True, text=True, check=True
        ).stdout
    counts = {op: len(re.findall(rf"\b{op}\b", sass)) for op in ("HGMMA", "UTMALDG")}
    return ", ".join(f"{op} {count}" for op, count in counts.items())


def run(n: int, dtype: str, block_n: int, stages: int, grid: int, group_m: int) -> bool:
    tdt = TORCH_DTYPES[dtype]
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(n, n, device="cuda", generator=gen, dtype=torch.float32).to(tdt) - 0.5
    bt = torch.rand(n, n, device="cuda", generator=gen, dtype=torch.float32).to(tdt) - 0.5
    func = hopper_gemm(
        n, n, n, block_n=block_n, stages=stages, in_dtype=dtype, out_dtype=dtype, grid=grid,
        group_m=group_m,
    )  # fmt: skip
    artifact = tw.build_artifact(func, target="cuda")
    f = tw.build(func, target="cuda")
    c = torch.full((n, n), float("nan"), device="cuda", dtype=tdt)
    f(a, bt, c)  # the TMA maps of a and bt are encoded at launch
    want = a.double() @ bt.double().t()
    scale = float(want.abs().max())
    error = float((c.double() - want).abs().max()) / scale
    name = f"{dtype} {n}^3, 128x{block_n} tile, {stages} stages, {grid} CTAs, groups of {group_m}"
    if not error < 1e-2:
        print(f"{name}: WRONG (max relative error {error:.2e})", flush=True)
        return False
    out = torch.empty_like(c)
    # Queued: 10 calls between two events, the kernels' own time; single: one call, the
    # host's launch included.
    peer = cuda_median(lambda: torch.matmul(a, bt.t(), out=out), runs=20, warmup=2, calls=10)
    ours = cuda_median(lambda: f(a, bt, c), runs=20, warmup=2, calls=10)
    peer1 = cuda_median(lambda: torch.matmul(a, bt.t(), out=out), runs=20, warmup=2)
    ours1 = cuda_median(lambda: f(a, bt, c), runs=20, warmup=2)
    flops = 2 * n**3
    print(
        f"{name}: ours {flops / ours / 1e12:6.1f} TFLOP/s, cuBLAS {flops / peer / 1e12:6.1f}, "
        f"ratio {peer / ours:.2f}; one call at a time {flops / ours1 / 1e12:6.1f} vs "
        f"{flops / peer1 / 1e12:6.1f}, ratio {peer1 / ours1:.2f} (error {error:.1e}; SASS "
        f"{sass_counts(artifact)})",
        flush=True,
    )
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="*", default=[4096, 8192])
    parser.add_argument("--block-n", type=int, default=128)
    parser.add_argument("--stages", type=int, default=4)
    parser.add_argument("--grid", type=int, help="persistent CTAs (default: one per SM)")
    parser.add_argument("--group-m", type=int, default=8, help="rows of tiles per group")
    parser.add_argument("--watchdog", type=float, default=240, help="seconds before giving up")
    args = parser.parse_args()
    # A kernel that waits on an mbarrier nobody completes hangs in the driver: end the process
    # (with a traceback) instead of the caller's whole time budget.
    faulthandler.dump_traceback_later(args.watchdog, exit=True)
    grid = args.grid or torch.cuda.get_device_properties(0).multi_processor_count
    config = (args.block_n, args.stages, grid, args.group_m)
    # A small problem first: a wrong or hanging kernel shows in seconds (with few CTAs, so
    # that each loops over several tiles).
    ok = run(512, "float16", args.block_n, args.stages, 3, 2)
    for dtype in ("float16", "bfloat16"):
        for n in args.sizes if ok else []:
            ok = run(n, dtype, *config) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
