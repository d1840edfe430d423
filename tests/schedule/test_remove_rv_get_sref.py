"""remove_rv drops a reference (later uses are refused, naming remove_rv); get_sref gives a
snapshot of where a block or loop is, its node and its parents."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.schedule import Schedule
from tilewright.schedule.iter_methods import StmtSRef
from tilewright.script import tir as T


@T.prim_func
def matmul(
    A: T.Buffer((8, 6), "float32"), B: T.Buffer((6, 4), "float32"), C: T.Buffer((8, 4), "float32")
):
    for i, j, k in T.grid(8, 4, 6):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_a_removed_reference_is_refused_by_name() -> None:
    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    tiles = sch.sample_perfect_tile(i, n=2, decision=[2, 4])
    for ref in (block, k, tiles[0]):
        sch.remove_rv(ref)
    error = check_refused(
        sch, lambda: sch.get_loops(block), "removed from the schedule by remove_rv"
    )
    assert error.rule == "stale-reference"
    check_refused(sch, lambda: sch.unroll(k), "removed from the schedule by remove_rv")
    check_refused(sch, lambda: sch.split(i, tiles), "removed from the schedule by remove_rv")
    check_refused(sch, lambda: sch.remove_rv(k), "removed from the schedule by remove_rv")
    # the IR, the other references and the trace are as before
    sch.split(j, [2, 2])
    assert sch.trace.as_python()[-1].startswith("l6, l7 = sch.split(loop=l2")
    check_schedule(sch, matmul)


def test_remove_rv_refuses_what_is_no_reference() -> None:
    sch = Schedule(matmul)
    error = check_refused(sch, lambda: sch.remove_rv("C"), "expected a BlockRV, LoopRV or ExprRV")
    assert error.rule == "argument"


def test_get_sref_gives_the_node_and_its_parents() -> None:
    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, _, k = sch.get_loops(block)
    sref = sch.get_sref(block)
    assert isinstance(sref, StmtSRef)
    assert sref.stmt is sch.get(block) and sref.func_name == "main"
    assert sref.parent is not None and sref.parent.stmt is sch.get(k)
    names = []
    node: StmtSRef | None = sref.parent
    while node is not None:
        names.append(getattr(node.stmt, "name", None) or node.stmt.loop_var.name)
        node = node.parent
    assert names == ["k", "j", "i", "root"]
    assert repr(sch.get_sref(i)) == "StmtSRef(loop 'i' of 'main')"
    # a node itself is found too, as TVM's get_sref(Block | For) does
    assert sch.get_sref(sch.get(k)).stmt is sch.get(k)


def test_get_sref_refuses_a_node_no_longer_in_the_module() -> None:
    sch = Schedule(matmul)
    i, _, _ = sch.get_loops("C")
    old = sch.get(i)
    sch.split(i, [2, 4])
    error = check_refused(sch, lambda: sch.get_sref(old), "loop 'i' is not in the module")
    assert error.rule == "stale-reference"
    error = check_refused(sch, lambda: sch.get_sref(i), "loop 'i' no longer exists")
    assert error.rule == "stale-reference"
    error = check_refused(sch, lambda: sch.get_sref(3), "expected a BlockRV, LoopRV, Block or For")
    assert error.rule == "argument"
