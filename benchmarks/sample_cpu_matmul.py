"""Random sampling of the CPU design space beside the demo's hand schedule, in one run.

Draws 64 candidates of the seed matmul (1024^3 float32) from the default "llvm" design
space (``ms.sample_candidates``: no search, no cost model), builds each as C, checks each
against a float64 reference, times it, and prints the best beside the hand schedule of
``tilewright.demo.cpu_schedule`` and numpy, all measured in this run.

    python benchmarks/sample_cpu_matmul.py [--size 1024] [--candidates 64] [--seed 0]
"""

import argparse
import os
import time
from functools import partial

import numpy as np
from cpu_timing import call_seconds, interleaved

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.demo import cpu_schedule, matmul_module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--candidates", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.size
    flops = 2.0 * n**3
    mod = matmul_module(n)

    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)

    def check(rt_mod: tw.runtime.Module) -> list[np.ndarray]:
        c = np.full((n, n), np.nan, dtype=np.float32)
        rt_mod["main"](a, b, c)
        err = float(np.max(np.abs(c - ref) / np.abs(ref)))
        if not err < 1e-4:
            raise AssertionError(f"wrong result: max relative error {err:.2e}")
        return [a, b, c]

    target = f"llvm --num-cores={os.cpu_count()}"
    ctx = ms.TuneContext(mod, target=target, task_name="matmul", rand_state=args.seed)
    start = time.perf_counter()
    candidates, report = ms.sample_candidates(ctx, args.candidates, progress=True)
    print(f"sampled: {report}")

    first: list[tuple[float, int]] = []
    for k, sch in enumerate(candidates):
        rt_mod = tw.build(sch.mod, target="c")
        seconds = call_seconds(partial(rt_mod["main"], *check(rt_mod)), args.repeat)
        first.append((seconds, k))
        print(f"  candidate {k:3d}: {flops / seconds / 1e9:7.1f} GFLOP/s", flush=True)
    elapsed = time.perf_counter() - start

    # The five fastest candidates, the hand schedule and numpy again, interleaved in rounds
    # (cpu_timing); the best candidate is the one with the best median over the rounds.
    top = [k for _, k in sorted(first)[:5]]
    modules = {f"#{k}": tw.build(candidates[k].mod, target="c") for k in top}
    modules["hand"] = tw.build(cpu_schedule(mod).mod, target="c")
    arrays = {name: check(m) for name, m in modules.items()}
    contenders = {name: partial(m["main"], *arrays[name]) for name, m in modules.items()}
    contenders["numpy"] = partial(np.matmul, a, b)
    median, ratio = interleaved(contenders)
    best_name = min((name for name in median if name.startswith("#")), key=median.get)
    best = (median[best_name], int(best_name[1:]))
    ours, hand, peer = median[best_name], median["hand"], median["numpy"]
    for name in modules:
        print(f"  {name:>5}: {flops / median[name] / 1e9:7.1f} GFLOP/s (median of rounds)")
    # Within each round: the best candidate's speed over the hand schedule's.
    per_round, _ = interleaved({"best": contenders[best_name], "hand": contenders["hand"]})
    vs_hand = per_round["hand"] / per_round["best"]

    print(f"\nmatmul {n}^3 float32 on {os.cpu_count()} cores, {len(candidates)} random candidates")
    print(f"sampling, building and timing: {elapsed:.0f} s")
    print(f"best candidate ({best[1]}) trace:\n{candidates[best[1]].trace}\n")
    print(f"best sampled {flops / ours / 1e9:8.1f} GFLOP/s  ({ours * 1e3:.2f} ms, median)")
    print(f"hand (demo)  {flops / hand / 1e9:8.1f} GFLOP/s  ({hand * 1e3:.2f} ms)")
    print(f"numpy        {flops / peer / 1e9:8.1f} GFLOP/s  ({peer * 1e3:.2f} ms)")
    print(
        f"ratio        {vs_hand:8.2f}x the hand schedule (medians timed again, the two "
        f"alone), {ratio[best_name]:.2f}x numpy (median of per-round ratios)"
    )


if __name__ == "__main__":
    main()
