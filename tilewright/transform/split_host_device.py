"""Lowered GPU function → a module of one host function that launches kernels, and the kernels.

The host function keeps the source's name, parameters and N-d ``buffer_map``; its body is a
sequence (with the source's top-level ``LetStmt`` bindings) of

    ``T.evaluate(T.call("tw.launch_kernel", name, gx, gy, gz, bx, by, bz, dyn_shared, *args))``

(``intrinsics.LAUNCH_KERNEL``).

Each kernel is a device function ``f_kernel`` (``f_kernel_1``, ...): one handle parameter per
buffer it uses (bound in ``buffer_map`` to the flat buffer the body indexes), then the scalars
it reads, then one handle per distinct TMA tensor map (``tw.cuda.tensor_map``, see
``tensor_maps.py``; the host passes the call, the kernel's ``tw.tensor_maps`` attribute
describes it); its body is the thread-bound nest, loops kept; its attributes give the launch extents
and the bytes of dynamic shared memory.
"""

from __future__ import annotations

from tilewright.ir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    Evaluate,
    For,
    IntImm,
    IRModule,
    Let,
    LetStmt,
    PrimExpr,
    PrimFunc,
    SeqStmt,
    Stmt,
    StringImm,
    Var,
    Visitor,
    attrs,
    intrinsics,
    seq,
)
from tilewright.ir.dtype import handle, int32
from tilewright.ir.stmt import AttrValue
from tilewright.target import Target
from tilewright.transform.device_kernels import (
    BLOCK_TAGS,
    GRID_TAGS,
    Kernel,
    ThreadBindingError,
    find_kernels,
    function_name,
)
from tilewright.transform.tensor_maps import TENSOR_MAPS_ATTR, lift_tensor_maps
from tilewright.transform.verify_gpu_code import buffer_bytes


def split_host_device(func: PrimFunc, target: Target | str) -> IRModule:
    """Split ``func`` into its host function and one device function per kernel.

    Args:
        func: a lowered function for a GPU target; code outside thread-bound loops other than
            let bindings is an error (``ThreadBindingError``: "... is not bound to any thread").
        target: the target; its kind is recorded on each kernel as its ``target_kind``
            attribute.

    Example::

        >>> mod = split_host_device(lowered_vector_add, Target("cuda"))
        >>> list(mod)
        ['main', 'main_kernel']
        >>> mod["main_kernel"].attr("thread_extent")
        (('blockIdx.x', 8), ('threadIdx.x', 128))
    """
    target_kind = str(Target(target).kind)
    name = function_name(func)
    kernels = find_kernels(func, name)
    functions: dict[str, PrimFunc] = {}
    launches: dict[int, Evaluate] = {}
    for kernel in kernels:
        device, args = _device_function(func, kernel, target_kind)
        functions[kernel.name] = device
        launches[id(kernel.root)] = _launch(kernel, device, args)
    host = func.with_body(_host_body(func.body, launches))
    return IRModule({name: host, **functions})


def _host_body(stmt: Stmt, launches: dict[int, Evaluate]) -> Stmt:
    if isinstance(stmt, SeqStmt):
        return seq(*(_host_body(s, launches) for s in stmt.seq))
    if isinstance(stmt, LetStmt):
        return stmt.replace(body=_host_body(stmt.body, launches))
    if id(stmt) in launches:
        return launches[id(stmt)]
    return stmt  # T.evaluate(0), the only other statement find_kernels lets through


def _launch(kernel: Kernel, device: PrimFunc, args: list[PrimExpr]) -> Evaluate:
    def extent(tag: str) -> PrimExpr:
        return kernel.extents.get(tag, IntImm(1, int32))

    dims = [extent(t) for t in GRID_TAGS] + [extent(t) for t in BLOCK_TAGS]
    nbytes = device.attr("dyn_shared_memory_bytes", 0)
    assert isinstance(nbytes, int)  # _device_function stores the byte count
    shared = IntImm(nbytes, int32)
    call_args = (StringImm(kernel.name), *dims, shared, *args)
    return intrinsics.LAUNCH_KERNEL.stmt(*call_args)


def _device_function(
    func: PrimFunc, kernel: Kernel, target_kind: str
) -> tuple[PrimFunc, list[PrimExpr]]:
    lifted = lift_tensor_maps(kernel.root, func, kernel.name)
    map_params = [var for var, _ in lifted.maps]
    uses = _Uses()
    uses.visit(lifted.body)
    order = {p: i for i, p in enumerate(func.params)}
    params_of = {buf.data: param for param, buf in func.buffer_map}
    buffers = []
    for data, buffer in uses.buffers.items():
        if data in uses.defined:
            continue
        if data not in params_of:
            raise ThreadBindingError(
                f"kernel {kernel.name} uses buffer {buffer.name} ({buffer.scope}), which is "
                "neither a parameter of the function nor allocated inside the kernel"
            )
        buffers.append(buffer)
    buffers.sort(key=lambda b: order[params_of[b.data]])
    scalars = [
        v
        for v in uses.free
        if v not in uses.defined and v not in uses.buffers and v not in map_params
    ]
    scalars.sort(key=lambda v: order.get(v, len(order)))
    handles = [Var(b.name, handle) for b in buffers]
    dyn = sum(buffer_bytes(b) for b in uses.allocated if b.scope == "shared.dyn")
    extents: dict[str, AttrValue] = {
        tag: (e.value if isinstance(e, IntImm) else e) for tag, e in kernel.extents.items()
    }
    maps = lifted.records(len(handles) + len(scalars))
    device = PrimFunc(
        params=(*handles, *scalars, *map_params),
        body=lifted.body,
        buffer_map=tuple(zip(handles, buffers)),
        attrs=attrs(
            {
                "global_symbol": kernel.name,
                "tir.is_kernel": True,
                "target_kind": target_kind,
                "thread_extent": attrs(extents),
                "dyn_shared_memory_bytes": dyn,
                **({"tir.noalias": True} if func.attr("tir.noalias", False) else {}),
                **({TENSOR_MAPS_ATTR: tuple(m.to_attr() for m in maps)} if maps else {}),
            }
        ),
    )
    # The host passes each map as its tensor_map call: the map of that buffer parameter.
    return device, [b.data for b in buffers] + scalars + [call for _, call in lifted.maps]


class _Uses(Visitor):
    """Buffers a kernel touches, variables it defines, and the free variables it reads."""

    def __init__(self) -> None:
        self.buffers: dict[Var, Buffer] = {}
        self.allocated: list[Buffer] = []
        self.defined: set[Var] = set()
        self.free: list[Var] = []

    def visit_Var(self, var: Var) -> None:
        if var not in self.defined and var not in self.free:
            self.free.append(var)

    def visit_Buffer(self, buffer: Buffer) -> None:
        self.buffers.setdefault(buffer.data, buffer)

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self.visit_Buffer(load.buffer)
        self.visit(load.indices)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self.visit_Buffer(store.buffer)
        self.visit((store.value, store.indices))

    def visit_For(self, loop: For) -> None:
        self.defined.add(loop.loop_var)
        self.visit((loop.min, loop.extent, loop.body))

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.visit(stmt.value)
        self.defined.add(stmt.var)
        self.visit(stmt.body)

    def visit_Let(self, expr: Let) -> None:
        self.visit(expr.value)
        self.defined.add(expr.var)
        self.visit(expr.body)

    def visit_Allocate(self, alloc: Allocate) -> None:
        self.defined.add(alloc.buffer.data)
        self.allocated.append(alloc.buffer)
        self.visit(alloc.buffer.shape)
        self.visit(alloc.body)
