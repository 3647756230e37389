"""Type stubs of the extension module (the classes are documented in their docstrings)."""

from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt

__version__: str

_F64 = npt.NDArray[np.float64]
_I64 = npt.NDArray[np.int64]
_Point = Sequence[float] | _F64
_Flags = Sequence[bool] | npt.NDArray[np.bool_]

class Record(Mapping[str, Any]):
    """The record of one round: a read-only mapping from the library's field names to
    their values, built on first read; fields also read as attributes."""
    def __getitem__(self, key: str) -> Any: ...
    def __getattr__(self, name: str) -> Any: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def to_dict(self) -> dict[str, Any]: ...

class _PointLearner:
    def learn_one(self, x: _Point) -> Record: ...
    def learn_many(self, X: _F64) -> dict[str, npt.NDArray[Any]]: ...
    def loss(self, x: _Point) -> float | None: ...
    @property
    def cumulative_loss(self) -> float: ...
    @property
    def n_rounds(self) -> int: ...
    @property
    def dim(self) -> int | None: ...
    @property
    def settings(self) -> dict[str, Any]: ...
    @property
    def report(self) -> dict[str, Any]: ...
    def to_json(self) -> str: ...

class SequentialKMeans(_PointLearner):
    def __init__(
        self,
        n_clusters: int,
        *,
        init: str | _F64 | None = None,
        init_size: int | None = None,
        decay_half_life: float | None = None,
        reassignment_ratio: float | None = None,
        seed: int = 0,
    ) -> None: ...
    @property
    def centres(self) -> _F64 | None: ...
    @property
    def counts(self) -> _F64: ...
    @property
    def warming_up(self) -> bool: ...
    @property
    def bound(self) -> None: ...
    def predict(self, X: _F64) -> _I64: ...
    def transform(self, X: _F64) -> _F64: ...
    def inertia_on(self, X: _F64) -> float: ...
    @staticmethod
    def from_json(text: str) -> SequentialKMeans: ...

class Paco(_PointLearner):
    def __init__(
        self,
        *,
        max_k: int | None = None,
        radius: float | str | None = None,
        center: bool | None = None,
        scale: bool | None = None,
        warmup: int | None = None,
        eta: float | None = None,
        coeff: float | None = None,
        proposal: str | None = None,
        proposal_scale: float | None = None,
        iterations: int | None = None,
        window: int | None = None,
        restart: bool | None = None,
        summation: str | None = None,
        seed: int = 0,
    ) -> None: ...
    @property
    def centres(self) -> _F64 | None: ...
    @property
    def n_clusters(self) -> int | None: ...
    @property
    def warming_up(self) -> bool: ...
    def predict(self, X: _F64) -> _I64: ...
    def transform(self, X: _F64) -> _F64: ...
    def inertia_on(self, X: _F64) -> float: ...
    def hindsight(self, restarts: int = 5, seed: int = 0) -> dict[str, Any]: ...
    @staticmethod
    def from_json(text: str) -> Paco: ...

class PrincipalCurve(_PointLearner):
    def __init__(
        self,
        *,
        radius: float | str | None = None,
        delta: float | None = None,
        max_segments: int | None = None,
        max_length: float | None = None,
        penalty: float | None = None,
        eta_scale: float | None = None,
        feedback: str | None = None,
        estimator: str | None = None,
        explore: float | None = None,
        alpha: float | None = None,
        local_vertices: int | None = None,
        max_candidates: int | None = None,
        warmup: int | None = None,
        window: int | None = None,
        bin_side: float | None = None,
        max_atoms: int | None = None,
        seed: int = 0,
    ) -> None: ...
    @property
    def vertices(self) -> _F64 | None: ...
    def project(self, X: _F64) -> dict[str, _F64]: ...
    @staticmethod
    def from_json(text: str) -> PrincipalCurve: ...

class KMeans:
    def __init__(
        self,
        n_clusters: int,
        *,
        init: str | _F64 | None = None,
        n_init: int | None = None,
        max_iter: int | None = None,
        tol: float | None = None,
        stopping: str | None = None,
        algorithm: str | None = None,
        refinement: str | None = None,
        seed: int = 0,
    ) -> None: ...
    def fit(self, X: _F64, sample_weight: _F64 | None = None) -> KMeans: ...
    @property
    def centres(self) -> _F64: ...
    @property
    def labels(self) -> _I64: ...
    @property
    def inertia(self) -> float: ...
    @property
    def report(self) -> dict[str, Any]: ...
    @property
    def settings(self) -> dict[str, Any]: ...
    def predict(self, X: _F64) -> _I64: ...
    def transform(self, X: _F64) -> _F64: ...
    def inertia_on(self, X: _F64) -> float: ...
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> KMeans: ...

class _Aggregator:
    def learn_one(self, advice: _Point, outcome: float, awake: _Flags | None = None) -> Record: ...
    def learn_losses(self, losses: _Point, awake: _Flags | None = None) -> Record: ...
    def learn_many(
        self,
        advice: _F64,
        outcomes: _F64,
        awake: npt.NDArray[np.bool_] | None = None,
        *,
        history: bool = False,
    ) -> dict[str, npt.NDArray[Any]]: ...
    def learn_many_losses(
        self,
        losses: _F64,
        awake: npt.NDArray[np.bool_] | None = None,
        *,
        history: bool = False,
    ) -> dict[str, npt.NDArray[Any]]: ...
    @property
    def weights(self) -> _F64: ...
    @property
    def expert_losses(self) -> _F64: ...
    @property
    def cumulative_loss(self) -> float: ...
    @property
    def regret(self) -> float: ...
    @property
    def best_expert(self) -> int: ...
    @property
    def bound(self) -> float | None: ...
    @property
    def guarantee(self) -> dict[str, Any]: ...
    @property
    def n_rounds(self) -> int: ...
    @property
    def n_experts(self) -> int: ...
    @property
    def settings(self) -> dict[str, Any]: ...
    def summary(self, names: Sequence[str] | None = None) -> dict[str, Any]: ...
    def to_json(self) -> str: ...

_Rate = float | str | None

class WeightedMajority(_Aggregator):
    def __init__(self, n_experts: int, *, beta: float = 0.5) -> None: ...
    @staticmethod
    def from_json(text: str) -> WeightedMajority: ...

class RandomizedWeightedMajority(_Aggregator):
    def __init__(
        self,
        n_experts: int,
        *,
        beta: float | None = None,
        learning_rate: _Rate = None,
        horizon: int | None = None,
        seed: int = 0,
    ) -> None: ...
    @staticmethod
    def from_json(text: str) -> RandomizedWeightedMajority: ...

class Hedge(_Aggregator):
    def __init__(
        self,
        n_experts: int,
        *,
        learning_rate: _Rate = None,
        horizon: int | None = None,
        loss: str | None = None,
        loss_bound: float | None = None,
        prior: Sequence[float] | None = None,
        sample: bool = False,
        seed: int = 0,
    ) -> None: ...
    @staticmethod
    def from_json(text: str) -> Hedge: ...

class EWA(_Aggregator):
    def __init__(
        self,
        n_experts: int,
        *,
        loss: str | None = None,
        learning_rate: _Rate = None,
        horizon: int | None = None,
        loss_bound: float | None = None,
        prior: Sequence[float] | None = None,
        gradient: bool = False,
    ) -> None: ...
    def predict(self, advice: _Point, awake: _Flags | None = None) -> float: ...
    @staticmethod
    def from_json(text: str) -> EWA: ...

class FPL(_Aggregator):
    def __init__(
        self,
        n_experts: int,
        loss_bound: float,
        *,
        learning_rate: _Rate = None,
        horizon: int | None = None,
        loss: str | None = None,
        seed: int = 0,
    ) -> None: ...
    @staticmethod
    def from_json(text: str) -> FPL: ...

class Aggregator(_Aggregator):
    """Any aggregation rule of the library by its name, its settings as keywords."""
    def __init__(self, rule: str, n_experts: int, **settings: Any) -> None: ...
    @staticmethod
    def rules() -> list[str]: ...
    @property
    def rule(self) -> str: ...
    def predict(self, advice: _Point | _F64, awake: _Flags | npt.NDArray[np.bool_] | None = None) -> float | None | _F64: ...
    @staticmethod
    def from_json(text: str) -> Aggregator: ...

class FeatureReader:
    """The forecasts of experts given by feature name, read from each round's features:
    `read(x)` returns the values in the order of the names and which are present (None
    when all are); a missing name, None or NaN is an expert asleep this round (value 0.0).
    A dict with the keys of the previous one, in the same order, is read in one pass."""
    def __init__(self, names: list[Any]) -> None: ...
    def read(self, x: Mapping[Any, Any]) -> tuple[_F64, npt.NDArray[np.bool_] | None]: ...
