"""Lowered IRModule → source ``Artifact``: the generated text with everything a runtime needs.

``c_artifact`` holds a C translation unit and each function's argument contract;
``device_artifact`` holds GPU kernels in one language, their parameter types, each host
function's launch plan, and host signatures whose buffers say whether a kernel writes them
and how aligned its vector accesses need them. A backend's compiler then adds the binary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tilewright.artifact import TENSOR_MAP, Artifact, FuncSignature, KernelInfo, TensorMapParam
from tilewright.codegen.c import generate_c
from tilewright.codegen.device_printer import DeviceSource, vector_accessed_buffers
from tilewright.codegen.host_plan import host_plan
from tilewright.codegen.signature import func_signature
from tilewright.ir import BufferStore, Call, IRModule, PrimFunc, Var, intrinsics, post_order_visit
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.transform.tensor_maps import kernel_tensor_maps

# Vector accesses of a buffer assume its first element is aligned to the widest vector.
VECTOR_ALIGN = 16


def c_artifact(
    lowered: IRModule, target: str, symbol: Callable[[str], str] | None = None
) -> Artifact:
    """The C source of a module lowered for the CPU, as an artifact to compile.

    Example: ``c_artifact(tw.lower(mod, "c"), "c").source``.
    """
    source = generate_c(lowered, symbol)
    return Artifact(
        format="source",
        target=target,
        kind="c",
        source=source.text,
        functions=tuple(source.signatures.values()),
    )


def device_artifact(
    lowered: IRModule,
    generate: Callable[[IRModule], DeviceSource],
    target: str,
    kind: str,
) -> Artifact:
    """The device source of a module lowered for a GPU kind, with its host launch plans.

    Arguments:
        lowered: host functions (launching kernels) and kernels (``tir.is_kernel``).
        generate: the language's printer entry (``generate_cuda``, ...).
        target: the target as spelled; kind: its kind.

    Example: ``device_artifact(tw.lower(mod, "cuda"), generate_cuda, "nvidia/h200", "cuda")``.
    """
    source = generate(lowered)
    hosts = {n: f for n, f in lowered.items() if not f.attr("tir.is_kernel", False)}
    plans = tuple(host_plan(name, func) for name, func in hosts.items())
    functions = tuple(
        _with_launch_facts(func_signature(name, func), func, source.kernels)
        for name, func in hosts.items()
    )
    for plan in plans:
        missing = [k for k in plan.kernels if k not in source.kernels]
        if missing:
            raise ValueError(
                f"host function {plan.name} launches {', '.join(missing)}, which the module "
                "does not define"
            )
    kernels = {
        name: _kernel_info(func, source.dyn_shared_bytes.get(name, 0))
        for name, func in source.kernels.items()
    }
    return Artifact(
        format="source",
        target=target,
        kind=kind,
        source=source.text,
        functions=functions,
        host_plans=plans,
        kernels=kernels,
        arch=source.required_arch,
    )


def _kernel_info(func: PrimFunc, dyn_shared_bytes: int) -> KernelInfo:
    """Each parameter's kind (a pointer, a scalar dtype, a tensor map) and the maps' records."""
    maps = {
        m.index: TensorMapParam(m.index, m.buffer, m.dtype, m.box, m.swizzle)
        for m in kernel_tensor_maps(func)
    }
    kinds = tuple(
        TENSOR_MAP if i in maps else None if func.buffer_of(v) is not None else str(v.dtype)
        for i, v in enumerate(func.params)
    )
    return KernelInfo(kinds, dyn_shared_bytes, tuple(maps.values()))


def _with_launch_facts(
    sig: FuncSignature, host: PrimFunc, kernels: dict[str, PrimFunc]
) -> FuncSignature:
    """``sig`` with, for each buffer, ``written`` set when some launched kernel stores into it
    (the host body itself stores nothing) and ``align`` when some kernel reads or writes it
    with vector accesses."""
    written: set[Var] = set()
    vectored: set[Var] = set()

    def visit(node: object) -> None:
        if not (intrinsics.LAUNCH_KERNEL.matches(node) and isinstance(node, Call) and node.args):
            return
        kernel = kernels.get(getattr(node.args[0], "value", ""))
        if kernel is None:
            return
        stored, vector = _stored_data(kernel), vector_accessed_buffers(kernel)
        for param, arg in zip(kernel.params, node.args[8:]):
            if isinstance(arg, Call) and hopper.TENSOR_MAP.matches(arg):
                if param in stored and isinstance(arg.args[0], Var):
                    written.add(arg.args[0])  # TMA stores write the buffer through the map
                continue
            buf = kernel.buffer_of(param)
            if buf is None or not isinstance(arg, Var):
                continue
            if buf.data in stored:
                written.add(arg)
            if buf.data in vector:
                vectored.add(arg)

    post_order_visit(host.body, visit)
    params = []
    for var, spec in zip(host.params, sig.params):
        buf = host.buffer_of(var)
        keys = {var} if buf is None else {var, buf.data}
        params.append(
            dataclasses.replace(
                spec,
                written=spec.written or bool(keys & written),
                align=VECTOR_ALIGN if keys & vectored else spec.align,
            )
        )
    return dataclasses.replace(sig, params=tuple(params))


def _stored_data(func: PrimFunc) -> set[Var]:
    """The buffers ``func`` stores into, and the tensor maps its TMA stores write through."""
    found: set[Var] = set()

    def visit(node: object) -> None:
        if isinstance(node, BufferStore):
            found.add(node.buffer.data)
        if isinstance(node, Call) and hopper.TMA_STORE.matches(node):
            found.update(a for a in node.args[:1] if isinstance(a, Var))

    post_order_visit(func.body, visit)
    return found
