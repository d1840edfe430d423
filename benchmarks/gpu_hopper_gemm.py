"""Hopper GEMM (issue 14): the warp-specialised, persistent TMA + mbarrier + wgmma GEMM
written in the tile layer (``tilewright.tirx.tile_hopper_gemm``: ``Tx.thread.copy_async``
TMA loads, ``Tx.wg.gemm_async`` on wgmma, a ``stmatrix`` + TMA-store epilogue or stores from
registers) and the same kernel written with the raw intrinsics
(``tilewright.tirx.hopper_gemm``), beside cuBLAS (``torch.matmul(a, bt.t())``).

First small problems with tails in M, N and K and few CTAs, each looping over several tiles
(a wrong or hanging kernel shows in seconds); then ``C = A @ Bt.T`` at 4096^3 and 8192^3 in
float16 and bfloat16 (C in the input type, as cuBLAS writes it). Every problem is checked
against a float64 product first (max error relative to the largest output, 1e-2 at most;
NaN, an element never stored, fails). Timing: CUDA events around 10 queued calls (the
kernels' own time), ours and cuBLAS on the same operands in alternation for 15 rounds
(``cuda_events.paired_medians``: a clock change during the run weighs on both); the ratio
is the median of the rounds' ratios. The kernels take the tensors (``f(a, bt, c)``): their
TMA maps are encoded on the host at launch and passed as ``__grid_constant__`` parameters.
Prints ours, cuBLAS's, the ratio and the SASS counts (cuobjdump) of HGMMA, UTMALDG,
UTMASTG and STSM. A faulthandler watchdog ends the process if a kernel hangs.

    python benchmarks/gpu_hopper_gemm.py [--sizes 4096 8192] [--kernels tile raw]
        [--epilogues tma direct] [--block-n 256] [--stages 4] [--grid CTAS] [--group-m 8]
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
from cuda_events import paired_medians

import tilewright as tw
from tilewright.tirx.hopper_gemm import hopper_gemm
from tilewright.tirx.tile_hopper_gemm import tile_hopper_gemm

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
SASS_OPS = ("HGMMA", "UTMALDG", "UTMASTG", "STSM")


def sass_counts(artifact: tw.artifact.Artifact, ops: tuple[str, ...] = SASS_OPS) -> str:
    """How many of each SASS instruction in ``ops`` the artifact's cubin holds (cuobjdump)."""
    if shutil.which("cuobjdump") is None:
        return "cuobjdump not found"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(artifact.binary)
        sass = subprocess.run(
            ["cuobjdump", "-sass", str(path)], capture_output=True, text=True, check=True
        ).stdout
    counts = {op: len(re.findall(rf"\b{op}\b", sass)) for op in ops}
    return ", ".join(f"{op} {count}" for op, count in counts.items())


def make(kernel: str, m: int, n: int, k: int, dtype: str, **params: object):
    """The GEMM ``PrimFunc``: the tile-layer one (any epilogue) or the raw-intrinsic one."""
    if kernel == "tile":
        return tile_hopper_gemm(m, n, k, in_dtype=dtype, out_dtype=dtype, **params)  # type: ignore[arg-type]
    params.pop("epilogue", None)  # the raw kernel stores from registers
    return hopper_gemm(m, n, k, in_dtype=dtype, out_dtype=dtype, **params)  # type: ignore[arg-type]


def run(kernel: str, m: int, n: int, k: int, dtype: str, timed: bool, **params: object) -> bool:
    """Build, check against float64, and (when ``timed``) time beside cuBLAS."""
    tdt = TORCH_DTYPES[dtype]
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(m, k, device="cuda", generator=gen, dtype=torch.float32).to(tdt) - 0.5
    bt = torch.rand(n, k, device="cuda", generator=gen, dtype=torch.float32).to(tdt) - 0.5
    func = make(kernel, m, n, k, dtype, **params)
    artifact = tw.build_artifact(func, target="cuda")
    f = tw.build(func, target="cuda")
    c = torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
    f(a, bt, c)
    want = a.double() @ bt.double().t()
    error = float((c.double() - want).abs().max()) / float(want.abs().max())
    settings = ", ".join(f"{key} {value}" for key, value in params.items())
    name = f"{kernel:4s} {dtype:8s} {m} x {n} x {k} ({settings})"
    if not error < 1e-2:
        print(f"{name}: WRONG (max relative error {error:.2e})", flush=True)
        return False
    if not timed:
        print(f"{name}: correct (error {error:.1e})", flush=True)
        return True
    out = torch.empty_like(c)
    ours, cublas, ratio = paired_medians(
        lambda: f(a, bt, c), lambda: torch.matmul(a, bt.t(), out=out)
    )
    flops = 2 * m * n * k
    print(
        f"{name}: ours {flops / ours / 1e12:6.1f} TFLOP/s, cuBLAS {flops / cublas / 1e12:6.1f}"
        f", ratio {ratio:.2f} (error {error:.1e}; SASS {sass_counts(artifact)})",
        flush=True,
    )
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="*", default=[4096, 8192])
    parser.add_argument("--kernels", nargs="*", default=["tile", "raw"], choices=["tile", "raw"])
    parser.add_argument("--epilogues", nargs="*", default=["tma", "direct"])
    parser.add_argument("--block-n", type=int, default=256)
    parser.add_argument("--stages", type=int, default=4)
    parser.add_argument("--grid", type=int, help="persistent CTAs (default: one per SM)")
    parser.add_argument("--group-m", type=int, default=8, help="rows of tiles per group")
    parser.add_argument("--watchdog", type=float, default=300, help="seconds before giving up")
    args = parser.parse_args()
    # A kernel waiting on an mbarrier phase that never completes hangs in the driver: dump
    # the traceback and exit instead of spending the caller's whole budget.
    faulthandler.dump_traceback_later(args.watchdog, exit=True)
    grid = args.grid or torch.cuda.get_device_properties(0).multi_processor_count
    config = {"block_n": args.block_n, "stages": args.stages, "grid": grid}
    config["group_m"] = args.group_m
    variants = [
        (kernel, epilogue)
        for kernel in args.kernels
        for epilogue in (args.epilogues if kernel == "tile" else ["direct"])
    ]
    ok = True
    for kernel, epilogue in variants:
        small = dict(config, grid=5, group_m=3, epilogue=epilogue)
        n = 704 if epilogue == "tma" else 700  # TMA: rows a multiple of 16 bytes
        for dtype in ("float16", "bfloat16"):
            if kernel == "tile":  # tails in M, N and K
                ok = run(kernel, 1000, n, 520, dtype, False, **small) and ok
            else:  # the raw kernel takes whole tiles
                ok = run(kernel, 512, 512, 512, dtype, False, **dict(small, grid=3)) and ok
    for size in args.sizes if ok else []:
        for dtype in ("float16", "bfloat16"):
            for kernel, epilogue in variants:
                params = dict(config, epilogue=epilogue)
                ok = run(kernel, size, size, size, dtype, True, **params) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
