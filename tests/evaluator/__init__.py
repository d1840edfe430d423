"""IR + numpy arrays in, the arrays after running the IR out: the tests' one reference evaluator.

It runs every level of IR the tests check numerically: block-level functions as the schedule
writes them, lowered functions, lowered GPU modules (a host function launching kernels) and the
tile layer's lowered kernels. A function is translated once to Python source, so that the fuzz
tests can afford hundreds of programs, and then executed:

- ``expressions.py``: the one expression translator (scalars, vector lanes, intrinsics);
- ``statements.py``: the one statement translator (loops, lets, stores, allocations, effects);
- ``blocks.py``: the block layer (iterator bindings, predicates, init blocks, buffer views);
- ``threads.py``: the GPU layer (thread indices, barriers, shared and local memory);
- ``warps.py``: values the threads exchange (shuffles, allreduces, warp-collective operands);
- ``async_copies.py``: ``cp.async`` copies, their groups and waits;
- ``tensor_cores.py``: ``ldmatrix``, ``mma.sync``, ``mma_fill``, ``mma_store`` on PTX fragments;
- ``memory.py``: storage, bounds checks, byte copies, region pointers, and the watched arrays
  several threads see;
- ``races.py``: the race detector of a launch, on global and shared memory alike;
- ``machine.py``: compilation, the lockstep scheduler of a block's threads, the entry points.

Example::

    >>> C = run(matmul, A, B, np.zeros((8, 8), "float32"))[2]
    >>> got = run_module(lower_module(mod, "cuda"), "main", A, B)
    >>> result = run_kernel(LowerTIRx("cuda")(tile_copy)["main"], A, B)
    >>> result.effects[intrinsics.COPY_BYTES]
"""

from .machine import BarrierDivergence, KernelRun, run, run_kernel, run_module
from .races import DataRace, SharedMemoryRace

__all__ = [
    "BarrierDivergence",
    "DataRace",
    "KernelRun",
    "SharedMemoryRace",
    "run",
    "run_kernel",
    "run_module",
]
