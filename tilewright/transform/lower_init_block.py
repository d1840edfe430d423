"""PrimFunc with ``T.init()`` blocks → blocks whose body runs the init on the first reduce step."""

from __future__ import annotations

from tilewright.ir import Block, IfThenElse, IterKind, Mutator, PrimFunc, Stmt, op, seq


def lower_init_block(func: PrimFunc) -> PrimFunc:
    """Move each block's ``init`` statement into its body, guarded by "first reduce iteration".

    A block with ``init`` runs the init when every reduce iterator equals the start of its
    domain (TensorIR semantics). The condition is on the block's iterators, so after the
    bindings are substituted (``lower_blocks``) it holds at the first iteration of the
    reduction whatever order or splitting the loops around the block have.

    Args:
        func: the function to lower; blocks without ``init`` are left alone.

    Example::

        # before                                  # after
        with T.block("C"):                        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])       vi, vk = T.axis.remap("SR", [i, k])
            with T.init():                            if vk == 0:
                C[vi] = T.float32(0)                      C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk]                 C[vi] = C[vi] + A[vi, vk]
    """
    body = _InitLowerer().visit(func.body)
    return func.with_body(body)


class _InitLowerer(Mutator):
    def visit_Block(self, block: Block) -> Block:
        block = self.generic_visit(block)
        if block.init is None:
            return block
        return block.replace(body=seq(_guarded_init(block), block.body), init=None)


def _guarded_init(block: Block) -> Stmt:
    assert block.init is not None
    condition = None
    for iv in block.iter_vars:
        if iv.kind is not IterKind.REDUCE:
            continue
        first = op.eq(iv.var, iv.dom.min)
        condition = first if condition is None else op.logical_and(condition, first)
    # Without reduce iterators every execution of the block is a "first" one.
    if condition is None:
        return block.init
    return IfThenElse(condition, block.init)
