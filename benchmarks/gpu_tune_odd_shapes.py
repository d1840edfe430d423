"""The tuner on problems with odd sizes, within a wall-time budget, and its 10 best
candidates of each checked against float64: a 1000 x 1320 x 520 float32 matmul (tiles leave
tails in every dimension), softmax over 4095 x 1000 rows, and a 3 x 3 convolution with
stride 2 over a 57 x 57 image (the last output row and column read a short window).

Each workload is tuned by ``ms.tune_tir(..., max_seconds=B)``; the line ``tuning took T s of
a B s budget`` is the budget check (the tuner may not start work that cannot finish inside
it). Then the database's 10 fastest valid candidates are replayed, built and run once each on
fresh inputs whose outputs are filled with NaN (an element never written fails), and
compared with the workload's float64 numpy reference.

    python benchmarks/gpu_tune_odd_shapes.py [--only matmul] [--seconds 300 60 60]

Writes ``$OUT/gpu_tune_odd_shapes.json`` when ``$OUT`` is set; exits 1 when a candidate is
wrong or a session overruns its budget by more than 5%.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.ir import IRModule
from tilewright.meta_schedule.testing import workload_programs as programs
from tilewright.meta_schedule.testing.workloads import WORKLOADS, conv2d_nhwc_reference

TOP = 10
SLACK = 1.05  # a session may end at most 5% past its budget


def workloads() -> dict[str, tuple[IRModule, object, int]]:
    """Name -> (module, float64 reference taking every parameter, FLOPs)."""
    conv = {"n": 4, "h": 57, "w": 57, "ci": 64, "co": 96}
    out = (57 - 1) // 2 + 1
    return {
        "matmul": (
            IRModule({"main": WORKLOADS["matmul"].func(m=1000, n=1320, k=520)}),
            WORKLOADS["matmul"].reference,
            2 * 1000 * 1320 * 520,
        ),
        "softmax": (
            IRModule({"main": WORKLOADS["softmax"].func(m=4095, n=1000)}),
            WORKLOADS["softmax"].reference,
            5 * 4095 * 1000,
        ),
        "conv2d_stride2": (
            IRModule({"main": programs.conv2d_nhwc(**conv, stride=2)}),
            conv2d_nhwc_reference(2),
            2 * conv["n"] * out * out * conv["co"] * conv["ci"] * 9,
        ),
    }


def check(record: ms.database.TuningRecord, reference, rng: np.random.Generator) -> dict:
    """Replay, build and run one candidate on fresh inputs; compare with float64."""
    mod = record.as_schedule().mod
    rt_mod = tw.build(mod, target="cuda")
    func = mod["main"]
    shapes = [tuple(d.value for d in func.buffer_of(p).shape) for p in func.params]
    host = [rng.standard_normal(s).astype("float32") for s in shapes[:-1]]
    host.append(np.full(shapes[-1], np.nan, dtype="float32"))
    dev = tw.cuda(0)
    arrays = [tw.nd.array(a, dev) for a in host]
    rt_mod["main"](*arrays)
    got = arrays[-1].numpy().astype(np.float64)
    expected = np.asarray(reference(*host)[-1], dtype=np.float64)
    scale = float(np.abs(expected).max()) or 1.0
    error = float(np.nanmax(np.abs(got - expected))) / scale if np.isfinite(got).any() else 1.0
    missing = int(np.isnan(got).sum())
    return {
        "median_ms": record.median_secs * 1e3,
        "max_error": error,
        "never_written": missing,
        "ok": missing == 0 and error < 1e-4,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=list(workloads()))
    parser.add_argument(
        "--seconds", nargs="*", type=float, default=[300.0, 60.0, 60.0],
        help="each workload's budget, in --only's order",
    )  # fmt: skip
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--per-iter", type=int, default=64)
    parser.add_argument("--work-dir", help="keep the databases under this folder")
    args = parser.parse_args()
    table = workloads()
    report: dict[str, dict] = {}
    failed = False
    for name, seconds in zip(args.only, args.seconds):
        mod, reference, flops = table[name]
        work_dir = (
            os.path.join(args.work_dir, name) if args.work_dir else tempfile.mkdtemp(prefix=name)
        )
        start = time.perf_counter()
        db = ms.tune_tir(
            mod,
            "nvidia/h200",
            work_dir=work_dir,
            max_trials_global=args.trials,
            num_trials_per_iter=args.per_iter,
            max_seconds=seconds,
        )
        took = time.perf_counter() - start
        records = db.get_all_tuning_records()
        trials = len({r.candidate_shash for r in records})
        over = took > seconds * SLACK
        print(
            f"{name}: tuning took {took:.1f} s of a {seconds:g} s budget "
            f"({'OVER' if over else 'within'} {SLACK:.2f}x), {trials} trials",
            flush=True,
        )
        top = db.get_top_k(records[0].workload, TOP) if records else []
        rng = np.random.default_rng(1)
        checked = []
        for rank, record in enumerate(top, 1):
            result = check(record, reference, rng)
            checked.append(result)
            print(
                f"  #{rank:2} {flops / record.median_secs / 1e9:9.1f} GFLOP/s  max error "
                f"{result['max_error']:.1e}  never written {result['never_written']}  "
                f"{'ok' if result['ok'] else 'WRONG'}",
                flush=True,
            )
        wrong = sum(not r["ok"] for r in checked)
        failed |= over or wrong > 0 or len(checked) < TOP
        print(f"{name}: {len(checked) - wrong} of {len(checked)} best candidates correct")
        report[name] = {
            "budget_s": seconds,
            "tuning_s": took,
            "trials": trials,
            "candidates": checked,
        }
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_tune_odd_shapes.json").write_text(json.dumps(report))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
