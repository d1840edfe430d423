"""The tuner on the CPU: the seed matmul tuned by ``ms.tune_tir``, beside numpy in one run.

Tunes ``tilewright.demo.matmul_module(n)`` (float32, n^3) for this machine's cores with the
default search (evolutionary, gradient-boosted cost model), builds the best schedule, checks
it against a float64 reference and times it against numpy's matmul (and the demo's hand
schedule) in interleaved rounds. Prints ours, the peer, the ratio, the trials and the wall
time of tuning.

    python benchmarks/tune_cpu_matmul.py [--size 1024] [--trials 200] [--per-iter 32]
        [--seconds 300]

With ``--seconds`` the session has a wall-time budget (``max_seconds``): the line
``tuning wall time`` then says how it ended against it.
"""

import argparse
import os
import tempfile
import time
from functools import partial

import numpy as np
from cpu_timing import interleaved

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.demo import cpu_schedule, matmul_module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--per-iter", type=int, default=32)
    parser.add_argument("--strategy", default="evolutionary")
    parser.add_argument("--cost-model", default="xgb")
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=None, help="a wall-time budget")
    args = parser.parse_args()
    n = args.size
    flops = 2.0 * n**3
    mod = matmul_module(n)
    target = f"llvm --num-cores={os.cpu_count()}"
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="tune-cpu-matmul-")

    start = time.perf_counter()
    database = ms.tune_tir(
        mod,
        target,
        work_dir=work_dir,
        max_trials_global=args.trials,
        num_trials_per_iter=args.per_iter,
        strategy=args.strategy,
        cost_model=args.cost_model,
        seed=args.seed,
        max_seconds=args.seconds,
    )
    tuning = time.perf_counter() - start
    sch = ms.tir_integration.compile_tir(database, mod, target)
    if sch is None:
        raise SystemExit("no candidate ran correctly: nothing to compare")
    records = database.get_all_tuning_records()

    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    modules = {
        "tuned": tw.build(sch.mod, target="c"),
        "hand": tw.build(cpu_schedule(mod).mod, target="c"),
    }
    arrays = {}
    for name, m in modules.items():
        c = np.full((n, n), np.nan, dtype=np.float32)
        m["main"](a, b, c)
        err = float(np.max(np.abs(c - ref) / np.abs(ref)))
        if not err < 1e-4:
            raise AssertionError(f"{name}: wrong result, max relative error {err:.2e}")
        arrays[name] = [a, b, c]
    contenders = {name: partial(m["main"], *arrays[name]) for name, m in modules.items()}
    contenders["numpy"] = partial(np.matmul, a, b)
    med, ratio = interleaved(contenders)
    candidates = {r.candidate_shash for r in records}
    leaders = database.get_top_k(records[0].workload, 1)

    print(f"\nmatmul {n}^3 float32 on {os.cpu_count()} cores; work_dir {work_dir}")
    valid = {r.candidate_shash for r in records if r.is_valid}
    print(
        f"trials {len(candidates)} ({len(valid)} valid; {len(records)} measurements with the "
        f"leaders timed again), tuning wall time {tuning:.0f} s "
        f"({len(candidates) / tuning * 60:.1f} trials/minute)"
        + (f"; budget {args.seconds:g} s" if args.seconds else "")
    )
    if leaders:
        in_tuner = flops / leaders[0].median_secs / 1e9
        print(f"in the tuner: {in_tuner:.1f} GFLOP/s (median of the best candidate's timings)")
    print(f"best trace:\n{sch.trace}\n")
    for name in ("tuned", "hand", "numpy"):
        print(
            f"{name:>6} {flops / med[name] / 1e9:8.1f} GFLOP/s  ({med[name] * 1e3:.2f} ms, median)"
        )
    print(
        f"ratio  {ratio['tuned']:8.2f}x numpy, hand {ratio['hand']:.2f}x numpy "
        "(medians of the per-round ratios)"
    )


if __name__ == "__main__":
    main()
