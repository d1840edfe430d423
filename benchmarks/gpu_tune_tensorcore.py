"""The tuner with the tensor-core rule on the GPU: float16 x float16 -> float32 GEMM at 4096^3
tuned by ``ms.tune_tir`` (``MultiLevelTilingTensorCore`` in the CUDA defaults) within a trial
and time budget; then the best candidate, the hand schedule (the best configuration of
``gpu_tensorcore.py``) and cuBLAS (``torch.matmul`` on the same float16 inputs) timed in one
run, each checked against float64 first, then timed against cuBLAS in alternation
(``cuda_events.paired_medians``: 10 queued calls a sample, 15 rounds, the median of the
rounds' ratios) and each in its own steady state (``cuda_events.sustained_medians``, see
``gpu_tensorcore.py``), and tuned against hand both ways. Prints the three, the ratios, the
trials and the tuning wall time.

The tuner's runner runs each candidate untimed for ``--warmup-ms`` first (700 by default,
``EvaluatorConfig.warmup_ms``): under the board's power limit the clock a kernel keeps
depends on its own power draw, and candidates timed in their first milliseconds at the
boost clock rank otherwise than they run for longer (the 128x128 tiles first, 5% ahead of
the 256x128 ones, where in their steady states the 256x128 tiles run 3-5% faster).

    python benchmarks/gpu_tune_tensorcore.py [--trials 1000] [--seconds 230] [--hand NAME]
        [--work-dir DIR] [--warmup-ms MS]
"""

from __future__ import annotations

import argparse
import functools
import os
import tempfile
import time

import torch
from cuda_events import paired_medians, sustained_medians
from gpu_tensorcore import CONFIGS, problem

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.ir import IRModule
from tilewright.meta_schedule.testing.tensor_core import mma_matmul, schedule_mma
from tilewright.schedule import Schedule

N = 4096
HAND = "256x128, 8 warps of 64x64, k64, 3 stages, nested"


def _check(func, inputs) -> tuple[object, float]:
    """(a call of ``func`` on the inputs, max error relative to the largest output)."""
    a, b, want, scale = inputs
    c = torch.full((N, N), float("nan"), device="cuda")
    func(a, b, c)
    error = float((c.double() - want).abs().max()) / scale
    return functools.partial(func, a, b, c), error


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("TUNE_SECONDS", 230)))
    parser.add_argument("--per-iter", type=int, default=64)
    parser.add_argument("--hand", default=HAND, choices=sorted(CONFIGS))
    parser.add_argument("--work-dir", help="the tuning work_dir (default: a new one)")
    parser.add_argument(
        "--warmup-ms",
        type=float,
        default=700,
        help="each candidate run untimed this long first: timed at its steady-state clock",
    )
    args = parser.parse_args()
    mod = IRModule({"main": mma_matmul(N, N, N)})
    start = time.perf_counter()
    db = ms.tune_tir(
        mod,
        "cuda",
        work_dir=args.work_dir or tempfile.mkdtemp(prefix="tune-tensorcore-"),
        max_trials_global=args.trials,
        num_trials_per_iter=args.per_iter,
        max_seconds=args.seconds,
        runner=ms.runner.LocalRunner(
            evaluator_config=ms.runner.EvaluatorConfig(warmup_ms=args.warmup_ms)
        ),
    )
    tuning = time.perf_counter() - start
    records = db.get_all_tuning_records()
    trials = len({r.candidate_shash for r in records})
    valid = len({r.candidate_shash for r in records if r.is_valid})
    print(f"{trials} trials ({valid} valid) in {tuning:.0f} s", flush=True)
    sch = ms.tir_integration.compile_tir(db, mod, "cuda")
    if sch is None:
        print("no candidate ran correctly")
        return 1
    decisions = [i.decision for i in sch.trace.insts if i.kind == "sample_perfect_tile"]
    print(f"best candidate's tiles (i, j: blocks/warps/fragments; k: steps/fragments): {decisions}")
    inputs, _ = problem(N, "float16")
    tuned, tuned_error = _check(tw.build(sch.mod, target="cuda")["main"], inputs)
    hand_sch = schedule_mma(Schedule(mma_matmul(N, N, N)), **CONFIGS[args.hand])
    print(f"hand schedule: {args.hand}")
    hand, hand_error = _check(tw.build(hand_sch.mod, target="cuda")["main"], inputs)
    for name, error in (("tuned", tuned_error), ("hand", hand_error)):
        if not error < 1e-2:
            print(f"{name}: WRONG (max relative error {error:.2e})")
            return 1
    a, b = inputs[:2]
    out = torch.empty(N, N, device="cuda", dtype=torch.float16)
    flops = 2 * N**3

    def cublas():
        torch.matmul(a, b, out=out)

    for name, call, error in (("tuned", tuned, tuned_error), ("hand", hand, hand_error)):
        ours, peer, ratio = paired_medians(call, cublas)
        alone, peer_alone, steady, _ = sustained_medians(call, cublas)
        print(
            f"{name:6s} {flops / ours / 1e12:7.1f} TFLOP/s  {ratio:.2f}x cuBLAS "
            f"({flops / peer / 1e12:.1f}) in alternation; {flops / alone / 1e12:7.1f} TFLOP/s  "
            f"{steady:.2f}x cuBLAS ({flops / peer_alone / 1e12:.1f}) each alone  "
            f"(error {error:.1e})",
            flush=True,
        )
    _, _, tuned_over_hand = paired_medians(tuned, hand)
    _, _, steady_over_hand, _ = sustained_medians(tuned, hand)
    print(
        f"tuned / hand: {tuned_over_hand:.2f}x in alternation, {steady_over_hand:.2f}x each alone"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
