"""The sm_80+ tile-layer GEMM (``tilewright.tirx.tile_gemm_mma``: ``Tx.cta.copy`` +
``Tx.warp.gemm`` dispatched to ``mma_sync``: ldmatrix + mma.sync m16n8k16) on the GPU:
correctness only.

``C = A @ B.T`` (A ``m x k``, B ``n x k``, C float32) for float16 and bfloat16 inputs, compared
with the float64 product; prints the max error relative to the largest output. Exit status 1
when an error is 1e-3 or more (float32 accumulation of exact 16-bit products), or when the
build did not dispatch the gemm to ``mma_sync``.

    python benchmarks/gpu_tile_gemm_mma.py [--sizes 64x64x64 128x128x512] [--target cuda]
"""

from __future__ import annotations

import argparse
import faulthandler
import sys

import torch

import tilewright as tw
from tilewright.tirx.tile_gemm_mma import tile_gemm_mma
from tilewright.tirx.transform import LowerTIRx

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def check(m: int, n: int, k: int, dtype: str, target: str) -> bool:
    func = tile_gemm_mma(m, n, k, dtype)
    lower = LowerTIRx(target)
    lower(func)
    variants = [d.variant for d in lower.decisions]
    if "mma_sync" not in variants:
        print(f"{dtype} {m}x{n}x{k}: the gemm did not dispatch to mma_sync: {variants} WRONG")
        return False
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = (torch.rand(m, k, device="cuda", generator=gen) - 0.5).to(TORCH_DTYPES[dtype])
    b = (torch.rand(n, k, device="cuda", generator=gen) - 0.5).to(TORCH_DTYPES[dtype])
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
    f = tw.build(func, target=target)
    f(a, b, c)
    torch.cuda.synchronize()
    want = a.double() @ b.double().t()
    error = float((c.double() - want).abs().max()) / float(want.abs().max())
    ok = error < 1e-3  # NaN (an element never written) fails too
    print(f"{dtype} {m}x{n}x{k}: max relative error {error:.2e} {'ok' if ok else 'WRONG'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", nargs="*", default=["64x64x64", "128x128x512", "192x320x256"])
    parser.add_argument("--target", default="cuda")
    args = parser.parse_args()
    faulthandler.dump_traceback_later(120, exit=True)  # a hung kernel ends the process
    ok = True
    for size in args.sizes:
        m, n, k = (int(x) for x in size.split("x"))
        for dtype in TORCH_DTYPES:
            ok = check(m, n, k, dtype, args.target) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
