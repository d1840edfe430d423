"""PrimFunc with TVM's pre-schedule ``BufferRealize`` (and ``Prefetch``) → ``Allocate``s.

TVM's stage IR (``with T.realize(B[0:16, 0:16], ""):``) realizes a buffer over a region for a
body. A realize of the whole buffer from index 0 in the buffer's own scope is an allocation of
that buffer (nothing, for a parameter's buffer); any other realize is refused with an error
naming the buffer. A ``Prefetch`` is a
hint and is dropped.
"""

from __future__ import annotations

from tilewright.ir import (
    Allocate,
    AttrStmt,
    Buffer,
    BufferRealize,
    Evaluate,
    IntImm,
    Mutator,
    Prefetch,
    PrimFunc,
    Stmt,
    StringImm,
    pre_order_visit,
    structural_equal,
)
from tilewright.ir.dtype import int32


def lower_buffer_realize(func: PrimFunc) -> PrimFunc:
    """Replace each ``BufferRealize`` of a whole buffer by an ``Allocate`` of it; drop
    ``Prefetch`` hints.

    Args:
        func: a function that may hold TVM's stage IR (``T.realize``, ``T.prefetch``).

    Raises:
        ValueError: a realize over part of its buffer, with a condition, or in another scope.

    Example::

        # before                                    # after
        B = T.Buffer((16,), "float32")              B = T.decl_buffer((16,), "float32")
        with T.realize(B[0:16], ""):                for i in range(16):
            T.prefetch(A, [T.Range(0, 16)])             B[i] = A[i]
            for i in range(16):
                B[i] = A[i]
    """
    found: list[bool] = []

    def look(node: object) -> bool | None:
        if isinstance(node, BufferRealize | Prefetch):
            found.append(True)
        return None if not found else False

    pre_order_visit(func.body, look)
    if not found:
        return func
    params = {buffer for _, buffer in func.buffer_map}
    return func.with_body(_Lowerer(func.name, params).visit(func.body))


class _Lowerer(Mutator):
    def __init__(self, name: str, params: set[Buffer]) -> None:
        super().__init__()
        self.name = name
        self.params = params  # a parameter's storage exists: its realize allocates nothing

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if s.key == "realize_scope" and isinstance(s.body, BufferRealize):
            scope = s.value.value if isinstance(s.value, StringImm) else ""
            return self.realize(s.body, scope)
        return self.generic_visit(s)

    def visit_BufferRealize(self, s: BufferRealize) -> Stmt:
        return self.realize(s, "")

    def visit_Prefetch(self, s: Prefetch) -> Stmt:
        return Evaluate(IntImm(0, int32))

    def realize(self, s: BufferRealize, scope: str) -> Stmt:
        buffer = s.buffer
        whole = len(s.bounds) == len(buffer.shape) and all(
            isinstance(r.min, IntImm) and r.min.value == 0 and structural_equal(r.extent, dim)
            for r, dim in zip(s.bounds, buffer.shape)
        )
        condition = s.condition
        problem = None
        if not whole:
            problem = "a region that is not the whole buffer from index 0"
        elif not (isinstance(condition, IntImm) and condition.value == 1):
            problem = f"the condition {condition.script()}"
        elif scope not in ("", buffer.scope):
            problem = f"scope {scope!r} while the buffer is {buffer.scope!r}"
        if problem is not None:
            raise ValueError(
                f"{self.name}: cannot lower T.realize of {buffer.name} with {problem}; "
                "declare the buffer with T.alloc_buffer instead"
            )
        body = self.visit(s.body)
        return body if buffer in self.params else Allocate(buffer, body)
