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

Example::

    >>> from tilewright.transform import lower_module
    >>> lowered = lower_module(mod, "c")
"""

from tilewright.transform.flatten_buffers import flatten_buffers
from tilewright.transform.inline_unit_loops import inline_unit_loops
from tilewright.transform.lower_blocks import lower_blocks
from tilewright.transform.lower_init_block import lower_init_block
from tilewright.transform.pipeline import Stage, lower_module, stages
from tilewright.transform.remove_no_op import remove_no_op
from tilewright.transform.simplify import simplify
from tilewright.transform.verify import LoweredFormError, verify_lowered

__all__ = [
    "LoweredFormError",
    "Stage",
    "flatten_buffers",
    "inline_unit_loops",
    "lower_blocks",
    "lower_init_block",
    "lower_module",
    "remove_no_op",
    "simplify",
    "stages",
    "verify_lowered",
]
