"""TMA tensor maps as kernel parameters: each distinct ``tw.cuda.tensor_map`` call in a kernel
becomes one parameter of the kernel, which the runtime encodes on the host for the buffer the
caller passes and hands over by value (CUDA's ``const __grid_constant__``).

``split_host_device`` calls ``lift_tensor_maps`` on each kernel's body: the calls are replaced
by a fresh ``handle`` variable (in the kernel, the map's address), and the kernel's
``tw.tensor_maps`` attribute records, per such parameter, ``(parameter index, buffer name,
dtype, box, swizzle)``; the host's launch passes the call itself (the map of that buffer).

Example::

    >>> lifted = lift_tensor_maps(kernel_root, func, "main_kernel")
    >>> [(var.name, call.args[-1]) for var, call in lifted.maps]
    [('A_tmap', 128)]
"""

from __future__ import annotations

import dataclasses

from tilewright.ir import (
    BufferLoad,
    Call,
    IntImm,
    PrimExpr,
    PrimFunc,
    Stmt,
    Var,
    post_order_visit,
)
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.ir.dtype import handle
from tilewright.ir.functor import Mutator

# The kernel attribute naming its tensor-map parameters.
TENSOR_MAPS_ATTR = "tw.tensor_maps"
SWIZZLES = (0, 32, 64, 128)


class TensorMapLiftError(ValueError):
    """A tensor map that cannot become a kernel parameter (the message names the kernel and
    the buffer)."""


@dataclasses.dataclass(frozen=True)
class TensorMapRecord:
    """One tensor-map parameter of a kernel: its place among the kernel's parameters, the
    buffer (a parameter of the source function) it describes, that buffer's dtype, the box
    (outermost first) and the swizzle in bytes."""

    index: int
    buffer: str
    dtype: str
    box: tuple[int, ...]
    swizzle: int

    def to_attr(self) -> tuple:
        return (self.index, self.buffer, self.dtype, self.box, self.swizzle)


@dataclasses.dataclass(frozen=True)
class LiftedMaps:
    """A kernel body with its tensor_map calls replaced, and the parameters that replace them:
    ``maps`` pairs each new ``handle`` variable with the call it stands for; ``described``
    holds, in the same order, (buffer name, dtype, box, swizzle)."""

    body: Stmt
    maps: tuple[tuple[Var, Call], ...]
    described: tuple[tuple[str, str, tuple[int, ...], int], ...] = ()

    def records(self, first_index: int) -> tuple[TensorMapRecord, ...]:
        """The attribute records when the map parameters start at ``first_index``."""
        return tuple(
            TensorMapRecord(first_index + offset, *described)
            for offset, described in enumerate(self.described)
        )


def lift_tensor_maps(body: Stmt, func: PrimFunc, kernel: str) -> LiftedMaps:
    """Replace each distinct ``tw.cuda.tensor_map`` call in ``body`` (a kernel of ``func``)
    with a new ``handle`` variable, after checking that the call names a buffer parameter of
    ``func`` and gives a constant box of the buffer's rank and a swizzle TMA has.

    Raises ``TensorMapLiftError`` naming the kernel and the buffer otherwise.

    Example::

        >>> lift_tensor_maps(root, func, "main_kernel").maps[0][0].name
        'A_tmap'
    """
    buffers = {buf.data: buf for _, buf in func.buffer_map}
    found: dict[tuple, tuple[Var, Call]] = {}

    def visit(node: object) -> None:
        if isinstance(node, Call) and hopper.TENSOR_MAP.matches(node):
            key = _key(node, buffers, kernel)
            if key not in found:
                name = f"{buffers[node.args[0]].name}_tmap"  # type: ignore[index]
                found[key] = (Var(name, handle), node)

    post_order_visit(body, visit)
    if not found:
        return LiftedMaps(body, ())
    rewriter = _Replace({key: var for key, (var, _) in found.items()}, buffers, kernel)
    described = tuple(
        (buffers[data].name, str(buffers[data].dtype), tuple(rest[:-1]), rest[-1])
        for data, *rest in found
    )
    return LiftedMaps(rewriter.visit(body), tuple(found.values()), described)


def kernel_tensor_maps(func: PrimFunc) -> tuple[TensorMapRecord, ...]:
    """The tensor-map parameters a kernel's ``tw.tensor_maps`` attribute records.

    Example::

        >>> kernel_tensor_maps(mod["main_kernel"])
        (TensorMapRecord(index=2, buffer='A', dtype='float16', box=(128, 64), swizzle=128),)
    """
    raw = func.attr(TENSOR_MAPS_ATTR, ()) or ()
    assert isinstance(raw, tuple)  # split_host_device writes a tuple of records
    return tuple(
        TensorMapRecord(int(i), str(b), str(d), tuple(int(x) for x in box), int(s))
        for i, b, d, box, s in raw
    )


def tensor_map_buffers(tree: object) -> list[str]:
    """The names of the buffers whose ``tw.cuda.tensor_map`` is taken in ``tree`` (a function
    or statement not split by the GPU lowering), first seen first: what a target without
    tensor maps names when it refuses them.

    Example: ``tensor_map_buffers(func.body)`` is ``['A']``.
    """
    names: list[str] = []

    def visit(node: object) -> None:
        if isinstance(node, Call) and hopper.TENSOR_MAP.matches(node) and node.args:
            name = _name(node.args[0])
            if name not in names:
                names.append(name)

    post_order_visit(tree, visit)
    return names


def _name(data: PrimExpr) -> str:
    """The buffer a tensor_map call's first argument names: its data variable, or (once the
    lowering rewrote an allocated buffer's data) the buffer an address expression reads."""
    if isinstance(data, Var):
        return data.name
    loads: list[str] = []
    post_order_visit(
        data, lambda n: loads.append(n.buffer.name) if isinstance(n, BufferLoad) else None
    )
    return loads[0] if loads else str(data)


def _int(value: PrimExpr) -> int:
    assert isinstance(value, IntImm)  # checked by _key
    return value.value


def _key(call: Call, buffers: dict, kernel: str) -> tuple:
    data = call.args[0]
    if not isinstance(data, Var) or data not in buffers:
        name = _name(data)
        raise TensorMapLiftError(
            f"kernel {kernel}: tw.cuda.tensor_map of buffer {name}: {name} is not a buffer "
            "parameter of the function (a tensor map describes a global buffer the caller "
            "passes)"
        )
    buf = buffers[data]
    sizes = call.args[1:-1]
    if len(sizes) != buf.ndim or not all(isinstance(b, IntImm) and b.value > 0 for b in sizes):
        raise TensorMapLiftError(
            f"kernel {kernel}: tw.cuda.tensor_map of buffer {buf.name}: the box must be "
            f"{buf.ndim} positive constants (one per dimension, outermost first), got "
            f"({', '.join(str(b) for b in sizes)})"
        )
    swizzle = call.args[-1]
    if not isinstance(swizzle, IntImm) or swizzle.value not in SWIZZLES:
        raise TensorMapLiftError(
            f"kernel {kernel}: tw.cuda.tensor_map of buffer {buf.name}: swizzle {swizzle} (one "
            f"of {', '.join(map(str, SWIZZLES))} bytes)"
        )
    return (data, *(_int(b) for b in sizes), swizzle.value)


class _Replace(Mutator):
    def __init__(self, params: dict[tuple, Var], buffers: dict, kernel: str) -> None:
        super().__init__()
        self.params = params
        self.buffers = buffers
        self.kernel = kernel

    def visit_Call(self, e: Call) -> PrimExpr:
        if hopper.TENSOR_MAP.matches(e):
            return self.params[_key(e, self.buffers, self.kernel)]
        return self.generic_visit(e)
