"""``TensorIntrin``: a computation (``desc``) and how a hardware instruction does it (``impl``).

TVM's ``tir.TensorIntrin``. Both are PrimFuncs over the same buffers (``T.match_buffer`` of
handle parameters, in the same order, with the same shapes and dtypes), each with a root
block: ``desc``'s holds the loops and the block the intrinsic computes, ``impl``'s the code
that replaces them (typically a ``T.call_extern`` or a target intrinsic on the buffers' data
and offsets). ``Schedule.tensorize`` matches a block against ``desc`` and puts ``impl`` in its
place.

Example::

    TensorIntrin.register("my.dot4", dot4_desc, dot4_impl)
    sch.tensorize(inner_loop, "my.dot4")
"""

from __future__ import annotations

from typing import ClassVar

from tilewright.ir.buffer import Buffer
from tilewright.ir.function import PrimFunc
from tilewright.ir.stmt import Block, BlockRealize


class TensorIntrin:
    """A registered tensor intrinsic (see the module docstring).

    Arguments:
        name: the name ``tensorize`` refers to it by.
        desc: what it computes.
        impl: how: the body that replaces a matching block's.
    """

    _registry: ClassVar[dict[str, TensorIntrin]] = {}

    def __init__(self, name: str, desc: PrimFunc, impl: PrimFunc) -> None:
        self.name = name
        self.desc = desc
        self.impl = impl
        self.desc_buffers = _param_buffers(name, "desc", desc)
        self.impl_buffers = _param_buffers(name, "impl", impl)
        if len(self.desc_buffers) != len(self.impl_buffers):
            raise ValueError(
                f"tensor intrinsic {name!r}: desc has {len(self.desc_buffers)} buffers, impl "
                f"{len(self.impl_buffers)}"
            )
        for d, i in zip(self.desc_buffers, self.impl_buffers):
            same_shape = [str(s) for s in d.shape] == [str(s) for s in i.shape]
            if not same_shape or d.dtype != i.dtype:
                raise ValueError(
                    f"tensor intrinsic {name!r}: desc buffer {d.name} {_describe(d)} and impl "
                    f"buffer {i.name} {_describe(i)} differ"
                )
        self.desc_root = _root(name, "desc", desc)
        self.impl_root = _root(name, "impl", impl)

    @staticmethod
    def register(name: str, desc: PrimFunc, impl: PrimFunc, override: bool = False) -> TensorIntrin:
        """Register the intrinsic ``name``; a second registration of a name needs ``override``.

        Example: ``TensorIntrin.register("my.dot4", dot4_desc, dot4_impl)``.
        """
        if name in TensorIntrin._registry and not override:
            raise ValueError(f"tensor intrinsic {name!r} is already registered (override=True)")
        intrin = TensorIntrin(name, desc, impl)
        TensorIntrin._registry[name] = intrin
        return intrin

    @staticmethod
    def get(name: str, allow_missing: bool = False) -> TensorIntrin | None:
        """The intrinsic registered as ``name`` (None when missing and ``allow_missing``)."""
        intrin = TensorIntrin._registry.get(name)
        if intrin is None and not allow_missing:
            known = ", ".join(sorted(TensorIntrin._registry)) or "none"
            raise ValueError(f"no tensor intrinsic named {name!r} (registered: {known})")
        return intrin

    def __repr__(self) -> str:
        return f"<TensorIntrin {self.name}>"


def _describe(buffer: Buffer) -> str:
    return f"({', '.join(str(s) for s in buffer.shape)}) {buffer.dtype}"


def _param_buffers(name: str, which: str, func: PrimFunc) -> list[Buffer]:
    buffers = [func.buffer_of(p) for p in func.params]
    if any(b is None for b in buffers):
        raise ValueError(f"tensor intrinsic {name!r}: every {which} parameter must be a buffer")
    return [b for b in buffers if b is not None]


def _root(name: str, which: str, func: PrimFunc) -> Block:
    body = func.body
    if not isinstance(body, BlockRealize):
        raise ValueError(
            f"tensor intrinsic {name!r}: the {which} function's body must be its root block "
            '(with T.block("root"): ...)'
        )
    return body.block
