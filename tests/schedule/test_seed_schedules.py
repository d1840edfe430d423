"""The seed notebook's schedules, run with the notebook's own code (``import tilewright as
tvm``), compared with the IR it printed (its Expected_0 to Expected_6): vector add, window sum
with a shared cache and cooperative fetch, matmul ``blocking`` and ``blocking_with_shared``
(the notebook's functions, kept in tilewright/demo.py; the programs in tests/seed_notebook.py)."""

from __future__ import annotations

from schedule_checks import check_schedule
from seed_notebook import (
    Expected_0,
    Expected_1,
    Expected_2,
    Expected_3,
    Expected_4,
    Expected_5,
    Expected_6,
    MyModuleMatmul,
    MyModuleVecAdd,
    MyModuleWindowSum,
)

import tilewright as tvm
from tilewright.demo import blocking, blocking_with_shared, matmul_module
from tilewright.tir import Schedule


def test_vector_add_split_then_bind_prints_the_notebook_ir() -> None:
    sch = Schedule(MyModuleVecAdd)
    block_C = sch.get_block("C")
    (i,) = sch.get_loops(block=block_C)
    i0, i1 = sch.split(i, [None, 128])
    check_schedule(sch, MyModuleVecAdd, Expected_0)
    assert "vi = T.axis.spatial(1024, i_0 * 128 + i_1)" in sch.mod.script()
    assert "for i_0, i_1 in T.grid(8, 128):" in sch.mod.script()

    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    check_schedule(sch, MyModuleVecAdd, Expected_1)


def test_window_sum_split_bind_prints_the_notebook_ir() -> None:
    sch = Schedule(MyModuleWindowSum)
    nthread = 128
    block_C = sch.get_block("C")
    (i,) = sch.get_loops(block=block_C)
    i0, i1 = sch.split(i, [None, nthread])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    check_schedule(sch, MyModuleWindowSum, Expected_2)


def test_window_sum_cache_read_compute_at_and_cooperative_fetch_print_the_notebook_ir() -> None:
    sch = tvm.tir.Schedule(MyModuleWindowSum)
    nthread = 128
    block_C = sch.get_block("C")
    (i,) = sch.get_loops(block=block_C)
    i0, i1 = sch.split(i, [None, nthread])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    check_schedule(sch, MyModuleWindowSum, Expected_2)

    A_shared = sch.cache_read(block_C, read_buffer_index=0, storage_scope="shared")
    sch.compute_at(A_shared, i1)
    check_schedule(sch, MyModuleWindowSum, Expected_3)
    text = sch.mod.script()
    assert "v0 = T.axis.spatial(1027, i_0 * 128 + ax0)" in text
    assert "for ax0 in range(130):" in text

    ax = sch.get_loops(A_shared)[-1]
    _ax0, ax1 = sch.split(ax, [None, nthread])
    sch.bind(ax1, "threadIdx.x")
    check_schedule(sch, MyModuleWindowSum, Expected_4)
    assert "T.where(ax0_0 * 128 + ax0_1 < 130)" in sch.mod.script()


def test_matmul_blocking_prints_the_notebook_ir() -> None:
    sch = tvm.tir.Schedule(MyModuleMatmul)
    sch = blocking(sch, 8, 8, 8, 8, 4)
    check_schedule(sch, MyModuleMatmul, Expected_5, numeric=False)
    names = [b.name for b in _blocks(sch.mod)]
    assert names == ["root", "C_init", "C_update", "C_local"]


def test_matmul_blocking_with_shared_prints_the_notebook_ir() -> None:
    sch = tvm.tir.Schedule(MyModuleMatmul)
    sch = blocking_with_shared(sch, 8, 8, 8, 8, 8)
    check_schedule(sch, MyModuleMatmul, Expected_6, numeric=False)
    text = sch.mod.script()
    assert (
        "v0 = T.axis.spatial(1024, i_0 * 64 + (ax0_ax1_fused_0 * 256 + ax0_ax1_fused_1 * 4"
        " + ax0_ax1_fused_2) // 8)"
    ) in text


def test_blocking_computes_the_same_product_on_a_small_matmul() -> None:
    mod = matmul_module(32)
    sch = blocking(tvm.tir.Schedule(mod), 2, 2, 4, 4, 4)
    check_schedule(sch, mod)


def test_blocking_with_shared_computes_the_same_product_on_a_small_matmul() -> None:
    mod = matmul_module(32)
    sch = blocking_with_shared(tvm.tir.Schedule(mod), 2, 2, 4, 4, 4)
    check_schedule(sch, mod)


def _blocks(mod: tvm.IRModule) -> list:
    found: list = []
    tvm.ir.pre_order_visit(
        mod["main"].body, lambda n: found.append(n) if isinstance(n, tvm.ir.Block) else None
    )
    return found
