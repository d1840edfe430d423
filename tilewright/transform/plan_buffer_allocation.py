"""Lowered loop nest with ``Allocate`` at block positions → each allocation moved to its uses' LCA.

``lower_blocks`` leaves every ``alloc_buffer`` where its block was (the root block's around the
whole body). On a GPU that is too high: a ``shared`` buffer must live per thread block and a
``local`` one per thread, and the region a buffer needs (see ``compact_buffer_allocation``) is
smallest at the innermost loop that still encloses every access.
"""

from __future__ import annotations

from tilewright.ir import (
    Allocate,
    AllocateConst,
    Buffer,
    BufferLoad,
    BufferStore,
    FloorMod,
    For,
    Mutator,
    PrimExpr,
    PrimFunc,
    Stmt,
    Var,
    Visitor,
    collect_vars,
    structural_equal,
)


def plan_buffer_allocation(func: PrimFunc, *, keep_global: bool = True) -> PrimFunc:
    """Move each ``Allocate`` to the lowest loop whose body holds every access of its buffer.

    The allocation wraps the body of that loop (or the whole function body when the accesses
    share no loop). With ``keep_global`` (GPU targets) buffers in ``global`` scope stay where
    they are: they cannot live inside a kernel. On the CPU they move like the others, so that
    a tile-sized cache (``cache_write(block, 0, "global")``) lives on the stack of the loop
    that uses it. Shared buffers may land inside a ``threadIdx`` loop (a loop that is not a loop on
    the device): ``compact_buffer_allocation`` then relaxes the thread index, so the buffer
    still holds what the whole thread block touches. An allocation nobody accesses is dropped.

    Args:
        func: a function after ``lower_blocks`` (allocations are ``Allocate`` statements).
        keep_global: leave ``global`` allocations in place.

    Example::

        # before                                   # after
        A_shared = alloc((1027,), scope="shared")  for i_0 in thread_binding(8, "blockIdx.x"):
        for i_0 in thread_binding(8, "blockIdx.x"):    for i_1 in thread_binding(128, ...):
            for i_1 in thread_binding(128, ...):           A_shared = alloc((1027,), "shared")
                ... A_shared ...                           ... A_shared ...
    """
    finder = _UseFinder()
    finder.visit(func.body)
    places: dict[Var, tuple[For, ...] | None] = {}
    for data, alloc in finder.allocations.items():
        if alloc.buffer.scope == "global" and keep_global:
            continue
        paths = finder.uses.get(data, [])
        place = _common_prefix(paths) if paths else None
        # A rolling buffer (indexed modulo its extent by a loop) passes values from one
        # iteration of that loop to the next: it must live outside the loop.
        rolled = finder.rolled.get(data, set())
        cut = next(
            (k for k, f in enumerate(place or ()) if f.loop_var in rolled and not f.thread_tag),
            None,
        )
        places[data] = place if place is None or cut is None else place[:cut]
    if not places:
        return func
    body = _Placer(places, finder.allocations).visit(func.body)
    # Allocations whose place is the function body (no common loop) go around it.
    for data in reversed(list(finder.allocations)):
        if places.get(data) == ():
            body = Allocate(finder.allocations[data].buffer, body)
    return func.with_body(body)


def _common_prefix(paths: list[tuple[For, ...]]) -> tuple[For, ...]:
    first = paths[0]
    length = len(first)
    for path in paths[1:]:
        length = min(length, len(path))
        for depth in range(length):
            if path[depth] is not first[depth]:
                length = depth
                break
    return first[:length]


class _UseFinder(Visitor):
    """Records each allocation and the loop path to every access of its buffer."""

    def __init__(self) -> None:
        self.loops: list[For] = []
        self.allocations: dict[Var, Allocate] = {}
        self.uses: dict[Var, list[tuple[For, ...]]] = {}
        self.rolled: dict[Var, set[Var]] = {}

    def visit_For(self, loop: For) -> None:
        self.visit((loop.min, loop.extent))
        self.loops.append(loop)
        self.visit(loop.body)
        self.loops.pop()

    def visit_Allocate(self, alloc: Allocate) -> None:
        self.allocations.setdefault(alloc.buffer.data, alloc)
        self.visit(alloc.buffer.shape)
        self.visit(alloc.body)

    def visit_AllocateConst(self, alloc: AllocateConst) -> None:
        self.visit(alloc.body)  # constant data stays where it is declared, whole

    def use(self, buffer: Buffer, indices: tuple[PrimExpr, ...] = ()) -> None:
        self.uses.setdefault(buffer.data, []).append(tuple(self.loops))
        for index, extent in zip(indices, buffer.shape):
            if isinstance(index, FloorMod) and structural_equal(index.b, extent):
                self.rolled.setdefault(buffer.data, set()).update(collect_vars(index.a))

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self.use(load.buffer, load.indices)
        self.visit(load.indices)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self.use(store.buffer, store.indices)
        self.visit((store.value, store.indices))


class _Placer(Mutator):
    def __init__(
        self, places: dict[Var, tuple[For, ...] | None], allocations: dict[Var, Allocate]
    ) -> None:
        super().__init__()
        self.places = places
        self.allocations = allocations
        # loop → the buffers whose allocation wraps that loop's body, in allocation order
        self.at_loop: dict[int, list[Buffer]] = {}
        for data, path in places.items():
            if path:
                self.at_loop.setdefault(id(path[-1]), []).append(allocations[data].buffer)

    def visit_Allocate(self, alloc: Allocate) -> Stmt:
        body: Stmt = self.visit(alloc.body)
        if alloc.buffer.data in self.places and self.allocations.get(alloc.buffer.data) is alloc:
            return body
        return alloc.replace(body=body)

    def visit_For(self, loop: For) -> Stmt:
        body: Stmt = self.visit(loop.body)
        for buffer in reversed(self.at_loop.get(id(loop), [])):
            body = Allocate(buffer, body)
        return loop.replace(body=body)
