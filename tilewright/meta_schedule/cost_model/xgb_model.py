"""``XGBModel``: gradient-boosted trees on pooled per-store features (TVM's ``XGBModel``).

Each measured candidate becomes one training row: its per-store feature matrix pooled to a
fixed length, labelled with its throughput relative to the best candidate of the same task
(``min_cost / cost``; a failed candidate gets 0). Every ``update`` retrains on all the data
so far. The trees come from LightGBM, or from XGBoost when it is asked for.

Example::

    >>> model = XGBModel(extractor=PerStoreFeature(), num_warmup_samples=8)
    >>> model.update(ctx, candidates, results)
    >>> scores = model.predict(ctx, new_candidates)   # higher: predicted faster
    >>> model.save("cost_model.npz")
"""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import math
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from tilewright.meta_schedule.cost_model.cost_model import CostModel
from tilewright.meta_schedule.cost_model.random_model import RandomModel
from tilewright.meta_schedule.feature_extractor.feature_extractor import FeatureExtractor
from tilewright.meta_schedule.feature_extractor.per_store_feature import PerStoreFeature

if TYPE_CHECKING:
    from tilewright.meta_schedule.runner.runner import RunnerResult
    from tilewright.meta_schedule.search_strategy.search_strategy import MeasureCandidate
    from tilewright.meta_schedule.tune_context import TuneContext

BACKENDS = ("lightgbm", "xgboost")
OBJECTIVES = ("reg", "rank")
# lambdarank grades relevance in integers; LightGBM's default gains cover 0..30.
_RANK_LEVELS = 30


@dataclasses.dataclass(frozen=True)
class XGBConfig:
    """Tree-booster settings (TVM's ``XGBConfig`` names, mapped onto LightGBM's).

    Attributes:
        max_depth: depth of a tree (LightGBM: at most ``2**max_depth`` leaves).
        eta: learning rate.
        min_child_weight: the smallest hessian sum in a leaf.
        min_data_in_leaf: the fewest samples in a leaf (LightGBM).
        num_boost_round: trees per training; with ``max_bin`` it bounds the time of a
            training (about a second for 1000 samples on two cores).
        max_bin: histogram bins per feature.
        seed: seed of the booster's sampling.
        nthread: threads (None: the booster's default, all cores; the default 1 stays
            quick while builders and runners keep the other cores busy).
    """

    max_depth: int = 3
    eta: float = 0.2
    min_child_weight: float = 1e-3
    min_data_in_leaf: int = 5
    num_boost_round: int = 100
    max_bin: int = 63
    seed: int = 43
    nthread: int | None = 1


def pool_features(matrix: np.ndarray) -> np.ndarray:
    """A ``(stores, width)`` feature matrix as one vector of ``2 * width + 1``: per column
    the log2 of the summed magnitudes (features are ``log2(1 + x)``), the maximum over
    stores, and finally log2(1 + number of stores)."""
    width = matrix.shape[1]
    if matrix.shape[0] == 0:
        return np.zeros(2 * width + 1, dtype=np.float32)
    values = matrix.astype(np.float64)
    summed = np.log2(1.0 + np.sum(np.exp2(values) - 1.0, axis=0))
    pooled = np.concatenate([summed, values.max(axis=0), [math.log2(1 + matrix.shape[0])]])
    return pooled.astype(np.float32)


def _require(backend: str) -> str:
    if backend == "auto":
        for name in BACKENDS:
            if importlib.util.find_spec(name) is not None:
                return name
        raise ImportError(
            "XGBModel needs a gradient-boosting library: pip install lightgbm "
            "(or pip install xgboost and XGBModel(backend='xgboost'))"
        )
    if backend not in BACKENDS:
        raise ValueError(f"XGBModel backend {backend!r}: expected 'auto', 'lightgbm' or 'xgboost'")
    if importlib.util.find_spec(backend) is None:
        raise ImportError(
            f"XGBModel(backend={backend!r}) needs it installed: pip install {backend}"
        )
    return backend


class XGBModel(CostModel):
    """A boosted-tree cost model that ranks candidates by predicted relative throughput.

    Args:
        extractor: candidates to per-store feature matrices (``PerStoreFeature()``).
        config: booster settings.
        num_warmup_samples: valid measurements needed before the trees are trusted;
            until then ``predict`` returns random scores.
        backend: ``"auto"`` (LightGBM, else XGBoost), ``"lightgbm"`` or ``"xgboost"``.
        objective: ``"reg"`` (squared error on relative throughput) or ``"rank"``
            (LightGBM's lambdarank / XGBoost's pairwise ranking, one query per task).
        path: a file written by ``save`` to start from.

    Example::

        >>> model = XGBModel(num_warmup_samples=8)
        >>> model.update(ctx, measured, results)
        >>> order = np.argsort(-model.predict(ctx, candidates))
    """

    def __init__(
        self,
        *,
        extractor: FeatureExtractor | None = None,
        config: XGBConfig | None = None,
        num_warmup_samples: int = 8,
        backend: str = "auto",
        objective: str = "reg",
        path: str | None = None,
    ) -> None:
        if objective not in OBJECTIVES:
            raise ValueError(f"XGBModel objective {objective!r}: expected 'reg' or 'rank'")
        self.extractor = extractor if extractor is not None else PerStoreFeature()
        self.config = config or XGBConfig()
        self.num_warmup_samples = num_warmup_samples
        self.backend = _require(backend)
        self.objective = objective
        self.fallback = RandomModel(seed=self.config.seed)
        self.features: list[np.ndarray] = []  # pooled, one per measured candidate
        self.costs: list[float] = []  # mean seconds; inf when the candidate failed
        self.groups: list[str] = []  # the task of each sample
        self.booster: Any = None
        self._pooled: weakref.WeakKeyDictionary[Any, np.ndarray] = weakref.WeakKeyDictionary()
        self._task_keys: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        if path is not None:
            self.load(path)

    # -- data ----------------------------------------------------------------------------

    def _task_key(self, context: TuneContext | None) -> str:
        if context is None or context.mod is None:
            return "default"
        key = self._task_keys.get(context)
        if key is None:
            from tilewright.ir import structural_hash

            key = self._task_keys[context] = f"{structural_hash(context.mod):016x}"
        return key

    def _pool(self, context: TuneContext | None, candidates: list[MeasureCandidate]) -> np.ndarray:
        missing = [c for c in candidates if c not in self._pooled]
        if missing:
            for candidate, matrix in zip(missing, self.extractor.extract_from(context, missing)):  # type: ignore[arg-type]
                self._pooled[candidate] = pool_features(matrix)
        return np.stack([self._pooled[c] for c in candidates]) if candidates else np.zeros((0, 0))

    def targets(self) -> np.ndarray:
        """Each sample's throughput relative to the best of its task (0 when it failed)."""
        costs = np.array(self.costs, dtype=np.float64)
        groups = np.array(self.groups)
        result = np.zeros(len(costs))
        for key in set(self.groups):
            mask = groups == key
            best = costs[mask].min()
            if math.isfinite(best):
                result[mask] = np.where(np.isfinite(costs[mask]), best / costs[mask], 0.0)
        return result

    @property
    def num_valid(self) -> int:
        return sum(math.isfinite(c) for c in self.costs)

    # -- protocol ------------------------------------------------------------------------

    def update(
        self,
        context: TuneContext | None,
        candidates: list[MeasureCandidate],
        results: list[RunnerResult],
    ) -> None:
        """Add the measurements and retrain on everything measured so far."""
        if len(candidates) != len(results):
            raise ValueError(f"{len(candidates)} candidates but {len(results)} runner results")
        if not candidates:
            return
        key = self._task_key(context)
        pooled = self._pool(context, candidates)
        for row, result in zip(pooled, results):
            secs = result.run_secs
            ok = result.error_msg is None and secs is not None and len(secs) > 0
            self.features.append(row)
            self.costs.append(float(np.mean(secs)) if ok and secs else math.inf)
            self.groups.append(key)
        self._train()

    def predict(
        self, context: TuneContext | None, candidates: list[MeasureCandidate]
    ) -> np.ndarray:
        """Predicted relative throughput per candidate (random before the warm-up)."""
        if not candidates:
            return np.zeros(0)
        if self.booster is None:
            return self.fallback.scores(len(candidates))
        return self.predict_pooled(self._pool(context, candidates))

    def predict_pooled(self, pooled: np.ndarray) -> np.ndarray:
        """Scores of rows already pooled by ``pool_features``."""
        if self.booster is None:
            return self.fallback.scores(len(pooled))
        if self.backend == "lightgbm":
            return np.asarray(self.booster.predict(pooled, num_threads=self._threads()))
        import xgboost

        return np.asarray(self.booster.predict(xgboost.DMatrix(pooled)))

    # -- training ------------------------------------------------------------------------

    def _threads(self) -> int:
        return self.config.nthread or 0

    def _train(self) -> None:
        if self.num_valid < max(self.num_warmup_samples, 2):
            self.booster = None
            return
        order = sorted(range(len(self.groups)), key=lambda n: self.groups[n])
        x = np.stack([self.features[n] for n in order])
        y = self.targets()[order]
        sizes = [self.groups.count(key) for key in sorted(set(self.groups))]
        if self.backend == "lightgbm":
            self.booster = self._train_lightgbm(x, y, sizes)
        else:
            self.booster = self._train_xgboost(x, y, sizes)

    def _train_lightgbm(self, x: np.ndarray, y: np.ndarray, sizes: list[int]) -> Any:
        import lightgbm

        cfg = self.config
        params: dict[str, Any] = {
            "learning_rate": cfg.eta,
            "num_leaves": 2**cfg.max_depth,
            "max_bin": cfg.max_bin,
            "max_depth": cfg.max_depth,
            "min_data_in_leaf": cfg.min_data_in_leaf,
            "min_sum_hessian_in_leaf": cfg.min_child_weight,
            "feature_fraction": 0.8,
            "seed": cfg.seed,
            "deterministic": True,
            "num_threads": self._threads(),
            "verbose": -1,
        }
        dataset = {"feature_pre_filter": False, "max_bin": cfg.max_bin}
        if self.objective == "rank":
            params["objective"] = "lambdarank"
            labels = np.rint(y * _RANK_LEVELS)
            data = lightgbm.Dataset(x, labels, group=sizes, params=dataset)
        else:
            params["objective"] = "regression"
            data = lightgbm.Dataset(x, y, params=dataset)
        return lightgbm.train(params, data, num_boost_round=cfg.num_boost_round)

    def _train_xgboost(self, x: np.ndarray, y: np.ndarray, sizes: list[int]) -> Any:
        import xgboost

        cfg = self.config
        params: dict[str, Any] = {
            "eta": cfg.eta,
            "max_depth": cfg.max_depth,
            "min_child_weight": cfg.min_child_weight,
            "max_bin": cfg.max_bin,
            "tree_method": "hist",
            "seed": cfg.seed,
            "objective": "rank:pairwise" if self.objective == "rank" else "reg:squarederror",
        }
        if cfg.nthread:
            params["nthread"] = cfg.nthread
        data = xgboost.DMatrix(x, label=y)
        if self.objective == "rank":
            data.set_group(sizes)
        return xgboost.train(params, data, num_boost_round=cfg.num_boost_round)

    # -- files ---------------------------------------------------------------------------

    def _model_bytes(self) -> bytes:
        if self.booster is None:
            return b""
        if self.backend == "lightgbm":
            return str(self.booster.model_to_string()).encode()
        return bytes(self.booster.save_raw())

    def save(self, path: str) -> None:
        """Write the samples and the trained trees to ``path`` (an ``.npz`` archive)."""
        meta = {
            "model": "XGBModel",
            "backend": self.backend,
            "objective": self.objective,
            "num_warmup_samples": self.num_warmup_samples,
            "config": dataclasses.asdict(self.config),
            "groups": self.groups,
        }
        features = np.stack(self.features) if self.features else np.zeros((0, 0), np.float32)
        buffer = io.BytesIO()
        np.savez(
            buffer,
            meta=np.array(json.dumps(meta)),
            features=features,
            costs=np.array(self.costs, dtype=np.float64),
            model=np.frombuffer(self._model_bytes(), dtype=np.uint8),
        )
        with open(path, "wb") as f:
            f.write(buffer.getvalue())

    def load(self, path: str) -> None:
        """Restore what ``save`` wrote (samples, settings and trees)."""
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(str(archive["meta"]))
            if meta.get("model") != "XGBModel":
                raise ValueError(f"{path}: not an XGBModel file (model={meta.get('model')!r})")
            features, costs, model = archive["features"], archive["costs"], archive["model"]
        self.backend = _require(meta["backend"])
        self.objective = meta["objective"]
        self.num_warmup_samples = meta["num_warmup_samples"]
        self.config = XGBConfig(**meta["config"])
        self.features = list(features)
        self.costs = [float(c) for c in costs]
        self.groups = list(meta["groups"])
        self.booster = self._booster_from_bytes(model.tobytes()) if model.size else None

    def _booster_from_bytes(self, data: bytes) -> Any:
        if self.backend == "lightgbm":
            import lightgbm

            return lightgbm.Booster(model_str=data.decode())
        import xgboost

        booster = xgboost.Booster()
        booster.load_model(bytearray(data))
        return booster
