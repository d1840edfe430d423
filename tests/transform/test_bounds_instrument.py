"""instrument_bounds: the checks it writes, the same results on in-range data, the record on bad
data (run by the test evaluator, which itself refuses any out-of-range access)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from evaluator import run, run_kernel, run_module

import tilewright as tw
from tilewright.backend import lowering_stages
from tilewright.demo import blocking_with_shared, cpu_schedule, matmul_module
from tilewright.ir import (
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IRModule,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Var,
    assert_structural_equal,
    const,
    decl_buffer,
    dtype,
    intrinsics,
    seq,
)
from tilewright.script import tir as T
from tilewright.transform import Stage, instrument_bounds, lower_module, sync_threads
from tilewright.transform.instrument_bounds import CHECKS_ATTR


@T.prim_func
def gather(
    A: T.Buffer((1024,), "float32"), idx: T.Buffer((256,), "int32"), B: T.Buffer((256,), "float32")
):
    for i in range(256):
        B[i] = T.if_then_else(i < 200, A[idx[i]], T.float32(0))


@T.prim_func
def gather_checked(
    A: T.Buffer((1024,), "float32"),
    idx: T.Buffer((256,), "int32"),
    B: T.Buffer((256,), "float32"),
    bounds_errors: T.Buffer((2,), "int64"),
):
    T.func_attr({"tw.bounds_checks": [["A", "", "idx[i]", "1024", [1024]]]})
    for i in range(256):
        if not i < 200 or (idx[i] >= 0 and idx[i] < 1024):
            B[i] = T.if_then_else(i < 200, A[idx[i]], T.float32(0))
        else:
            bounds_errors[0] = T.int64(1)
            bounds_errors[1] = T.Cast("int64", idx[i])


@T.prim_func
def scatter(
    A: T.Buffer((64,), "float32"), idx: T.Buffer((64,), "int32"), B: T.Buffer((64,), "float32")
):
    for i in range(64):
        B[idx[i]] = A[i] + T.float32(1)


def _lowered(func: PrimFunc) -> PrimFunc:
    return tw.lower(func, "c")["main"]


def test_a_guarded_gather_gets_one_check_under_its_guard():
    # idx[i] and B[i] are proven in range by the loop; A[idx[i]] is checked where it is loaded.
    assert_structural_equal(instrument_bounds(_lowered(gather)), gather_checked)


def test_the_pipeline_runs_it_only_when_asked():
    names = [s.name for s in lowering_stages("c")]
    assert "instrument_bounds" not in names
    checked = tw.transform.cpu_stages(tw.target.Target("c"), bounds_check=True)
    assert "instrument_bounds" in [s.name for s in checked]
    assert_structural_equal(tw.lower(gather, "c", bounds_check=True)["main"], gather_checked)


def test_accesses_proven_in_range_need_no_check():
    # The seed matmul: every index is affine in loops of constant extent.
    func = _lowered(cpu_schedule(matmul_module(64)).mod["main"])
    assert instrument_bounds(func) is func


def _errors(func: PrimFunc) -> np.ndarray:
    checks = func.attr(CHECKS_ATTR, ())
    assert isinstance(checks, tuple)
    return np.zeros(2 * len(checks), dtype="int64")


def test_in_range_data_gives_the_same_results_with_every_access_checked():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1024).astype("float32")
    idx = rng.integers(0, 1024, 256).astype("int32")
    original = _lowered(gather)
    checked = instrument_bounds(original, elide_proven=False)
    assert len(checked.attr(CHECKS_ATTR)) == 3  # idx[i], A[idx[i]] and the store B[i]
    want = run(original, a, idx, np.zeros(256, "float32"))
    got = run(checked, a, idx, np.zeros(256, "float32"), _errors(checked))
    np.testing.assert_array_equal(got[2], want[2])
    assert not got[3].any()


def test_the_scheduled_matmul_gives_the_same_results_with_every_access_checked():
    func = _lowered(cpu_schedule(matmul_module(64)).mod["main"])
    checked = instrument_bounds(func, elide_proven=False)
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((64, 64)).astype("float32") for _ in range(2))
    got = run(checked, a, b, np.zeros((64, 64), "float32"), _errors(checked))
    np.testing.assert_allclose(got[2], a @ b, rtol=1e-4, atol=1e-4)
    assert not got[3].any()


def test_a_bad_gather_index_is_recorded_and_its_load_skipped():
    checked = instrument_bounds(_lowered(gather))
    a = np.arange(1024, dtype="float32")
    idx = np.arange(256, dtype="int32")
    idx[5], idx[210] = 5000, -7  # idx[210] is out of range but under a false guard (i >= 200)
    # The evaluator refuses any out-of-range access: running at all shows none happened.
    got = run(checked, a, idx, np.full(256, -1, "float32"), _errors(checked))
    assert list(got[3]) == [1, 5000]
    assert got[2][5] == -1  # the statement holding the bad load was skipped
    np.testing.assert_array_equal(np.delete(got[2][:200], 5), np.delete(a[:200], 5))


def test_a_bad_scatter_index_skips_the_store():
    checked = instrument_bounds(_lowered(scatter))
    assert [c[0] for c in checked.attr(CHECKS_ATTR)] == ["B"]
    idx = np.arange(64, dtype="int32")[::-1].copy()
    idx[3] = 64
    got = run(checked, np.zeros(64, "float32"), idx, np.zeros(64, "float32"), _errors(checked))
    assert list(got[3]) == [1, 64]
    assert (got[2] == 1).sum() == 63


def _checked_gpu_module(sch: tw.tir.Schedule, elide_proven: bool) -> IRModule:
    stages = tuple(
        Stage(s.name, partial(instrument_bounds, elide_proven=elide_proven))
        if s.name == "instrument_bounds"
        else s
        for s in tw.transform.gpu_stages(tw.target.Target("opencl"), bounds_check=True)
    )
    return lower_module(sch.mod, stages)


def test_gpu_kernels_record_their_own_name_and_keep_their_barriers():
    sch = tw.tir.Schedule(matmul_module(32))
    blocking_with_shared(sch, 2, 2, 4, 4, 4)
    lowered = _checked_gpu_module(sch, elide_proven=False)
    host, kernel = lowered["main"], lowered["main_kernel"]
    checks = host.attr(CHECKS_ATTR)
    assert isinstance(checks, tuple) and {c[1] for c in checks} == {"main_kernel"}
    assert [p.name for p in kernel.params][-1] == "bounds_errors"
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((32, 32)).astype("float32") for _ in range(2))
    got = run_module(lowered, "main", a, b, np.zeros((32, 32), "float32"), _errors(host))
    np.testing.assert_allclose(got[2], a @ b, rtol=1e-4, atol=1e-4)
    assert not got[3].any()


@pytest.mark.parametrize("elide_proven", [True, False])
def test_the_gpu_gather_records_a_bad_index_in_its_kernel(elide_proven):
    sch = tw.tir.Schedule(_block_gather)
    bx, tx = sch.split(sch.get_loops(sch.get_block("B"))[0], [None, 64])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    lowered = _checked_gpu_module(sch, elide_proven)
    idx = np.arange(256, dtype="int32")
    idx[77] = 1024
    a = np.arange(1024, dtype="float32")
    errors = _errors(lowered["main"])
    got = run_module(lowered, "main", a, idx, np.zeros(256, "float32"), errors)
    checks = lowered["main"].attr(CHECKS_ATTR)
    assert isinstance(checks, tuple)
    hit = [i for i in range(len(checks)) if got[3][2 * i]]
    assert [checks[i][0] for i in hit] == ["A"] and got[3][2 * hit[0] + 1] == 1024


@T.prim_func
def _block_gather(
    A: T.Buffer((1024,), "float32"), idx: T.Buffer((256,), "int32"), B: T.Buffer((256,), "float32")
):
    for i in range(256):
        with T.block("B"):
            vi = T.axis.spatial(256, i)
            B[vi] = A[idx[vi]]


def _kernel(body_of, *buffers: Buffer) -> PrimFunc:
    # One warp (32 threads of threadIdx.x) around body_of(tx).
    tx = Var("tx", dtype("int32"))
    params = tuple(Var(b.name, dtype("handle")) for b in buffers)
    loop = For(
        tx, const(0), const(32), ForKind.THREAD_BINDING, body_of(tx), thread_tag="threadIdx.x"
    )
    return PrimFunc(params, loop, tuple(zip(params, buffers))).with_attr("global_symbol", "main")


def test_a_barrier_call_is_never_skipped_its_loads_read_element_0():
    # Every lane must reach a warp shuffle: a lane with a bad index still calls it.
    A, idx, B = (decl_buffer((32,), dt, name) for dt, name in
                 (("float32", "A"), ("int32", "idx"), ("float32", "B")))  # fmt: skip

    def body(tx: Var) -> BufferStore:
        load = BufferLoad(A, (BufferLoad(idx, (tx,)),))
        value = intrinsics.WARP_SHUFFLE_XOR.call(IntImm(-1, dtype("uint32")), load, const(1),
                                                 const(32))  # fmt: skip
        return BufferStore(B, value, (tx,))

    checked = instrument_bounds(_kernel(body, A, idx, B))
    loop = checked.body
    assert isinstance(loop, For) and isinstance(loop.body, SeqStmt)
    record, call = loop.body.seq
    assert isinstance(record, IfThenElse) and isinstance(call, LetStmt)  # not under the check
    a = np.arange(32, dtype="float32") + 1
    bad = np.arange(32, dtype="int32")
    bad[3] = 99
    got = run_kernel(checked, a, bad, np.zeros(32, "float32"), _errors(checked)).arrays
    assert list(got[3]) == [1, 99]
    want = a[np.arange(32) ^ 1]
    want[2] = a[0]  # lane 3 read element 0 instead of A[99]
    np.testing.assert_array_equal(got[2], want)


def test_an_if_around_a_barrier_is_kept_with_its_condition_clamped():
    A, idx, B = (decl_buffer((32,), dt, name) for dt, name in
                 (("float32", "A"), ("int32", "idx"), ("float32", "B")))  # fmt: skip

    def body(tx: Var) -> IfThenElse:
        flag = BufferLoad(A, (BufferLoad(idx, (const(0),)),))
        return IfThenElse(flag > const(0.0), seq(sync_threads(), BufferStore(B, A[tx], (tx,))))

    checked = instrument_bounds(_kernel(body, A, idx, B))
    loop = checked.body
    assert isinstance(loop, For) and isinstance(loop.body, SeqStmt)
    record, kept = loop.body.seq
    assert isinstance(record, IfThenElse) and isinstance(kept, IfThenElse)
    assert isinstance(kept.then_case, SeqStmt)
    assert intrinsics.SYNC_THREADS.matches(kept.then_case.seq[0])
