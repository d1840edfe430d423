"""Per-store features of hand-written schedules (entries checked by value), the feature
width on sampled candidates, and the cost models: RandomModel's determinism, XGBModel
learning a synthetic ranking, fallback, failed samples, and save/load round trips."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tilewright import meta_schedule as ms
from tilewright.meta_schedule.cost_model import (
    RandomModel,
    XGBConfig,
    XGBModel,
    pool_features,
    xgb_model,
)
from tilewright.meta_schedule.feature_extractor import (
    FeatureExtractor,
    PerStoreFeature,
    feature_names,
    per_store_features,
)
from tilewright.meta_schedule.runner.runner import RunnerResult
from tilewright.meta_schedule.search_strategy.search_strategy import MeasureCandidate
from tilewright.meta_schedule.testing.workloads import WORKLOADS
from tilewright.script import tir as T

NAMES = feature_names()
WIDTH = 32 + 18 * 5 + 10 + 6 + 5


def log(x: float) -> float:
    return math.log2(1 + x)


def column(matrix: np.ndarray, name: str) -> np.ndarray:
    return matrix[:, NAMES.index(name)]


@T.prim_func
def matmul64(
    A: T.Buffer((64, 64), "float32"),
    B: T.Buffer((64, 64), "float32"),
    C: T.Buffer((64, 64), "float32"),
):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i, j, k in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def matmul64_gpu(
    A: T.Buffer((64, 64), "float32"),
    B: T.Buffer((64, 64), "float32"),
    C: T.Buffer((64, 64), "float32"),
):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    A_shared = T.alloc_buffer((64, 64), scope="shared")
    for bx in T.thread_binding(8, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            # each block stages its 8 rows of A: 32 threads x 16 rounds
            for ax_0 in range(16):
                for ax_1 in T.thread_binding(32, thread="threadIdx.x"):
                    with T.block("A_shared"):
                        v0 = T.axis.spatial(64, bx * 8 + (ax_0 * 32 + ax_1) // 64)
                        v1 = T.axis.spatial(64, (ax_0 * 32 + ax_1) % 64)
                        A_shared[v0, v1] = A[v0, v1]
            for i_1, j_1, k in T.grid(4, 4, 64):
                with T.block("C"):
                    vi = T.axis.spatial(64, bx * 8 + tx // 16 * 4 + i_1)
                    vj = T.axis.spatial(64, tx % 16 * 4 + j_1)
                    vk = T.axis.reduce(64, k)
                    C[vi, vj] = C[vi, vj] + A_shared[vi, vk] * B[vk, vj]


def buffer_slot(matrix: np.ndarray, row: int, stride_log: float) -> int:
    """The slot of the read-only buffer of ``row`` whose stride feature is ``stride_log``."""
    for slot in range(5):
        if matrix[row, NAMES.index(f"B{slot}.acc_read")] != 1:
            continue
        if matrix[row, NAMES.index(f"B{slot}.stride")] == pytest.approx(stride_log):
            return slot
    raise AssertionError(f"no buffer with stride feature {stride_log}")


def test_matmul_flops_loops_and_accesses() -> None:
    f = per_store_features(matmul64)
    assert f.shape == (1, WIDTH) and f.dtype == np.float32
    n3 = 64**3
    assert column(f, "float_addsub")[0] == pytest.approx(log(n3))
    assert column(f, "float_mul")[0] == pytest.approx(log(n3))
    assert column(f, "float_divmod")[0] == 0
    assert column(f, "total_flops")[0] == pytest.approx(log(2 * n3))
    assert column(f, "outer_prod")[0] == pytest.approx(log(n3))
    assert column(f, "num_loops")[0] == pytest.approx(log(3))
    assert column(f, "is_gpu")[0] == 0 and column(f, "vec_num")[0] == 0
    # C is read and written: 2 accesses of 4 bytes per iteration; it does not move with k,
    # the innermost loop, so each element is reused 64 times one iteration apart.
    assert column(f, "B0.acc_rw")[0] == 1
    assert column(f, "B0.bytes")[0] == pytest.approx(log(n3 * 2 * 4))
    assert column(f, "B0.unique_bytes")[0] == pytest.approx(log(64 * 64 * 4))
    assert column(f, "B0.unique_lines")[0] == pytest.approx(log(64 * 4))
    assert column(f, "B0.reuse_loop")[0] == 1
    assert column(f, "B0.reuse_ct")[0] == pytest.approx(log(64))
    assert column(f, "B0.reuse_dis_iter")[0] == pytest.approx(log(1))
    # A[i, k] steps by 1 element along k, B[k, j] by a row of 64.
    a_slot = buffer_slot(f, 0, log(1))
    b_slot = buffer_slot(f, 0, log(64))
    assert {a_slot, b_slot} == {1, 2}
    assert column(f, "B0.stride")[0] == pytest.approx(log(1))  # C[i, j] along j
    # B: one 64-byte line per access (stride 256 bytes); A: 16 accesses share a line.
    assert column(f, f"B{b_slot}.lines")[0] == pytest.approx(log(n3))
    assert column(f, f"B{a_slot}.lines")[0] == pytest.approx(log(n3 / 16))
    # A's reuse loop is j (the loop it does not move with), 64 iterations of k apart.
    assert column(f, f"B{a_slot}.reuse_dis_iter")[0] == pytest.approx(log(64))
    assert np.isfinite(f).all()


@T.prim_func
def matmul64_parallel(
    A: T.Buffer((64, 64), "float32"),
    B: T.Buffer((64, 64), "float32"),
    C: T.Buffer((64, 64), "float32"),
):
    # written out: parallel and vectorize refuse matmul64's init-less update (as TVM does)
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i in T.parallel(64, annotations={"pragma_auto_unroll_max_step": 64}):
        for k, j_0 in T.grid(64, 8):
            for j_1 in T.vectorized(8):
                with T.block("C"):
                    vi = T.axis.spatial(64, i)
                    vj = T.axis.spatial(64, j_0 * 8 + j_1)
                    vk = T.axis.reduce(64, k)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_vectorize_parallel_and_unroll_features() -> None:
    f = per_store_features(matmul64_parallel)
    assert column(f, "vec_num")[0] == pytest.approx(log(1))
    assert column(f, "vec_len")[0] == pytest.approx(log(8))
    assert column(f, "vec_innermost")[0] == 1
    assert column(f, "parallel_len")[0] == pytest.approx(log(64))
    assert column(f, "auto_unroll_max_step")[0] == pytest.approx(log(64))
    assert column(f, "num_loops")[0] == pytest.approx(log(4))
    assert column(f, "total_flops")[0] == pytest.approx(log(2 * 64**3))


def test_gpu_schedule_thread_extents_and_shared_memory() -> None:
    f = per_store_features(matmul64_gpu)
    assert f.shape == (2, WIDTH)
    assert (column(f, "is_gpu") == 1).all()
    assert column(f, "blockIdx.x_len") == pytest.approx([log(8), log(8)])
    # the fetch rebinds threadIdx.x: 32 threads either way, not 32 x 32
    assert column(f, "threadIdx.x_len") == pytest.approx([log(32), log(32)])
    assert column(f, "outer_prod") == pytest.approx([log(8 * 16 * 32), log(8 * 32 * 4 * 4 * 64)])
    # the block's 8 rows of A, 8 x 64 floats, refilled once per block
    assert column(f, "shared_bytes")[0] == pytest.approx(log(8 * 64 * 4))
    assert column(f, "is_alloc") == pytest.approx([1, 0])
    assert column(f, "alloc_bytes")[0] == pytest.approx(log(8 * 64 * 4))
    assert column(f, "alloc_outer_prod")[0] == pytest.approx(log(8))


@pytest.mark.parametrize("name", ["matmul", "softmax", "conv2d_nhwc"])
def test_sampled_candidates_have_the_fixed_width(name: str) -> None:
    workload = WORKLOADS[name]
    ctx = ms.TuneContext(workload.func(**workload.sizes), target="llvm", rand_state=1)
    schedules, _ = ms.sample_candidates(ctx, 3)
    candidates = [MeasureCandidate(s, ()) for s in schedules]
    matrices = PerStoreFeature().extract_from(ctx, candidates)
    for matrix in matrices:
        assert matrix.shape[1] == WIDTH == PerStoreFeature().width
        assert matrix.shape[0] >= 1
        assert np.isfinite(matrix).all() and (matrix >= 0).all()
    if name == "matmul":
        # tiling keeps the float work (compute_at of softmax's reductions may repeat it)
        flops = [float(m[0, NAMES.index("total_flops")]) for m in matrices]
        assert flops == pytest.approx([log(2 * 1024**3)] * len(matrices))


def test_process_pool_extraction_matches_serial() -> None:
    workload = WORKLOADS["matmul"]
    ctx = ms.TuneContext(workload.func(m=64, n=64, k=64), target="llvm", rand_state=2)
    schedules, _ = ms.sample_candidates(ctx, 4)
    candidates = [MeasureCandidate(s, ()) for s in schedules]
    serial = PerStoreFeature().extract_from(ctx, candidates)
    pooled = PerStoreFeature(n_jobs=2, parallel_threshold=1).extract_from(ctx, candidates)
    for a, b in zip(serial, pooled, strict=True):
        np.testing.assert_array_equal(a, b)


def test_random_model_is_deterministic_and_saves_its_state(tmp_path) -> None:
    cands = [object()] * 5
    a, b = RandomModel(seed=7), RandomModel(seed=7)
    first = a.predict(None, cands)  # type: ignore[arg-type]
    np.testing.assert_array_equal(first, b.predict(None, cands))  # type: ignore[arg-type]
    assert ((first >= 0) & (first < 100)).all()
    assert not np.array_equal(first, RandomModel(seed=8).predict(None, cands))  # type: ignore[arg-type]
    a.save(str(tmp_path / "random.json"))
    restored = RandomModel(path=str(tmp_path / "random.json"))
    np.testing.assert_array_equal(a.predict(None, cands), restored.predict(None, cands))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a RandomModel file"):
        (tmp_path / "other.json").write_text('{"model": "XGBModel"}')
        RandomModel(path=str(tmp_path / "other.json"))


class _Given(FeatureExtractor):
    """Returns the matrix each synthetic candidate carries."""

    def extract_from(self, context, candidates):  # type: ignore[no-untyped-def]
        return [c.matrix for c in candidates]


class _Candidate:
    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix


def _synthetic(count: int, seed: int) -> tuple[list[_Candidate], np.ndarray]:
    """Candidates of 1-3 stores and 12 features; the time falls with features 0 and 3 of
    the busiest store and rises with feature 5 summed over stores."""
    rng = np.random.default_rng(seed)
    cands, costs = [], []
    for _ in range(count):
        matrix = rng.uniform(0, 4, size=(int(rng.integers(1, 4)), 12)).astype(np.float32)
        cost = np.exp(-0.6 * matrix[:, 0].max() - 0.3 * matrix[:, 3].max()) * (
            1 + matrix[:, 5].sum()
        )
        cands.append(_Candidate(matrix))
        costs.append(cost)
    return cands, np.array(costs)


def _pairwise(costs: np.ndarray, scores: np.ndarray) -> float:
    right = total = 0
    for i in range(len(costs)):
        for j in range(i + 1, len(costs)):
            total += 1
            right += (costs[i] < costs[j]) == (scores[i] > scores[j])
    return right / total


def _results(costs: np.ndarray) -> list[RunnerResult]:
    return [RunnerResult(run_secs=(float(c),)) for c in costs]


@pytest.mark.parametrize("objective", ["reg", "rank"])
def test_xgb_model_learns_a_synthetic_ranking(objective: str, tmp_path) -> None:
    pytest.importorskip("lightgbm")
    train, train_costs = _synthetic(200, seed=0)
    test, test_costs = _synthetic(60, seed=1)
    model = XGBModel(extractor=_Given(), objective=objective, config=XGBConfig(nthread=1))
    model.update(None, train, _results(train_costs))  # type: ignore[arg-type]
    scores = model.predict(None, test)  # type: ignore[arg-type]
    random_scores = RandomModel(seed=0).predict(None, test)  # type: ignore[arg-type]
    assert _pairwise(test_costs, scores) > 0.7
    assert _pairwise(test_costs, scores) > _pairwise(test_costs, random_scores) + 0.15
    # the fastest held-out candidate is among the model's top 10 of 60
    assert int(np.argmin(test_costs)) in set(np.argsort(-scores)[:10])

    path = str(tmp_path / "model.npz")
    model.save(path)
    restored = XGBModel(extractor=_Given(), path=path)
    assert restored.objective == objective and len(restored.costs) == 200
    np.testing.assert_array_equal(restored.predict(None, test), scores)  # type: ignore[arg-type]


def test_xgb_model_predicts_randomly_before_the_warm_up() -> None:
    pytest.importorskip("lightgbm")
    cands, costs = _synthetic(12, seed=3)
    model = XGBModel(extractor=_Given(), num_warmup_samples=8)
    model.update(None, cands[:5], _results(costs[:5]))  # type: ignore[arg-type]
    assert model.booster is None
    fallback = RandomModel(seed=model.config.seed)
    expected = fallback.predict(None, cands[5:])  # type: ignore[arg-type]
    np.testing.assert_array_equal(model.predict(None, cands[5:]), expected)  # type: ignore[arg-type]
    model.update(None, cands[5:], _results(costs[5:]))  # type: ignore[arg-type]
    assert model.booster is not None


def test_xgb_model_targets_relative_throughput_and_zero_for_failures() -> None:
    pytest.importorskip("lightgbm")
    cands, _ = _synthetic(4, seed=4)
    model = XGBModel(extractor=_Given())
    results = [
        RunnerResult(run_secs=(2.0, 2.0)),
        RunnerResult(error_msg="wrong result"),
        RunnerResult(run_secs=(1.0,)),
        RunnerResult(run_secs=(4.0,)),
    ]
    model.update(None, cands, results)  # type: ignore[arg-type]
    np.testing.assert_allclose(model.targets(), [0.5, 0.0, 1.0, 0.25])


def test_xgb_model_round_trip_on_real_candidates(tmp_path) -> None:
    pytest.importorskip("lightgbm")
    workload = WORKLOADS["matmul"]
    ctx = ms.TuneContext(workload.func(m=64, n=64, k=64), target="llvm", rand_state=5)
    schedules, _ = ms.sample_candidates(ctx, 12)
    cands = [MeasureCandidate(s, ()) for s in schedules]
    # a made-up cost: candidates with more parallel work are faster
    f = [per_store_features(s.mod) for s in schedules]
    costs = np.array([1.0 / (1.0 + m[:, NAMES.index("parallel_prod")].max()) for m in f])
    model = XGBModel(num_warmup_samples=4)
    model.update(ctx, cands[:10], _results(costs[:10]))
    scores = model.predict(ctx, cands)
    assert scores.shape == (12,) and np.isfinite(scores).all()
    model.save(str(tmp_path / "m.npz"))
    restored = XGBModel(path=str(tmp_path / "m.npz"))
    np.testing.assert_array_equal(restored.predict(ctx, cands), scores)
    assert restored.groups == model.groups and len(set(model.groups)) == 1


def test_pool_features_shape_and_empty_matrix() -> None:
    matrix = np.array([[1.0, 0.0], [1.0, 3.0]], dtype=np.float32)
    pooled = pool_features(matrix)
    # log2(1 + (2^1 - 1) + (2^1 - 1)) = log2(3); max; log2(1 + 2 stores)
    np.testing.assert_allclose(pooled, [math.log2(3), 3.0, 1.0, 3.0, math.log2(3)], rtol=1e-6)
    np.testing.assert_array_equal(pool_features(np.zeros((0, 2), np.float32)), np.zeros(5))


def test_xgb_model_errors(monkeypatch) -> None:
    with pytest.raises(ValueError, match="objective 'pairwise'"):
        XGBModel(objective="pairwise")
    with pytest.raises(ValueError, match="backend 'sklearn'"):
        XGBModel(backend="sklearn")
    monkeypatch.setattr(xgb_model.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match="pip install lightgbm"):
        XGBModel()
    with pytest.raises(ImportError, match="pip install xgboost"):
        XGBModel(backend="xgboost")


def test_xgb_model_with_xgboost_backend() -> None:
    pytest.importorskip("xgboost")
    train, train_costs = _synthetic(120, seed=6)
    test, test_costs = _synthetic(40, seed=7)
    model = XGBModel(extractor=_Given(), backend="xgboost")
    model.update(None, train, _results(train_costs))  # type: ignore[arg-type]
    assert _pairwise(test_costs, model.predict(None, test)) > 0.7  # type: ignore[arg-type]
