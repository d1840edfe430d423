"""The design space per workload and target: how many sampled candidates the postprocessors
reject (and why), and how many candidates are sampled per second.

Samples ``--candidates`` postprocessed candidates of every corpus workload at its real sizes
for each target (nothing is built or run: this measures the space and the sampler), one
process per (workload, target) pair, and prints one row each plus the totals.

    python benchmarks/design_space.py [--candidates 20] [--targets llvm,cuda,opencl] [--jobs N]
"""

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor

from tilewright import meta_schedule as ms
from tilewright.meta_schedule.testing.workloads import WORKLOADS


def _sample(job: tuple[str, str, int, int]) -> tuple[str, str, ms.SampleReport, float]:
    name, target, count, seed = job
    workload = WORKLOADS[name]
    start = time.perf_counter()
    ctx = ms.TuneContext(workload.func(**workload.sizes), target=target, rand_state=seed)
    spaces = ctx.generate_design_space()
    space_seconds = time.perf_counter() - start
    _, report = ms.sample_candidates(ctx, count, spaces=spaces, max_attempts=200 * count)
    return name, target, report, space_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--targets", default="llvm,cuda,opencl")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    targets = args.targets.split(",")
    jobs = [(n, t, args.candidates, args.seed) for t in targets for n in sorted(WORKLOADS)]
    print(f"{args.candidates} candidates per workload and target, {args.jobs} processes")
    header = f"{'target':<7} {'workload':<17} {'sampled':>7} {'tries':>6} {'rejected':>8} "
    print(header + f"{'cand/s':>7} {'space s':>7}  rejections")
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for name, target, report, space_s in pool.map(_sample, jobs):
            reasons = ", ".join(f"{k} {v}" for k, v in report.rejected.most_common()) or "-"
            print(
                f"{target:<7} {name:<17} {report.sampled:>7} {report.attempts:>6} "
                f"{report.rejection_rate:>7.0%} {report.per_second:>7.2f} {space_s:>7.2f}  "
                f"{reasons}",
                flush=True,
            )


if __name__ == "__main__":
    main()
