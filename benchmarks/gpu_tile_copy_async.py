"""The ``copy_async`` examples (``tilewright.tirx.tile_copy_async``) on the GPU: correctness only.

``tma_copy`` (one thread's TMA load into a 128-byte-swizzled shared tile, an mbarrier wait,
``Tx.cta.copy`` out; sm_90) and ``cp_async_copy`` (cp.async into shared memory, a group wait,
``Tx.cta.copy`` out; sm_80+) must both leave ``B`` bit-for-bit equal to ``A``. Exit status 1
otherwise.

    python benchmarks/gpu_tile_copy_async.py [--sizes 128x64 256x128 1024x512]
"""

from __future__ import annotations

import argparse
import faulthandler
import sys

import torch

import tilewright as tw
from tilewright.tirx.tile_copy_async import cp_async_copy, tma_copy


def check(name: str, factory, m: int, n: int) -> bool:
    a = torch.randn(m, n, device="cuda").to(torch.float16)
    b = torch.full_like(a, float("nan"))
    f = tw.build(factory(m, n), target="cuda")
    f(a, b)
    torch.cuda.synchronize()
    ok = torch.equal(a.view(torch.int16), b.view(torch.int16))  # bit-exact, NaN never equal
    print(f"{name} {m}x{n}: {'ok' if ok else 'WRONG'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", nargs="*", default=["128x64", "256x128", "1024x512"])
    args = parser.parse_args()
    faulthandler.dump_traceback_later(120, exit=True)  # a hung kernel ends the process
    ok = True
    for size in args.sizes:
        m, n = (int(x) for x in size.split("x"))
        ok = check("tma_copy", tma_copy, m, n) and ok
        ok = check("cp_async_copy", cp_async_copy, m, n) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
