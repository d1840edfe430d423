"""Lowered GPU function body → its kernels: the thread-bound loop nests, their names and extents.

A kernel is a maximal subtree rooted at an outermost thread-bound loop (``blockIdx.*`` or
``threadIdx.*``). Its launch dimensions are the extents of the thread-bound loops inside it;
every loop bound to one thread tag in a kernel must have the same extent. What lies outside
kernels may only sequence them (``SeqStmt``) and bind host scalars (``LetStmt``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewright.ir import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    LetStmt,
    PrimExpr,
    PrimFunc,
    SeqStmt,
    Stmt,
    Var,
    collect_vars,
    pre_order_visit,
    structural_equal,
)
from tilewright.transform.lower_vthread import is_vthread

GRID_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
BLOCK_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
THREAD_TAGS = GRID_TAGS + BLOCK_TAGS


class ThreadBindingError(ValueError):
    """Thread-bound loops that do not form valid kernels (unbound code, clashing extents)."""


@dataclass(frozen=True)
class Kernel:
    """One kernel of a function: its name, root loop and the extent of each thread tag."""

    name: str
    root: For
    extents: dict[str, PrimExpr]
    lets: tuple[LetStmt, ...]  # host let bindings around the kernel, outermost first


def kernel_name(func_name: str, number: int) -> str:
    """``f_kernel`` for the first kernel of ``f``, then ``f_kernel_1``, ``f_kernel_2``, ...

    Example::

        >>> kernel_name("main", 1)
        'main_kernel_1'
    """
    return f"{func_name}_kernel" if number == 0 else f"{func_name}_kernel_{number}"


def function_name(func: PrimFunc, default: str = "main") -> str:
    """The function's ``global_symbol`` attribute, or ``default``.

    Example::

        >>> function_name(func)   # "main" for T.func_attr({"global_symbol": "main"})
    """
    return str(func.attr("global_symbol", default))


def find_kernels(func: PrimFunc, name: str | None = None) -> list[Kernel]:
    """The kernels of ``func`` in execution order, with consistent thread extents checked.

    Raises ``ThreadBindingError`` naming the loop or statement that is not bound to any
    thread, or the two loops that bind one thread tag with different extents.

    Example::

        >>> [k.name for k in find_kernels(lowered_func)]
        ['main_kernel']
    """
    func_name = name or function_name(func)
    kernels: list[Kernel] = []
    _walk(func.body, func_name, kernels, ())
    return kernels


def _walk(stmt: Stmt, func_name: str, kernels: list[Kernel], lets: tuple[LetStmt, ...]) -> None:
    if isinstance(stmt, SeqStmt):
        for child in stmt.seq:
            _walk(child, func_name, kernels, lets)
    elif isinstance(stmt, LetStmt):
        _walk(stmt.body, func_name, kernels, (*lets, stmt))
    elif isinstance(stmt, For) and stmt.kind is ForKind.THREAD_BINDING:
        name = kernel_name(func_name, len(kernels))
        kernels.append(Kernel(name, stmt, thread_extents(stmt, name), lets))
    elif isinstance(stmt, Evaluate) and isinstance(stmt.value, IntImm):
        return  # T.evaluate(0): nothing to run
    elif isinstance(stmt, Allocate):
        buffer = stmt.buffer
        where = (
            "used by more than one kernel or outside any kernel"
            if buffer.scope != "global"
            else "a global intermediate buffer, which a GPU function cannot allocate yet"
        )
        raise ThreadBindingError(
            f"function {func_name}: buffer {buffer.name} ({buffer.scope}) is {where}; keep "
            "each shared/local buffer inside one kernel's thread-bound loops"
        )
    else:
        raise ThreadBindingError(
            f"function {func_name}: {_describe(stmt)} is not bound to any thread: bind its "
            "loops to blockIdx/threadIdx (sch.bind) so that it runs inside a kernel"
        )


def _describe(stmt: Stmt) -> str:
    if isinstance(stmt, For):
        return f"loop {stmt.loop_var.name}"
    if isinstance(stmt, BufferStore):
        return f"the store to {stmt.buffer.name}"
    if isinstance(stmt, IfThenElse):
        return "an if statement"
    return f"a {type(stmt).__name__} statement"


def thread_extents(root: For, kernel: str) -> dict[str, PrimExpr]:
    """The extent of each thread tag bound in the nest under ``root``, checked consistent.

    Example::

        >>> thread_extents(loop_i0, "main_kernel")
        {'blockIdx.x': IntImm(8), 'threadIdx.x': IntImm(128)}
    """
    seen: dict[str, tuple[PrimExpr, Var]] = {}

    def visit(node: object) -> bool:
        if isinstance(node, For) and node.kind is ForKind.THREAD_BINDING:
            tag = node.thread_tag
            if is_vthread(tag):
                raise ThreadBindingError(
                    f"kernel {kernel}: loop {node.loop_var.name} is still bound to {tag}; "
                    "virtual threads are not launched: run lower_vthread (a stage of "
                    "gpu_stages) before forming kernels"
                )
            if tag not in THREAD_TAGS:
                raise ThreadBindingError(
                    f"kernel {kernel}: loop {node.loop_var.name} is bound to unknown thread "
                    f"tag {tag!r}; expected one of {', '.join(THREAD_TAGS)}"
                )
            if not (isinstance(node.min, IntImm) and node.min.value == 0):
                raise ThreadBindingError(
                    f"kernel {kernel}: loop {node.loop_var.name} bound to {tag} starts at "
                    f"{node.min}, not 0"
                )
            if tag in seen:
                extent, other = seen[tag]
                if not _same_extent(extent, node.extent):
                    raise ThreadBindingError(
                        f"kernel {kernel}: {tag} is bound with extent {extent} by loop "
                        f"{other.name} and with extent {node.extent} by loop "
                        f"{node.loop_var.name}; loops bound to one thread axis need one extent"
                    )
            else:
                seen[tag] = (node.extent, node.loop_var)
        return True

    pre_order_visit(root, visit)
    return {tag: extent for tag, (extent, _) in seen.items()}


def _same_extent(a: PrimExpr, b: PrimExpr) -> bool:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    # Symbolic extents match only over the very same variables.
    return structural_equal(a, b) and all(
        x is y for x, y in zip(collect_vars(a), collect_vars(b), strict=True)
    )
