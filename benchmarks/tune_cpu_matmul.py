"""The tuner on the CPU: the seed matmul tuned by ``ms.tune_tir``, beside numpy in one run.

Tunes ``tilewright.demo.matmul_module(n)`` (float32, n^3) for this machine's cores with the
default search (evolutionary, gradient-boosted cost model), builds the best schedule, checks
it against a float64 reference and times it against numpy's matmul (and the demo's hand
schedule) in interleaved rounds. Prints ours, the peer, the ratio, the trials and the wall
time of tuning.

    python benchmarks/tune_cpu_matmul.py [--size 1024] [--trials 200] [--per-iter 32]
"""

import argparse
import os
import tempfile
import time

import numpy as np

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.demo import cpu_schedule, matmul_module


def _seconds(rt_mod: tw.runtime.Module, args: list[np.ndarray], repeat: int = 5) -> float:
    timer = rt_mod.time_evaluator("main", tw.cpu(0), number=2, repeat=repeat)
    return float(timer(*args).median)


def _numpy_seconds(a: np.ndarray, b: np.ndarray, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(2):
            np.matmul(a, b)
        times.append((time.perf_counter() - start) / 2)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--per-iter", type=int, default=32)
    parser.add_argument("--strategy", default="evolutionary")
    parser.add_argument("--cost-model", default="xgb")
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--seed", type=int, default=0)
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
    rounds: dict[str, list[float]] = {"tuned": [], "hand": [], "numpy": []}
    for _ in range(3):
        for name, m in modules.items():
            rounds[name].append(_seconds(m, arrays[name]))
        rounds["numpy"].append(_numpy_seconds(a, b))
    med = {k: float(np.median(v)) for k, v in rounds.items()}

    print(f"\nmatmul {n}^3 float32 on {os.cpu_count()} cores; work_dir {work_dir}")
    print(
        f"trials {len(records)} ({sum(r.is_valid for r in records)} valid), tuning wall time "
        f"{tuning:.0f} s ({len(records) / tuning * 60:.1f} trials/minute)"
    )
    print(f"best trace:\n{sch.trace}\n")
    for name in ("tuned", "hand", "numpy"):
        print(
            f"{name:>6} {flops / med[name] / 1e9:8.1f} GFLOP/s  ({med[name] * 1e3:.2f} ms, median)"
        )
    print(
        f"ratio  {med['numpy'] / med['tuned']:8.2f}x numpy, "
        f"{med['hand'] / med['tuned']:.2f}x the hand schedule"
    )


if __name__ == "__main__":
    main()
