"""Lowering passes: scheduled PrimFuncs (blocks, N-d buffers) → the lowered form codegen reads.

Each pass is a function ``PrimFunc -> PrimFunc`` in a module named for it;
``cpu_stages(target)`` and ``gpu_stages(target)`` (``pipeline.py``) are the ordered lists a
backend names, and ``lower_module`` runs one, timing and dumping every stage.

The lowered form (the contract with code generation, checked by ``verify_lowered``):

- No ``Block`` or ``BlockRealize``. The body holds only ``For`` (serial, parallel,
  vectorized, unroll and thread-binding loops keep their kind, thread tag and annotations),
  ``SeqStmt``, ``IfThenElse``, ``LetStmt``, ``Evaluate``, ``BufferStore``, ``Allocate`` and
  ``AttrStmt``.
- Every ``BufferLoad`` / ``BufferStore`` has exactly one index (a ``Ramp`` for a vector
  access) into a 1-D buffer that shares its ``data`` variable with the original buffer, so
  the C pointer is named by ``buffer.data``. The flat buffer has no strides and
  ``elem_offset`` 0: the original strides and offset are folded into the index.
- ``Allocate`` holds a 1-D buffer whose shape is the flat element count, at the position of
  the block that allocated it (the root block's allocations around the whole body).
- ``PrimFunc.params`` are unchanged and ``PrimFunc.buffer_map`` keeps the original N-d
  buffers, against which the runtime checks argument shapes.
- A reduction block's init runs under ``if`` every reduce iterator is at the start of its
  domain, written over the loop variables (``if k_0 * 4 + k_1 == 0:``), in the loop nest at
  the block's position; a ``T.where`` predicate is an ``IfThenElse`` around the block's body,
  init included.
- ``pragma_auto_unroll_max_step`` / ``pragma_unroll_explicit`` annotations are gone, applied
  by ``apply_unroll_pragmas``.
- Loops of extent one are gone (their variable replaced by ``min``) unless thread-bound or
  annotated.
- Block reads/writes and block annotations are dropped; ``match_buffer`` views are accesses
  of their source buffers.

For GPU kinds (``cuda``, ``opencl``, ``metal``) the lowered module holds, for each source
function ``f``, a host function ``f`` (same params and N-d ``buffer_map``) whose body only
launches kernels (``intrinsics.LAUNCH_KERNEL``) and device functions ``f_kernel``,
``f_kernel_1``, ... (attribute ``tir.is_kernel``) whose bodies are in the form above with
blockIdx/threadIdx-bound loops kept (vthread loops are gone: ``lower_vthread``),
``shared``/``local`` buffers compacted and ``intrinsics.SYNC_THREADS`` barriers; see
``split_host_device``.

Example::

    >>> from tilewright.transform import cpu_stages, lower_module
    >>> lowered = lower_module(mod, cpu_stages(Target("c")))   # tw.lower(mod, "c") does this
"""

from tilewright.transform.compact_buffer_allocation import compact_buffer_allocation
from tilewright.transform.device_kernels import Kernel, ThreadBindingError, find_kernels
from tilewright.transform.flatten_buffers import flatten_buffers
from tilewright.transform.inject_thread_sync import inject_thread_sync, sync_threads
from tilewright.transform.inline_unit_loops import inline_unit_loops
from tilewright.transform.instrument_bounds import instrument_bounds
from tilewright.transform.lower_blocks import lower_blocks
from tilewright.transform.lower_cross_thread_reduction import (
    CrossThreadReductionError,
    lower_cross_thread_reduction,
)
from tilewright.transform.lower_init_block import lower_init_block
from tilewright.transform.lower_thread_allreduce import (
    ThreadAllreduceError,
    lower_thread_allreduce,
)
from tilewright.transform.lower_vectorized import is_aligned_ramp, lower_vectorized
from tilewright.transform.lower_vthread import lower_vthread
from tilewright.transform.pass_context import PassContext
from tilewright.transform.pipeline import (
    Lowering,
    Stage,
    StageLog,
    add_note,
    cpu_stages,
    gpu_stages,
    lower_module,
)
from tilewright.transform.plan_buffer_allocation import plan_buffer_allocation
from tilewright.transform.remove_no_op import remove_no_op
from tilewright.transform.simplify import simplify
from tilewright.transform.split_host_device import split_host_device
from tilewright.transform.unroll_loops import unroll_loops
from tilewright.transform.unroll_pragmas import apply_unroll_pragmas
from tilewright.transform.verify import LoweredFormError, verify_lowered
from tilewright.transform.verify_bounds import OutOfBoundsError, verify_bounds
from tilewright.transform.verify_gpu_code import GPUCodeError, verify_gpu_code

__all__ = [
    "CrossThreadReductionError",
    "GPUCodeError",
    "Kernel",
    "LoweredFormError",
    "Lowering",
    "OutOfBoundsError",
    "PassContext",
    "Stage",
    "StageLog",
    "ThreadAllreduceError",
    "add_note",
    "apply_unroll_pragmas",
    "cpu_stages",
    "gpu_stages",
    "ThreadBindingError",
    "compact_buffer_allocation",
    "find_kernels",
    "flatten_buffers",
    "inject_thread_sync",
    "inline_unit_loops",
    "instrument_bounds",
    "is_aligned_ramp",
    "lower_blocks",
    "lower_cross_thread_reduction",
    "lower_init_block",
    "lower_module",
    "lower_thread_allreduce",
    "lower_vectorized",
    "lower_vthread",
    "plan_buffer_allocation",
    "remove_no_op",
    "simplify",
    "split_host_device",
    "sync_threads",
    "unroll_loops",
    "verify_bounds",
    "verify_gpu_code",
    "verify_lowered",
]
