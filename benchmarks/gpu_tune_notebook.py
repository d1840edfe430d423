"""The seed notebook's meta-schedule cells, verbatim but for the import, on the GPU present,
beside the notebook's own hand schedule ``blocking_with_shared(8, 8, 8, 8, 8)`` in one run.

The cells below are the notebook's text (``import tvm`` → ``import tilewright as tvm``,
``from tvm import`` → ``from tilewright import``); the setup cell defines ``MyModuleMatmul``,
the device arrays and ``num_flop`` as the notebook does. The tuned kernel's output is checked
against numpy; then both kernels are timed in interleaved rounds (the notebook's evaluator,
``number=10``) and the script prints both, the ratio, the trials and the tuning wall time.

    python benchmarks/gpu_tune_notebook.py      # on a machine with an NVIDIA GPU
"""

import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import seed_notebook

import tilewright as tvm
from tilewright.demo import blocking_with_shared

SETUP = """
rt_mod = tvm.build(sch.mod, target="cuda")
dev = tvm.cuda(0)
A_np = np.random.uniform(size=(1024, 1024)).astype("float32")
B_np = np.random.uniform(size=(1024, 1024)).astype("float32")
A_nd = tvm.nd.array(A_np, dev)
B_nd = tvm.nd.array(B_np, dev)
C_nd = tvm.nd.array(np.zeros((1024, 1024), dtype="float32"), dev)

num_flop = 2 * 1024 * 1024 * 1024
evaluator = rt_mod.time_evaluator("main", dev, number=10)


print("GEMM-Blocking: %f GFLOPS" % (num_flop / evaluator(A_nd, B_nd, C_nd).mean / 1e9))
"""

# The notebook's section "Leveraging Automatic Program Optimization", cell by cell.
TUNE_CELLS = [
    """
from tilewright import meta_schedule as ms

sch_tuned = ms.tune_tir(
 mod=MyModuleMatmul,
 target="nvidia/tesla-p100",
 config=ms.TuneConfig(
 max_trials_global=64,
 num_trials_per_iter=64,
 ),
 work_dir="./tune_tmp",
 task_name="main"
)
""",
    """
sch_tuned.mod.show()
""",
    """
rt_mod = tvm.build(sch_tuned.mod, target="nvidia/tesla-p100")
dev = tvm.cuda(0)
evaluator = rt_mod.time_evaluator("main", dev, number=10)

print("MetaSchedule: %f GFLOPS" % (num_flop / evaluator(A_nd, B_nd, C_nd).mean / 1e9))
""",
]


def main() -> None:
    os.chdir(tempfile.mkdtemp(prefix="notebook-tune-"))
    hand = blocking_with_shared(tvm.tir.Schedule(seed_notebook.MyModuleMatmul), 8, 8, 8, 8, 8)
    ns: dict = {"tvm": tvm, "np": np, "MyModuleMatmul": seed_notebook.MyModuleMatmul}
    ns["sch"] = hand
    exec(SETUP, ns)
    hand_mod = ns["rt_mod"]
    start = time.perf_counter()
    exec(TUNE_CELLS[0], ns)
    tuning = time.perf_counter() - start
    exec(TUNE_CELLS[1], ns)
    exec(TUNE_CELLS[2], ns)
    tuned_mod = ns["rt_mod"]

    a_nd, b_nd, c_nd = ns["A_nd"], ns["B_nd"], ns["C_nd"]
    c_nd.copyfrom(np.zeros((1024, 1024), dtype="float32"))
    tuned_mod["main"](a_nd, b_nd, c_nd)
    expected = ns["A_np"].astype(np.float64) @ ns["B_np"].astype(np.float64)
    np.testing.assert_allclose(c_nd.numpy(), expected, rtol=1e-4)

    dev = ns["dev"]
    times: dict[str, list[float]] = {"tuned": [], "hand": []}
    for _ in range(5):
        for name, m in (("tuned", tuned_mod), ("hand", hand_mod)):
            ev = m.time_evaluator("main", dev, number=10)
            times[name].append(ev(a_nd, b_nd, c_nd).mean)
    med = {k: float(np.median(v)) for k, v in times.items()}
    flop = ns["num_flop"]
    with open("tune_tmp/database_tuning_record.json") as f:
        lines = f.read().splitlines()
    trials = len({json.dumps(json.loads(line)[1][4]) for line in lines})
    print(
        f"\nnotebook matmul 1024^3 float32: tuning {trials} trials ({len(lines)} measurements "
        f"with the leaders timed again) in {tuning:.0f} s"
    )
    print(f"tuned (ms.tune_tir, 64 trials)  {flop / med['tuned'] / 1e9:9.1f} GFLOP/s")
    print(f"hand (blocking_with_shared)     {flop / med['hand'] / 1e9:9.1f} GFLOP/s")
    print(f"ratio                           {med['hand'] / med['tuned']:9.2f}x the hand schedule")


if __name__ == "__main__":
    main()
