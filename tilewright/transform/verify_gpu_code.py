"""Lowered GPU function → itself checked against the target's limits (shared memory made dynamic).

Before code generation each kernel must fit the device: threads per block within the target's
``max_num_threads`` (and each axis within CUDA's per-axis limits), shared memory within
``max_shared_memory_per_block``, one extent per thread tag. A kernel using more static shared
memory than ``max_static_shared_memory_per_block`` (CUDA's 48 KB) gets its shared buffers
moved to dynamic shared memory (``shared.dyn``), the only way to go past that limit.
"""

from __future__ import annotations

import math

from tilewright.ir import (
    Allocate,
    Buffer,
    IntImm,
    Mutator,
    PrimFunc,
    Stmt,
    Var,
    pre_order_visit,
)
from tilewright.target import Target
from tilewright.transform.device_kernels import BLOCK_TAGS, Kernel, find_kernels

SHARED_ALIGN = 16  # each dynamic shared buffer starts on a 16-byte boundary
# Thread tag → the target attribute limiting its extent (0 there: no limit of its own).
_AXIS_LIMITS = {
    "threadIdx.z": "max_thread_z",
    "blockIdx.y": "max_grid_y",
    "blockIdx.z": "max_grid_z",
}


class GPUCodeError(ValueError):
    """A kernel does not fit the target (too many threads, too much shared memory)."""


def verify_gpu_code(func: PrimFunc, target: Target | str) -> PrimFunc:
    """Check every kernel of ``func`` against ``target``; return it (shared made dynamic).

    Args:
        func: a lowered function for a GPU target (before ``split_host_device``).
        target: the target whose limits apply (``Target("nvidia/h200")``, or a spelling).

    Example::

        >>> verify_gpu_code(lowered, Target("cuda"))   # GPUCodeError on 2048 threads per block
    """
    target = Target(target)
    dynamic: set[Var] = set()
    for kernel in find_kernels(func):
        _check_threads(kernel, target)
        _check_scopes(kernel)
        buffers = shared_buffers(kernel.root)
        static = [b for b in buffers if b.scope == "shared"]
        total = sum(buffer_bytes(b) for b in buffers)
        if total > target.max_shared_memory_per_block:
            raise GPUCodeError(
                f"kernel {kernel.name} uses {_kb(total)} KB of shared memory; the target "
                f"{target} allows {_kb(target.max_shared_memory_per_block)} KB"
            )
        # Past its static limit a kernel's shared memory can only be dynamic (CUDA's 48 KB).
        static_limit = target.max_static_shared_memory_per_block
        if static_limit and sum(buffer_bytes(b) for b in static) > static_limit:
            dynamic.update(b.data for b in static)
    if not dynamic:
        return func
    return func.with_body(_MakeDynamic(dynamic).visit(func.body))


def buffer_bytes(buffer: Buffer) -> int:
    """Bytes a shared allocation takes, rounded up to the 16-byte alignment of each buffer.

    Example::

        >>> buffer_bytes(decl_buffer((130,), "float32", scope="shared"))   # 520 → 528
    """
    count = math.prod(int(d.value) if isinstance(d, IntImm) else 0 for d in buffer.shape)
    size = count * buffer.dtype.bytes
    return (size + SHARED_ALIGN - 1) // SHARED_ALIGN * SHARED_ALIGN


def shared_buffers(root: Stmt) -> list[Buffer]:
    """The buffers allocated in ``shared`` or ``shared.dyn`` scope under ``root``, in order.

    Example::

        >>> [b.name for b in shared_buffers(kernel.body)]   # ['A_shared', 'B_shared']
    """
    found: list[Buffer] = []

    def visit(node: object) -> bool:
        if isinstance(node, Allocate) and node.buffer.scope.startswith("shared"):
            for dim in node.buffer.shape:
                if not isinstance(dim, IntImm):
                    raise GPUCodeError(
                        f"shared buffer {node.buffer.name} has symbolic size {dim}; shared "
                        "memory needs a constant size"
                    )
            if all(b.data is not node.buffer.data for b in found):
                found.append(node.buffer)
        return True

    pre_order_visit(root, visit)
    return found


def _check_scopes(kernel: Kernel) -> None:
    def visit(node: object) -> bool:
        if isinstance(node, Allocate) and not node.buffer.scope.startswith(("shared", "local")):
            raise GPUCodeError(
                f"kernel {kernel.name} allocates buffer {node.buffer.name} in scope "
                f"{node.buffer.scope!r}; inside a kernel a buffer lives in 'shared' (per "
                "thread block) or 'local' (per thread) memory: use set_scope or cache_read/write"
            )
        return True

    pre_order_visit(kernel.root, visit)


def _kb(size: int) -> str:
    value = size / 1024
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def _check_threads(kernel: Kernel, target: Target) -> None:
    threads = 1
    parts = []
    for tag, extent in kernel.extents.items():
        if not isinstance(extent, IntImm):
            if tag in BLOCK_TAGS:
                raise GPUCodeError(
                    f"kernel {kernel.name}: {tag} has extent {extent}, not a constant; the "
                    "number of threads per block must be known when the kernel is built"
                )
            continue
        limit = int(getattr(target, _AXIS_LIMITS[tag])) if tag in _AXIS_LIMITS else 0
        if limit and extent.value > limit:
            raise GPUCodeError(
                f"kernel {kernel.name}: {tag} has extent {extent.value}; the target {target} "
                f"allows at most {limit} along that axis"
            )
        if tag in BLOCK_TAGS:
            threads *= extent.value
            parts.append(f"{tag}={extent.value}")
    if threads > target.max_num_threads:
        raise GPUCodeError(
            f"kernel {kernel.name} uses {threads} threads per block ({', '.join(parts)}); "
            f"the target {target} allows {target.max_num_threads}"
        )


class _MakeDynamic(Mutator):
    def __init__(self, data: set[Var]) -> None:
        super().__init__()
        self.data = data

    def visit_Buffer(self, buffer: Buffer) -> Buffer:
        # One replacement per buffer, so that every use keeps pointing at the same object.
        if buffer not in self.buffer_map:
            moved = buffer.data in self.data and buffer.scope == "shared"
            self.buffer_map[buffer] = buffer.replace(scope="shared.dyn") if moved else buffer
        return self.buffer_map[buffer]
