"""Lowered device PrimFunc → kernel text: what CUDA, OpenCL and Metal printers share.

A device function (attribute ``tir.is_kernel``) keeps its thread-bound loops as
``For(kind=THREAD_BINDING)``; the printer emits no loop for them, only a variable bound to
the thread index. ``intrinsics.SYNC_THREADS`` is the block-wide barrier. Shared
allocations are declared once at the top of the kernel (OpenCL and Metal require it).
A store whose index is ``Ramp(base, 1, lanes)`` with a vector type for the buffer's dtype
becomes one vector load/store; other vector statements fall back to a loop over lanes.
"""

from __future__ import annotations

import dataclasses
from abc import ABCMeta, abstractmethod
from typing import ClassVar, TypeVar, cast

from tilewright.codegen.c_like import (
    PREC_UNARY,
    CLikePrinter,
    CodegenError,
    Emitter,
    Expr,
    StatementEmitter,
)
from tilewright.ir import (
    Add,
    BinaryOp,
    Broadcast,
    Buffer,
    BufferLoad,
    Call,
    DataType,
    Div,
    FloatImm,
    IntImm,
    IRModule,
    Max,
    Min,
    Mul,
    PrimExpr,
    PrimFunc,
    Ramp,
    Sub,
    Var,
    collect_vars,
    intrinsics,
    post_order_visit,
)
from tilewright.ir.intrinsics import Intrinsic
from tilewright.ir.stmt import Allocate, Attrs, BufferStore, For, ForKind
from tilewright.transform import is_aligned_ramp
from tilewright.transform.tensor_maps import TensorMapRecord, kernel_tensor_maps

THREAD_TAGS = tuple(f"{kind}.{axis}" for kind in ("blockIdx", "threadIdx") for axis in "xyz")
_VECTOR_OPS = {Add: "+", Sub: "-", Mul: "*", Div: "/"}


def thread_extents(func: PrimFunc) -> dict[str, int]:
    """The launch extents a device function declares in its ``thread_extent`` attribute.

    Example::

        >>> thread_extents(kernel)     # constant extents only
        {'blockIdx.x': 8, 'threadIdx.x': 128}
    """
    raw = func.attr("thread_extent", ()) or ()
    # The attribute holds attrs() pairs (a dict only when built by hand).
    items = raw.items() if isinstance(raw, dict) else cast(Attrs, raw)
    out: dict[str, int] = {}
    for key, value in items:
        if isinstance(value, int | IntImm):  # symbolic extents are known only at launch
            out[str(key)] = int(value)
    return out


class DevicePrinter(CLikePrinter, metaclass=ABCMeta):
    """A C-like printer for one GPU kernel; language subclasses fill the tables."""

    # thread tag → the expression giving that index in the language
    thread_index: ClassVar[dict[str, str]] = {}
    barrier = ""
    # storage scope → the declaration qualifier of an allocation in that scope
    scope_qualifiers: ClassVar[dict[str, str]] = {"shared": "", "shared.dyn": "", "local": ""}
    # (element dtype, lanes) → the vector type with arithmetic operators
    vector_types: ClassVar[dict[tuple[str, int], str]] = {}
    unroll_pragma = "#pragma unroll"
    # whether kernels may take TMA tensor maps (``tw.tensor_maps``) as parameters
    tensor_map_params = False

    def __init__(self) -> None:
        super().__init__()
        self.tensor_maps: dict[Var, TensorMapRecord] = {}  # tensor-map parameters
        self.hoisted: list[str] = []
        self.uses: set[str] = set()  # features the prelude must provide (half, bfloat16, ...)
        self.vector_accessed: set[Var] = set()  # buffers read or written as vectors

    # ---- types -----------------------------------------------------------------------------

    def value_type(self, dtype: DataType) -> str:
        if dtype.is_float and dtype.bits == 16:
            self.uses.add(str(dtype.element))
        return super().value_type(dtype)

    def vector_type(self, dtype: DataType, lanes: int) -> str | None:
        return self.vector_types.get((str(dtype.element), lanes))

    def expr_FloatImm(self, e: FloatImm) -> Expr:
        out = super().expr_FloatImm(e)
        if e.dtype.bits != 16:
            return out
        # A half-precision constant is cast so that C++ overloads see one type.
        return Expr(f"({self.value_type(e.dtype)}){out.text}", PREC_UNARY)

    def min_max(self, e: Min | Max) -> Expr:
        if e.dtype.is_float and e.dtype.bits == 16:
            return super().min_max(e)
        # The GPU languages overload min and max for every other scalar type.
        kind = "min" if isinstance(e, Min) else "max"
        return Expr(f"{kind}({self.expr_text(e.a)}, {self.expr_text(e.b)})")

    # ---- intrinsics ------------------------------------------------------------------------

    def emit_host_only(self, e: Call) -> Expr:
        raise CodegenError(f"{self.func_name}: {e.op} belongs to the host function")

    emitters: ClassVar[dict[Intrinsic, Emitter]] = {
        **CLikePrinter.emitters,
        intrinsics.SYNC_THREADS: lambda p, e: Expr(cast(DevicePrinter, p).barrier),
        intrinsics.LAUNCH_KERNEL: lambda p, e: cast(DevicePrinter, p).emit_host_only(e),
    }
    statement_emitters: ClassVar[dict[Intrinsic, StatementEmitter]] = {
        **CLikePrinter.statement_emitters,
        intrinsics.SYNC_THREADS: lambda p, e: p.emit(f"{cast(DevicePrinter, p).barrier};"),
    }

    # ---- loops and threads -------------------------------------------------------------------

    def stmt_For(self, s: For) -> None:
        if s.kind is ForKind.THREAD_BINDING:
            self.bind_thread(s)
            return
        if s.kind is ForKind.UNROLLED and isinstance(s.extent, IntImm):
            self.emit(self.unroll_pragma)
        super().stmt_For(s)

    def bind_thread(self, s: For) -> None:
        tag = s.thread_tag
        if tag not in self.thread_index:
            raise CodegenError(
                f"{self.func_name}: loop {s.loop_var.name} is bound to {tag!r}; the "
                f"{self.target_name} target knows {', '.join(self.thread_index)}"
            )
        ctype = self.value_type(s.loop_var.dtype)
        index = f"({ctype}){self.thread_index[tag]}"
        if not (isinstance(s.min, IntImm) and s.min.value == 0):
            index = f"{index} + {self.operand(s.min, 12, right=True)}"
        if self.is_nonneg(s.min):
            self.nonneg.add(s.loop_var)
        if s.loop_var in collect_vars(s.body):  # an intrinsic's own binding may go unused
            name = self.define(s.loop_var)
            self.emit(f"{ctype} {name} = {index};")
        self.stmt(s.body)

    # ---- allocation --------------------------------------------------------------------------

    def constant_size(self, s: Allocate) -> int:
        count = 1
        for dim in s.buffer.shape:
            if not isinstance(dim, IntImm):
                raise CodegenError(
                    f"{self.func_name}: {s.buffer.scope} buffer {s.buffer.name} has symbolic "
                    f"size {dim}; the {self.target_name} target needs a constant size"
                )
            count *= dim.value
        return max(count, 1)

    def stmt_Allocate(self, s: Allocate) -> None:
        buf = s.buffer
        if buf.scope not in self.scope_qualifiers:
            raise CodegenError(
                f"{self.func_name}: buffer {buf.name} is allocated in scope {buf.scope!r}; a "
                f"{self.target_name} kernel allocates only in "
                f"{', '.join(repr(k) for k in self.scope_qualifiers)}"
            )
        count = self.constant_size(s)
        name = self.define(buf.data, buf.name)
        line = self.declare_array(buf.scope, self.storage_type(buf.dtype), name, count, buf)
        if buf.scope.startswith("shared"):
            self.hoisted.append(line)
        else:
            self.emit(line)
        self.stmt(s.body)

    def declare_array(self, scope: str, ctype: str, name: str, count: int, buf: Buffer) -> str:
        qualifier = self.scope_qualifiers[scope]
        return f"{qualifier + ' ' if qualifier else ''}{ctype} {name}[{count}];"

    # ---- vector accesses ---------------------------------------------------------------------

    def stmt_BufferStore(self, s: BufferStore) -> None:
        index = s.indices[0] if len(s.indices) == 1 else None
        if isinstance(index, Ramp) and is_aligned_ramp(index):
            value = self.vector_value(s.value, index.lanes)
            vtype = self.vector_type(s.buffer.dtype, index.lanes)
            if value is not None and vtype is not None:
                pointer = self.pointer(s.buffer.data, index.base)
                self.emit(self.vector_store(pointer, value, vtype, s.buffer.data, index.lanes))
                return
        super().stmt_BufferStore(s)

    @staticmethod
    def is_unit(e: PrimExpr) -> bool:
        return isinstance(e, IntImm) and e.value == 1

    def pointer(self, data: Var, base: PrimExpr) -> str:
        """``data + base`` as text (``data`` alone when ``base`` is zero)."""
        if isinstance(base, IntImm) and base.value == 0:
            return self.name_of(data)
        return f"{self.name_of(data)} + {self.operand(base, 12, right=True)}"

    def vector_value(self, e: PrimExpr, lanes: int) -> str | None:
        """``e`` (of ``lanes`` lanes) as one vector expression, or None if it has none."""
        if e.dtype.lanes != lanes or self.vector_type(e.dtype, lanes) is None:
            return None
        if isinstance(e, BufferLoad) and len(e.indices) == 1:
            index = e.indices[0]
            data = e.buffer.data
            # A vector type needs an address aligned to its size; otherwise per-lane code.
            if not isinstance(index, Ramp) or not is_aligned_ramp(index):
                return None
            if data in self.value_arrays or data not in self.names:
                return None
            vtype = self.vector_type(e.dtype, lanes)
            return self.vector_load(self.pointer(data, index.base), vtype or "", data, lanes)
        if isinstance(e, Broadcast):
            scalar = self.expr_text(e.value)
            return self.broadcast(scalar, self.vector_type(e.dtype, lanes) or "", lanes)
        if (
            isinstance(e, BinaryOp)
            and type(e) in _VECTOR_OPS
            and self.vector_arithmetic(e.dtype, lanes)
        ):
            a = self.vector_value(e.a, lanes)
            b = self.vector_value(e.b, lanes)
            if a is None or b is None:
                return None
            symbol = _VECTOR_OPS[type(e)]
            self.vector_operator_used(self.vector_type(e.dtype, lanes) or "", lanes, symbol)
            return f"({a} {symbol} {b})"
        return None

    def vector_arithmetic(self, dtype: DataType, lanes: int) -> bool:
        """Whether the language has operators on this vector type."""
        return True

    def vector_operator_used(self, vtype: str, lanes: int, symbol: str) -> None:
        """Called when an operator on ``vtype`` is printed (CUDA defines them on demand)."""

    @abstractmethod
    def vector_load(self, pointer: str, vtype: str, data: Var, lanes: int) -> str:
        """The language's spelling of this vector operation."""

    @abstractmethod
    def vector_store(self, pointer: str, value: str, vtype: str, data: Var, lanes: int) -> str:
        """The language's spelling of this vector operation."""

    @abstractmethod
    def broadcast(self, scalar: str, vtype: str, lanes: int) -> str:
        """The language's spelling of this vector operation."""

    # ---- the kernel --------------------------------------------------------------------------

    def kernel(self, name: str, func: PrimFunc) -> str:
        """The text of one device function named ``name``."""
        self.func_name = name
        maps = kernel_tensor_maps(func)
        if maps and not self.tensor_map_params:
            buffers = ", ".join(m.buffer for m in maps)
            raise CodegenError(
                f"kernel {name} takes the TMA tensor map of buffer {buffers} "
                f"(tw.cuda.tensor_map); the {self.target_name} target has no tensor maps "
                "(cuda only)"
            )
        self.tensor_maps = {func.params[m.index]: m for m in maps}
        params: list[tuple[Var, str, str | None]] = []  # (var, C name, element type or None)
        for var in func.params:
            buf = func.buffer_of(var)
            if buf is None:
                params.append((var, self.define(var), None))
                continue
            if var is not buf.data:
                self.names[var] = self.define(buf.data, buf.name)
            else:
                self.define(buf.data, buf.name)
            params.append((buf.data, self.names[buf.data], self.storage_type(buf.dtype)))
        self.indent = 1
        self.vector_accessed = vector_accessed_buffers(func)
        self.stmt(func.body)
        head = self.kernel_head(name, func, params)
        hoisted = ["  " + line for line in self.hoisted]
        return "\n".join([head, *hoisted, *self.lines, "}"])

    @abstractmethod
    def kernel_head(
        self, name: str, func: PrimFunc, params: list[tuple[Var, str, str | None]]
    ) -> str:
        """The kernel's signature line, ending with ``{``."""

    def scalar_param(self, var: Var, cname: str) -> str:
        return f"{self.value_type(var.dtype)} {cname}"


def vector_accessed_buffers(func: PrimFunc) -> set[Var]:
    """The data variables of buffers that ``func`` accesses with vector ramps or by address
    (``tw.address_of``, ``tw.region_data``): their storage must be aligned for vector
    loads and stores."""
    found: set[Var] = set()

    def visit(node: object) -> None:
        if isinstance(node, BufferLoad | BufferStore) and any(
            isinstance(i, Ramp) for i in node.indices
        ):
            found.add(node.buffer.data)
        if isinstance(node, Call) and intrinsics.is_call(
            node, intrinsics.ADDRESS_OF, intrinsics.REGION_DATA
        ):
            for arg in node.args:
                if isinstance(arg, BufferLoad):
                    found.add(arg.buffer.data)

    post_order_visit(func.body, visit)
    return found


@dataclasses.dataclass(frozen=True)
class DeviceSource:
    """Generated device code: the text, its language, and each kernel's function by name."""

    text: str
    language: str
    kernels: dict[str, PrimFunc]
    # kernel → bytes of dynamic shared memory its declarations use (CUDA's shared.dyn)
    dyn_shared_bytes: dict[str, int] = dataclasses.field(default_factory=dict)
    # the one architecture the code compiles for, when it uses architecture-specific
    # instructions ("sm_90a" for wgmma); "" when any of the language's will do
    required_arch: str = ""


def device_functions(mod: IRModule, kind: str) -> list[tuple[str, PrimFunc]]:
    """The kernels of a lowered module for target kind ``kind``, in module order.

    Example::

        >>> [name for name, _ in device_functions(lowered, "cuda")]
        ['main_kernel']
    """
    out = []
    for name, func in mod.items():
        if not func.attr("tir.is_kernel", False):
            continue
        declared = func.attr("target_kind", kind)
        if declared != kind:
            raise CodegenError(f"kernel {name} was lowered for {declared}, not {kind}")
        out.append((str(func.attr("global_symbol", name)), func))
    return out


_Printer = TypeVar("_Printer", bound=DevicePrinter)


def print_kernels(
    mod: IRModule, kind: str, printer_type: type[_Printer]
) -> tuple[str, dict[str, PrimFunc], dict[str, _Printer]]:
    """The kernels of a lowered module for ``kind``, each printed by a fresh ``printer_type``:
    the text (the helpers they call, each once, then the kernels), the functions and the
    printers by kernel name.

    Example: ``text, kernels, printers = print_kernels(lowered, "metal", MetalPrinter)``.
    """
    pieces: list[str] = []
    helpers: dict[str, str] = {}
    kernels: dict[str, PrimFunc] = {}
    printers: dict[str, _Printer] = {}
    for name, func in device_functions(mod, kind):
        printers[name] = printer = printer_type()
        pieces.append(printer.kernel(name, func))
        for key, text in printer.helpers.items():
            helpers.setdefault(key, text)
        kernels[name] = func
    text = "".join(h + "\n" for h in helpers.values()) + "\n\n".join(pieces) + "\n"
    return text, kernels, printers
