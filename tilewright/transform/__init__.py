"""Lowering passes: scheduled PrimFuncs (blocks, N-d buffers) → the lowered form codegen reads.

Each pass is a function ``PrimFunc -> PrimFunc`` in a module named for it;
``lower_module`` runs them in order (see ``pipeline.py``) and can dump every stage.

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
- Loops of extent one are gone (their variable replaced by ``min``) unless thread-bound or
  annotated.
- Block reads/writes and block annotations are dropped; ``match_buffer`` views are accesses
  of their source buffers.

For GPU kinds (``cuda``, ``opencl``, ``metal``) the lowered module holds, for each source
function ``f``, a host function ``f`` (same params and N-d ``buffer_map``) whose body only
launches kernels (``tw.launch_kernel``) and device functions ``f_kernel``, ``f_kernel_1``, ...
(attribute ``tir.is_kernel``) whose bodies are in the form above with thread-bound loops kept,
``shared``/``local`` buffers compacted and ``tw.sync_threads`` barriers; see
``split_host_device``.

Example::

    >>> from tilewright.transform import lower_module
    >>> lowered = lower_module(mod, "c")
"""

from tilewright.transform.compact_buffer_allocation import compact_buffer_allocation
from tilewright.transform.device_kernels import Kernel, ThreadBindingError, find_kernels
from tilewright.transform.flatten_buffers import flatten_buffers
from tilewright.transform.inject_thread_sync import inject_thread_sync, sync_threads
from tilewright.transform.inline_unit_loops import inline_unit_loops
from tilewright.transform.lower_blocks import lower_blocks
from tilewright.transform.lower_init_block import lower_init_block
from tilewright.transform.lower_vectorized import is_aligned_ramp, lower_vectorized
from tilewright.transform.pipeline import Stage, lower_module, stages
from tilewright.transform.plan_buffer_allocation import plan_buffer_allocation
from tilewright.transform.remove_no_op import remove_no_op
from tilewright.transform.simplify import simplify
from tilewright.transform.split_host_device import split_host_device
from tilewright.transform.unroll_loops import unroll_loops
from tilewright.transform.verify import LoweredFormError, verify_lowered
from tilewright.transform.verify_gpu_code import GPUCodeError, GPULimits, verify_gpu_code

__all__ = [
    "GPUCodeError",
    "GPULimits",
    "Kernel",
    "LoweredFormError",
    "Stage",
    "ThreadBindingError",
    "compact_buffer_allocation",
    "find_kernels",
    "flatten_buffers",
    "inject_thread_sync",
    "inline_unit_loops",
    "is_aligned_ramp",
    "lower_blocks",
    "lower_init_block",
    "lower_module",
    "lower_vectorized",
    "plan_buffer_allocation",
    "remove_no_op",
    "simplify",
    "split_host_device",
    "stages",
    "sync_threads",
    "unroll_loops",
    "verify_gpu_code",
    "verify_lowered",
]
