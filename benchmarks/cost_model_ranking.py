"""How well the cost models rank candidates they have not seen: measured random candidates
of a CPU workload, a model trained on three quarters of them, scored on the rest.

Samples ``--candidates`` candidates of ``matmul`` (``--size``³) from the CPU design space,
builds them as C (``--jobs`` processes), times each one alone with ``time_evaluator``
after checking its output against numpy (a wrong or failing candidate counts as failed).
Then, for ``--splits`` random 3/4 : 1/4 splits, trains each model on the first part and
reports on the held-out part:

- recall@8: how many of the true 8 fastest held-out candidates the model puts in its top 8,
- recall@16: ... in its top 16,
- pairwise: the fraction of held-out pairs (of different times) the model orders right.

``--cache FILE`` keeps the measurements (and reuses them when the file exists).

    python benchmarks/cost_model_ranking.py [--candidates 160] [--size 256] [--cache m.npz]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.meta_schedule.arg_info import ArgInfo
from tilewright.meta_schedule.cost_model import RandomModel, XGBModel
from tilewright.meta_schedule.feature_extractor import PerStoreFeature
from tilewright.meta_schedule.runner.runner import RunnerResult
from tilewright.meta_schedule.search_strategy.search_strategy import MeasureCandidate
from tilewright.meta_schedule.testing.workloads import WORKLOADS

TARGET = "llvm --num-cores=2"


def _build(mod: tw.IRModule) -> bytes | str:
    try:
        return tw.build_artifact(mod, TARGET).to_bytes()
    except Exception as err:  # a candidate that fails to build counts as failed
        return f"{type(err).__name__}: {err}"


def _measure(payload: bytes | str, size: int) -> float:
    if isinstance(payload, str):
        return math.inf
    rt_mod = tw.runtime.load(tw.artifact.Artifact.from_bytes(payload))
    rng = np.random.default_rng(0)
    a = rng.random((size, size), dtype=np.float32)
    b = rng.random((size, size), dtype=np.float32)
    c = np.zeros((size, size), np.float32)
    try:
        rt_mod["main"](a, b, c)
    except Exception:
        return math.inf
    if not np.allclose(c, a @ b, rtol=1e-3, atol=1e-3):
        return math.inf
    timer = rt_mod.time_evaluator("main", tw.cpu(0), number=2, repeat=3, min_repeat_ms=10)
    return float(np.median(timer(a, b, c).results))


def measure(args: argparse.Namespace) -> tuple[ms.TuneContext, list[MeasureCandidate], np.ndarray]:
    workload = WORKLOADS["matmul"]
    mod = workload.func(m=args.size, n=args.size, k=args.size)
    ctx = ms.TuneContext(mod=mod, target=TARGET, task_name="matmul", rand_state=args.seed)
    start = time.perf_counter()
    schedules, report = ms.sample_candidates(ctx, args.candidates)
    print(f"sampled: {report}")
    infos = tuple(ArgInfo.from_entry_func(ctx.mod))
    candidates = [MeasureCandidate(sch, infos) for sch in schedules]
    if args.cache and os.path.exists(args.cache):
        costs = np.load(args.cache)["costs"]
        if len(costs) == len(candidates):
            print(f"measurements from {args.cache}")
            return ctx, candidates, costs
    with ProcessPoolExecutor(args.jobs) as pool:
        payloads = list(pool.map(_build, [s.mod for s in schedules]))
    built = time.perf_counter()
    costs = np.array([_measure(p, args.size) for p in payloads])
    failed = int(np.sum(~np.isfinite(costs)))
    print(
        f"built {len(payloads)} in {built - start:.0f} s, measured in "
        f"{time.perf_counter() - built:.0f} s; {failed} failed; fastest "
        f"{np.min(costs) * 1e3:.3f} ms, median {np.median(costs[np.isfinite(costs)]) * 1e3:.3f} ms"
    )
    if args.cache:
        np.savez(args.cache, costs=costs)
    return ctx, candidates, costs


def ranking_scores(costs: np.ndarray, scores: np.ndarray) -> tuple[float, float, float]:
    """(recall@8, recall@16, pairwise accuracy) of ``scores`` (higher: faster) against the
    measured ``costs`` (lower: faster)."""
    true_top = set(np.argsort(costs, kind="stable")[:8])
    order = np.argsort(-scores, kind="stable")
    recall8 = len(true_top & set(order[:8])) / len(true_top)
    recall16 = len(true_top & set(order[:16])) / len(true_top)
    right = total = 0
    for i in range(len(costs)):
        for j in range(i + 1, len(costs)):
            if costs[i] == costs[j]:
                continue
            total += 1
            right += (costs[i] < costs[j]) == (scores[i] > scores[j])
    return recall8, recall16, right / total if total else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--candidates", type=int, default=160)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", default="")
    args = parser.parse_args()
    ctx, candidates, costs = measure(args)

    start = time.perf_counter()
    PerStoreFeature().extract_from(ctx, candidates)
    per_candidate = (time.perf_counter() - start) / len(candidates)
    print(f"features: {per_candidate * 1e3:.1f} ms per candidate")

    models = {
        "XGBModel(reg)": lambda seed: XGBModel(objective="reg"),
        "XGBModel(rank)": lambda seed: XGBModel(objective="rank"),
        "RandomModel": lambda seed: RandomModel(seed=seed),
    }
    rows: dict[str, list[tuple[float, ...]]] = {name: [] for name in models}
    rng = np.random.default_rng(args.seed)
    for split in range(args.splits):
        order = rng.permutation(len(candidates))
        cut = len(order) * 3 // 4
        train, test = order[:cut], order[cut:]
        results = [
            RunnerResult(run_secs=(float(costs[n]),)) if math.isfinite(costs[n]) else
            RunnerResult(error_msg="failed")
            for n in train
        ]  # fmt: skip
        for name, make in models.items():
            model = make(args.seed + split)
            start = time.perf_counter()
            model.update(ctx, [candidates[n] for n in train], results)
            trained = time.perf_counter() - start
            scores = model.predict(ctx, [candidates[n] for n in test])
            rows[name].append((*ranking_scores(costs[test], scores), trained))

    print(f"\nheld-out quarter of {len(candidates)} candidates, mean of {args.splits} splits")
    print(f"{'model':<16} {'recall@8':>9} {'recall@16':>10} {'pairwise':>9} {'update s':>9}")
    for name, values in rows.items():
        r8, r16, pairs, secs = np.mean(values, axis=0)
        print(f"{name:<16} {r8:>9.2f} {r16:>10.2f} {pairs:>9.2f} {secs:>9.2f}")


if __name__ == "__main__":
    main()
