"""Hand SGEMM schedules at 4096^3 float32 on the GPU, beside cuBLAS (``torch.matmul``, TF32 off).

The family the tuner's GPU space holds: a block tile in shared memory (``cache_read`` at the
outer k loop, fetched cooperatively as ``float4``), each thread's tile strided by virtual
threads (``vthread.y/x`` outside the thread loops, so a warp's shared-memory reads are
consecutive ``float4``s), the accumulators in registers (``cache_write`` "local"), the k
tile unrolled. Variants change the tile sizes, drop the register copies of the operands, or
store A's shared tile k-major (``transform_layout``) so that its register copies are
``float4`` reads too, or double-buffer the shared tiles with ``cp.async`` (a software
pipeline: tile k + 1 is fetched while tile k is computed). Each is checked against float64
first (max relative error 1e-3 of the largest output), then timed with CUDA events (median
of 20 single calls); the notebook's ``blocking_with_shared(8, 8, 16, 16, 16)`` is the
baseline.

    python benchmarks/gpu_sgemm_schedules.py [name-substring ...]
"""

import functools
import sys
import time

import torch
from cuda_events import cuda_median

import tilewright as tw
from tilewright.demo import blocking_with_shared, matmul_module
from tilewright.schedule import Schedule

N = 4096


def strided(
    vti=2, vtj=2, ty=8, tx=16, ii=4, jj=4, bk=16, local=True, unroll=True, kmajor=False,
    pipeline=False, stages=2, compute_first=False,
):  # fmt: skip
    """Block (vti*ty*ii) x (vtj*tx*jj), k tile ``bk``, (ty x tx) threads, each thread
    (vti*ii) x (vtj*jj) outputs in vti x vtj strided pieces."""
    sch = Schedule(matmul_module(N))
    block = sch.get_block("C")
    write = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    i0, i1, i2, i3 = sch.split(i, [None, vti, ty, ii])
    j0, j1, j2, j3 = sch.split(j, [None, vtj, tx, jj])
    k0, k1 = sch.split(k, [None, bk])
    sch.reorder(i0, j0, i1, j1, i2, j2, k0, k1, i3, j3)
    for loop, axis in ((i0, "blockIdx.y"), (j0, "blockIdx.x"), (i1, "vthread.y"),
                       (j1, "vthread.x"), (i2, "threadIdx.y"), (j2, "threadIdx.x")):  # fmt: skip
        sch.bind(loop, axis)
    sch.reverse_compute_at(write, j2)
    shared = []
    for index in (0, 1):
        tile = sch.cache_read(block, index, "shared")
        sch.compute_at(tile, k0)
        fused = sch.fuse(*sch.get_loops(tile)[-2:])
        _, y, x, lanes = sch.split(fused, [None, ty, tx, 4])
        sch.bind(y, "threadIdx.y")
        sch.bind(x, "threadIdx.x")
        sch.vectorize(lanes)
        shared.append(tile)
    if kmajor:
        sch.transform_layout(shared[0], ("write", 0), lambda i, k: (k, i))
    if local:
        for index in (0, 1):
            copy = sch.cache_read(block, index, "local")
            sch.compute_at(copy, k1)
            if index == 1 or kmajor:
                sch.vectorize(sch.get_loops(copy)[-1])
    if unroll:
        sch.unroll(k1)
    if pipeline:  # fetch tile k + stages - 1 (cp.async) while computing tile k
        sch.annotate(k0, "software_pipeline_stage", [0, 0, stages - 1])
        sch.annotate(k0, "software_pipeline_async_stages", [0])
        if compute_first:  # compute, then fetch: one barrier a step
            sch.annotate(k0, "software_pipeline_order", [1, 2, 0])
    sch.decompose_reduction(block, k0)
    return sch


VARIANTS = {
    "notebook blocking_with_shared(8, 8, 16, 16, 16)": lambda: blocking_with_shared(
        Schedule(matmul_module(N)), 8, 8, 16, 16, 16
    ),
    "64x128 block, 8x8 per thread, k tile 16": lambda: strided(),
    "64x128 block, 8x8 per thread, k tile 32": lambda: strided(bk=32),
    "64x128 block, 8x8 per thread, k tile 8": lambda: strided(bk=8),
    "64x128, k tile 16, no register copies": lambda: strided(local=False),
    "64x128, k tile 16, k loop not unrolled": lambda: strided(unroll=False),
    "128x128 block, 256 threads, k tile 16": lambda: strided(ty=16),
    "64x256 block, 8x16 per thread, k tile 16": lambda: strided(vtj=4),
    "64x128, k tile 16, A tile k-major": lambda: strided(kmajor=True),
    "64x128, k tile 32, A tile k-major": lambda: strided(bk=32, kmajor=True),
    "64x128, k tile 16, cp.async double buffer": lambda: strided(pipeline=True),
    "64x128, k tile 32, cp.async double buffer": lambda: strided(bk=32, pipeline=True),
    "64x128, k tile 16, k-major A, cp.async": lambda: strided(kmajor=True, pipeline=True),
    "64x128, k tile 32, cp.async 3 stages, compute first": lambda: strided(
        bk=32, pipeline=True, stages=3, compute_first=True
    ),
    "64x128, k tile 16, cp.async 3 stages, compute first": lambda: strided(
        pipeline=True, stages=3, compute_first=True
    ),
    "64x256, k tile 16, cp.async 3 stages, compute first": lambda: strided(
        vtj=4, pipeline=True, stages=3, compute_first=True
    ),
    "64x128, k tile 32, cp.async 4 stages, compute first": lambda: strided(
        bk=32, pipeline=True, stages=4, compute_first=True
    ),
    "64x128, k tile 32, k-major A, cp.async 3 stages, compute first": lambda: strided(
        bk=32, kmajor=True, pipeline=True, stages=3, compute_first=True
    ),
    "128x128, 256 threads, k tile 32, cp.async 3 stages, compute first": lambda: strided(
        ty=16, bk=32, pipeline=True, stages=3, compute_first=True
    ),
    "128x128, 16x8 per thread, k tile 32, cp.async 3 stages, compute first": lambda: strided(
        vti=4, bk=32, pipeline=True, stages=3, compute_first=True
    ),
    "128x64, 256 threads, 8x4 per thread, k tile 32, cp.async 3 stages": lambda: strided(
        ty=16, vtj=1, bk=32, pipeline=True, stages=3, compute_first=True
    ),
    "64x128, k tile 64, cp.async 3 stages, compute first": lambda: strided(
        bk=64, pipeline=True, stages=3, compute_first=True
    ),
    "64x64, 8x8 per thread (64 threads), k tile 32, cp.async 3 stages": lambda: strided(
        tx=8, bk=32, pipeline=True, stages=3, compute_first=True
    ),
}


def main() -> int:
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.rand(N, N, device="cuda"), torch.rand(N, N, device="cuda")
    want = torch.matmul(a.double(), b.double())
    scale = float(want.abs().max())
    flops = 2 * N**3
    out = torch.empty(N, N, device="cuda")
    peer = cuda_median(lambda: torch.matmul(a, b, out=out), runs=20, warmup=1)
    print(f"cuBLAS (torch.matmul, TF32 off) {flops / peer / 1e12:.2f} TFLOP/s")
    only = sys.argv[1:]
    failed = 0
    for name, make in VARIANTS.items():
        if only and not any(o in name for o in only):
            continue
        start = time.perf_counter()
        func = tw.build(make().mod, target="cuda")["main"]
        build = time.perf_counter() - start
        c = torch.full((N, N), float("nan"), device="cuda")
        func(a, b, c)
        error = float((c.double() - want).abs().max()) / scale
        if not error < 1e-3:
            print(f"{name}: WRONG (max relative error {error:.2e})")
            failed += 1
            continue
        ours = cuda_median(functools.partial(func, a, b, c), runs=20, warmup=1)
        print(
            f"{name:50s} {flops / ours / 1e12:6.2f} TFLOP/s  {peer / ours:.2f}x cuBLAS  "
            f"(error {error:.1e}, built in {build:.1f} s)",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
