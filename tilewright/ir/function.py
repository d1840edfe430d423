"""``PrimFunc``: a function of buffers and scalars whose body is a statement."""

from __future__ import annotations

from tilewright.ir.buffer import Buffer
from tilewright.ir.expr import Var
from tilewright.ir.node import Node, node
from tilewright.ir.stmt import Attrs, AttrValue, Stmt, attrs


@node
class PrimFunc(Node):
    """A low-level function.

    ``params`` are the function's variables in order: handles for buffer arguments (the
    buffer itself is in ``buffer_map``) and scalars for the rest. ``name`` is the name of
    the ``def`` it was parsed from (empty when built otherwise): the printer's name for it
    outside a module, a hint that, like variable names, takes no part in structural equality.
    ``spelling``, another such hint, is how its script was written and prints back:
    ``""`` (``T.block``), ``"sblock"`` (TVM's newer ``T.sblock``, ``T.sblock_attr``,
    ``T.sblock_alloc_buffer``) or ``"s_tir"`` (``@T.prim_func(s_tir=True)``, with the newer
    block names).

    Example::

        >>> from tilewright.script import tir as T
        >>> @T.prim_func
        ... def add_one(A: T.Buffer((8,), "float32")):
        ...     for i in range(8):
        ...         A[i] = A[i] + 1.0
        >>> add_one.params[0]
    """

    params: tuple[Var, ...]
    body: Stmt
    buffer_map: tuple[tuple[Var, Buffer], ...] = ()
    attrs: Attrs = ()
    name: str = ""
    spelling: str = ""

    def buffer_of(self, param: Var) -> Buffer | None:
        for var, buf in self.buffer_map:
            if var is param:
                return buf
        return None

    def attr(self, key: str, default: AttrValue | None = None) -> AttrValue | None:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    def with_attr(self, key: str, value: AttrValue) -> PrimFunc:
        merged = dict(self.attrs)
        merged[key] = value
        return self.replace(attrs=attrs(merged))

    def with_body(self, body: Stmt) -> PrimFunc:
        return self.replace(body=body)
