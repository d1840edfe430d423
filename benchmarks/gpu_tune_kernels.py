"""The tuner on the GPU: float32 matmul 4096^3, softmax and layer norm over 4096 x 4096, each
tuned by ``ms.tune_tir`` within a trial and time budget, then timed beside torch (matmul:
``torch.matmul`` with TF32 off, i.e. cuBLAS float32) in interleaved rounds. Prints ours, the
peer, the ratio, the trials, the tuning wall time and trials per minute.

    python benchmarks/gpu_tune_kernels.py [--only matmul] [--trials 1000] [--seconds 100]

(default budget 100 s a workload, $TUNE_SECONDS: the three fit gpu-check's 540 s per benchmark)
"""

import argparse
import os
import tempfile
import time

import numpy as np
import torch
from cuda_events import cuda_median

import tilewright as tw
from tilewright import meta_schedule as ms
from tilewright.ir import IRModule
from tilewright.meta_schedule.testing.workloads import WORKLOADS

SIZES = {
    "matmul": {"m": 4096, "n": 4096, "k": 4096},
    "softmax": {"m": 4096, "n": 4096},
    "layer_norm": {"m": 4096, "n": 4096},
}


def _peer(name: str, args: list[torch.Tensor]) -> torch.Tensor:
    if name == "matmul":
        return torch.matmul(args[0], args[1])
    if name == "softmax":
        return torch.softmax(args[0], dim=-1)
    x, gamma, beta = args[:3]
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), gamma, beta, eps=1e-5)


def _median_ms(fn, repeat: int = 20, calls: int = 1) -> float:
    """Median over ``repeat`` samples of the milliseconds per call of ``calls`` back-to-back
    calls between two CUDA events: with one call the host's launch overhead counts, with
    many the launches queue and the kernels' own time shows."""
    return cuda_median(fn, runs=repeat, warmup=1, calls=calls) * 1e3


def _print_phases(work_dir: str) -> None:
    """The tuning log's per-round phase times (search, build, run), where the time went."""
    path = os.path.join(work_dir, "logs", "tune.log")
    if not os.path.exists(path):
        return
    with open(path) as f:
        rounds = [line.rstrip() for line in f if ": search " in line or "timed " in line]
    for line in rounds:
        print("  " + line.split("] ", 1)[-1])


def run(name: str, trials: int, seconds: float, per_iter: int, work_root: str | None) -> None:
    w = WORKLOADS[name]
    mod = IRModule({"main": w.func(**SIZES[name])})
    flops = w.flops(**SIZES[name])
    if work_root:
        work_dir = os.path.join(work_root, f"tune-{name}")
        os.makedirs(work_dir, exist_ok=True)
    else:
        work_dir = tempfile.mkdtemp(prefix=f"tune-{name}-")
    start = time.perf_counter()
    db = ms.tune_tir(
        mod,
        "cuda",
        work_dir=work_dir,
        max_trials_global=trials,
        num_trials_per_iter=per_iter,
        max_seconds=seconds,
    )
    tuning = time.perf_counter() - start
    _print_phases(work_dir)
    records = db.get_all_tuning_records()
    sch = ms.tir_integration.compile_tir(db, mod, "cuda")
    if sch is None:
        print(f"{name}: no candidate ran correctly in {len(records)} trials")
        return
    decisions = [inst.decision for inst in sch.trace.insts if inst.decision is not None]
    print(f"{name}: the best candidate's decisions {decisions}")
    rt_mod = tw.build(sch.mod, target="cuda")
    dev = tw.cuda(0)
    rng = np.random.default_rng(0)
    shapes = [info.shape for info in ms.ArgInfo.from_entry_func(mod)]
    host = [rng.uniform(0.5, 1.5, size=s).astype("float32") for s in shapes]
    ours = [tw.nd.array(a, dev) for a in host]
    theirs = [torch.from_numpy(a).cuda() for a in host]
    torch.backends.cuda.matmul.allow_tf32 = False
    rt_mod["main"](*ours)
    expected = _peer(name, theirs).cpu().numpy()
    np.testing.assert_allclose(ours[-1].numpy(), expected, rtol=2e-3, atol=2e-4)
    func = rt_mod["main"]
    bound = func.bind(*ours)  # arguments checked once: what a loop of calls would use
    single: dict[str, list[float]] = {"ours": [], "torch": []}
    queued: dict[str, list[float]] = {"ours": [], "torch": []}
    for _ in range(3):
        single["ours"].append(_median_ms(lambda: func(*ours)))
        single["torch"].append(_median_ms(lambda: _peer(name, theirs)))
        queued["ours"].append(_median_ms(bound, repeat=10, calls=50))
        queued["torch"].append(_median_ms(lambda: _peer(name, theirs), repeat=10, calls=50))
    a, b = float(np.median(queued["ours"])), float(np.median(queued["torch"]))
    a1, b1 = float(np.median(single["ours"])), float(np.median(single["torch"]))
    trials = len({r.candidate_shash for r in records})
    valid = len({r.candidate_shash for r in records if r.is_valid})
    print(
        f"{name} {SIZES[name]}: {trials} trials ({valid} valid; {len(records)} measurements "
        f"with the leaders timed again) in {tuning:.0f} s ({trials / tuning * 60:.0f} "
        "trials/minute)"
    )
    print("  kernels queued back to back (50 calls between two events):")
    print(f"  ours  {flops / a / 1e6:9.1f} GFLOP/s  {a:.4f} ms")
    print(f"  torch {flops / b / 1e6:9.1f} GFLOP/s  {b:.4f} ms")
    print(f"  ratio {b / a:9.2f}x torch")
    print(
        f"  one call at a time (host launch included): ours {a1:.4f} ms, torch {b1:.4f} ms, "
        f"ratio {b1 / a1:.2f}x torch",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", default=list(SIZES))
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("TUNE_SECONDS", 100)))
    parser.add_argument("--per-iter", type=int, default=64)
    parser.add_argument(
        "--work-dir", help="keep each workload's database under this folder (default: a temp one)"
    )
    args = parser.parse_args()
    for name in args.only:
        run(name, args.trials, args.seconds, args.per_iter, args.work_dir)


if __name__ == "__main__":
    main()
