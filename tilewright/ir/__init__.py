"""The IR: expressions, statements, buffers, functions, modules, traversal and equality."""

# intrinsics_hopper adds the Hopper intrinsics to the intrinsic table when the IR loads.
from tilewright.ir import intrinsics_hopper, op
from tilewright.ir.buffer import Buffer, BufferRegion, decl_buffer
from tilewright.ir.comm_reducer import CommReducer
from tilewright.ir.dtype import DataType, dtype
from tilewright.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    PrimType,
    Ramp,
    Range,
    Select,
    Shuffle,
    StringImm,
    Sub,
    Var,
)
from tilewright.ir.function import PrimFunc
from tilewright.ir.functor import (
    Mutator,
    Visitor,
    collect_vars,
    post_order_visit,
    pre_order_visit,
    substitute,
)
from tilewright.ir.module import IRModule
from tilewright.ir.node import Node
from tilewright.ir.op import cast, const, convert
from tilewright.ir.span import Span
from tilewright.ir.stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    Attrs,
    AttrStmt,
    Block,
    BlockRealize,
    BufferRealize,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    IterVar,
    LetStmt,
    MatchBufferRegion,
    Prefetch,
    SeqStmt,
    Stmt,
    While,
    attrs,
    seq,
)
from tilewright.ir.structural import (
    assert_structural_equal,
    find_mismatch,
    structural_equal,
    structural_hash,
)

__all__ = [name for name in dir() if not name.startswith("_")]
