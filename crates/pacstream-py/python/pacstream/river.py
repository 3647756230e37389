"""River-compatible estimators backed by pacstream's Rust learners.

They follow River's conventions (``learn_one(x: dict)`` returns None, ``predict_one(x)``,
constructor arguments stored as attributes so that ``clone`` works, ``learn_many`` on a
pandas DataFrame) and pass ``river.utils.estimator_checks.check_estimator``.

Features of a dict stream: the learners of points work in a fixed dimension, so the
features are fixed by the first dict learned (in sorted order, so that the order of the
keys never matters). A feature missing from a later dict counts as 0.0; a feature that
was not in the first dict is ignored.

>>> from pacstream.river import SequentialKMeans
>>> model = SequentialKMeans(n_clusters=2, init_size=4, seed=1)
>>> for x in [{"a": 0.0}, {"a": 0.1}, {"a": 9.0}, {"a": 9.1}, {"a": 0.05}]:
...     model.learn_one(x)
>>> model.predict_one({"a": 0.0}) != model.predict_one({"a": 9.0})
True
"""

from __future__ import annotations

import numpy as np
from river import base

from . import _pacstream

__all__ = ["EWARegressor", "Paco", "SequentialKMeans"]


class _PointClusterer(base.Clusterer):
    """Shared plumbing: the feature order, dict → vector, and the core learner."""

    _core_class: type = None  # set by subclasses

    def _make_core(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def _init_state(self):
        self._features: list | None = None
        self._core = self._make_core()

    def _vector(self, x: dict) -> list[float]:
        return [float(x.get(f, 0.0)) for f in self._features]

    def learn_one(self, x: dict) -> None:
        if self._features is None:
            if not x:
                return
            self._features = sorted(x)
        self._core.learn_one(self._vector(x))

    def learn_many(self, X) -> None:
        """Learns every row of the DataFrame ``X`` in order (as repeated ``learn_one``)."""
        if len(X) == 0:
            return
        if self._features is None:
            self._features = sorted(X.columns)
        block = X.reindex(columns=self._features, fill_value=0.0)
        self._core.learn_many(np.ascontiguousarray(block.to_numpy(dtype=np.float64)))

    def predict_one(self, x: dict) -> int:
        if self._features is None:
            return 0
        labels = self._core.predict(np.asarray([self._vector(x)], dtype=np.float64))
        return max(int(labels[0]), 0)

    def predict_many(self, X):
        """The cluster of every row of the DataFrame ``X``."""
        import pandas as pd

        if self._features is None:
            return pd.Series(np.zeros(len(X), dtype=np.int64), index=X.index)
        block = X.reindex(columns=self._features, fill_value=0.0)
        labels = self._core.predict(np.ascontiguousarray(block.to_numpy(dtype=np.float64)))
        return pd.Series(np.maximum(labels, 0), index=X.index)

    @property
    def cumulative_loss(self) -> float:
        """The learner's cumulative loss (squared distance to the nearest centre, paid
        before each update)."""
        return self._core.cumulative_loss

    @property
    def centers(self) -> dict:
        """The centres, as River's clusterers give them: {cluster: {feature: value}}."""
        centres = self._core.centres
        if centres is None:
            return {}
        return {
            i: dict(zip(self._features, map(float, row))) for i, row in enumerate(centres)
        }


class SequentialKMeans(_PointClusterer):
    """Sequential k-means on a dict stream, backed by ``pacstream.SequentialKMeans``.

    The first ``init_size`` points (default 10·k) are buffered and fitted by greedy
    k-means++ and Lloyd; then each point moves its nearest centre by 1/n_j, optionally
    forgetting with a half-life (in points).

    Parameters
    ----------
    n_clusters
        The number of clusters k.
    init_size
        The warm-up points (None: 10·k).
    decay_half_life
        After this many points a point's weight in its centre has halved (None: no decay).
    reassignment_ratio
        Move a centre whose count falls below this ratio of the largest to a recent point
        (None: never).
    init
        The seeding of the warm-up buffer: "greedy++" (default), "k-means++" or "random".
    seed
        The seed of the seeding and reassignment draws (None: 0).
    """

    def __init__(
        self,
        n_clusters: int = 5,
        init_size: int | None = None,
        decay_half_life: float | None = None,
        reassignment_ratio: float | None = None,
        init: str | None = None,
        seed: int | None = None,
    ):
        self.n_clusters = n_clusters
        self.init_size = init_size
        self.decay_half_life = decay_half_life
        self.reassignment_ratio = reassignment_ratio
        self.init = init
        self.seed = seed
        self._init_state()

    def _make_core(self):
        return _pacstream.SequentialKMeans(
            self.n_clusters,
            init=self.init,
            init_size=self.init_size,
            decay_half_life=self.decay_half_life,
            reassignment_ratio=self.reassignment_ratio,
            seed=0 if self.seed is None else self.seed,
        )

    @classmethod
    def _unit_test_params(cls):
        yield {"n_clusters": 3, "init_size": 10, "seed": 1}


class Paco(_PointClusterer):
    """PACBO on a dict stream (Li, Guedj & Loustau 2018), backed by ``pacstream.Paco``:
    online clustering with an unknown, changing number of clusters; each round's
    clustering is drawn from a Gibbs quasi-posterior by reversible-jump MCMC.

    Parameters
    ----------
    max_k
        p, the largest number of clusters (None: the library's default).
    warmup
        The warm-up points that fix the centre and the radius (None: the default).
    iterations
        MCMC iterations per round (None: the default).
    window
        Keep only the last W points (None: every point, the setting of the bound).
    radius, center, scale, eta, coeff, proposal, proposal_scale, restart, summation
        As ``pacstream.Paco`` (None: the library's default).
    seed
        The seed of the chain (None: 0).
    """

    _SETTINGS = (
        "max_k", "warmup", "iterations", "window", "radius", "center", "scale", "eta",
        "coeff", "proposal", "proposal_scale", "restart", "summation",
    )

    def __init__(
        self,
        max_k: int | None = None,
        warmup: int | None = None,
        iterations: int | None = None,
        window: int | None = None,
        radius: float | str | None = None,
        center: bool | None = None,
        scale: bool | None = None,
        eta: float | None = None,
        coeff: float | None = None,
        proposal: str | None = None,
        proposal_scale: float | None = None,
        restart: bool | None = None,
        summation: str | None = None,
        seed: int | None = None,
    ):
        self.max_k = max_k
        self.warmup = warmup
        self.iterations = iterations
        self.window = window
        self.radius = radius
        self.center = center
        self.scale = scale
        self.eta = eta
        self.coeff = coeff
        self.proposal = proposal
        self.proposal_scale = proposal_scale
        self.restart = restart
        self.summation = summation
        self.seed = seed
        self._init_state()

    def _make_core(self):
        settings = {name: getattr(self, name) for name in self._SETTINGS}
        return _pacstream.Paco(seed=0 if self.seed is None else self.seed, **settings)

    @property
    def n_clusters(self) -> int | None:
        """k̂, the number of clusters of the current clustering."""
        return self._core.n_clusters

    @classmethod
    def _unit_test_params(cls):
        yield {"max_k": 5, "warmup": 10, "iterations": 20, "seed": 1}


class EWARegressor(base.Ensemble, base.Regressor):
    """Exponentially weighted average of experts, the weights kept by ``pacstream.EWA``
    (the Rust engine): the forecast is Σ p_i ŷ_i; each round every expert forecasts, the
    aggregate pays loss(ŷ, y), the weights update, then every model learns.

    An expert is either a River regressor, asked for its forecast (``predict_one``) and
    taught (``learn_one``) each round, or a **feature name**, whose forecast is that feature
    of the round (``x[name]``): opera's setting, where the forecasts of the experts come with
    the data (the pollsters of River's ``TrumpApproval``, the models of a forecasting team).
    A named expert costs a dictionary lookup done in Rust (less when the stream's dicts keep
    their keys from one round to the next), so a round over named experts
    costs what the aggregation costs; a round over River models costs at least the models'
    own Python calls.

    Unlike River's ``EWARegressor``, the learning rate defaults to AdaHedge (no tuning
    needed), and the regret against the best expert, its bound and the weights are kept.

    Parameters
    ----------
    models
        The experts, in order: River regressors, feature names, or both. A named expert
        whose feature is missing (or None, or NaN) in a round sleeps that round (sleeping
        experts: the weights are renormalised over the awake ones, and its regret counts
        only the rounds it was awake); ``predict_one`` is 0.0 when no expert advises.
    loss
        "square" (default), "absolute" or "pinball:τ".
    learning_rate
        None (AdaHedge), a float η, "anytime", "doubling", or "horizon" with ``horizon``.
    horizon
        T, for ``learning_rate="horizon"``.
    loss_bound
        B, the range of the losses ([0, B]) the bound assumes; the schedules other than
        AdaHedge need it.
    prior
        Prior weights of the experts, in their order (None: uniform).
    gradient
        Charge the linearised losses (the gradient trick).

    >>> from pacstream.river import EWARegressor
    >>> model = EWARegressor(["a", "b"], learning_rate=1.0, loss_bound=4.0)
    >>> for _ in range(20):
    ...     model.learn_one({"a": 1.0, "b": 3.0}, 1.0)
    >>> bool(model.weights[0] > 0.99), round(model.predict_one({"a": 1.0, "b": 3.0}), 2)
    (True, 1.0)
    """

    def __init__(
        self,
        models: list,
        loss: str = "square",
        learning_rate: float | str | None = None,
        horizon: int | None = None,
        loss_bound: float | None = None,
        prior: list | None = None,
        gradient: bool = False,
    ):
        super().__init__(models)
        self.loss = loss
        self.learning_rate = learning_rate
        self.horizon = horizon
        self.loss_bound = loss_bound
        self.prior = prior
        self.gradient = gradient
        # The River models among the experts (their positions), and the feature names
        # with theirs; read through the list itself (`self.data`): iterating the
        # ensemble goes through UserList's Python-level indexing, three times the cost.
        self._models = [(i, m) for i, m in enumerate(self.data) if isinstance(m, base.Estimator)]
        self._names = [m for m in self.data if not isinstance(m, base.Estimator)]
        self._named_at = [i for i, m in enumerate(self.data) if not isinstance(m, base.Estimator)]
        self._reader = _pacstream.FeatureReader(self._names)
        self._core = _pacstream.EWA(
            len(models),
            loss=loss,
            learning_rate=learning_rate,
            horizon=horizon,
            loss_bound=loss_bound,
            prior=None if prior is None else [float(p) for p in prior],
            gradient=gradient,
        )

    @classmethod
    def _unit_test_params(cls):
        from river import linear_model as lm
        from river import preprocessing as pp

        yield {
            "models": [
                pp.StandardScaler() | lm.LinearRegression(intercept_lr=0.1),
                pp.StandardScaler() | lm.PARegressor(),
            ]
        }
        # River's regression checks run on TrumpApproval, whose features are the
        # approval ratings of five pollsters: forecasts of the target, aggregated by name.
        yield {"models": ["gallup", "ipsos", "morning_consult", "rasmussen", "you_gov"]}
        yield {"models": ["gallup", pp.StandardScaler() | lm.LinearRegression(intercept_lr=0.1)]}

    def _advice(self, x):
        """The round's forecasts, and which experts are awake (None: all). A named expert
        whose feature is missing, None or NaN in `x` sleeps this round: it neither
        advises nor is charged (opera reads a missing forecast the same way)."""
        if not self._models:
            return self._reader.read(x)
        if not self._names:
            return [float(model.predict_one(x)) for _, model in self._models], None
        named, present = self._reader.read(x)
        advice = [0.0] * len(self.data)
        for i, value in zip(self._named_at, named.tolist()):
            advice[i] = value
        for i, model in self._models:
            advice[i] = float(model.predict_one(x))
        if present is None:
            return advice, None
        awake = [True] * len(self.data)
        for i, is_present in zip(self._named_at, present.tolist()):
            awake[i] = is_present
        return advice, awake

    def learn_one(self, x, y) -> None:
        advice, awake = self._advice(x)
        # A round where no expert advises teaches the weights nothing.
        if awake is None or np.any(awake):
            self._core.learn_one(advice, float(y), awake)
        for _, model in self._models:
            model.learn_one(x, y)

    def predict_one(self, x) -> float:
        advice, awake = self._advice(x)
        if awake is not None and not np.any(awake):
            return 0.0  # no expert advises: River's regressors start at 0.0 too
        return self._core.predict(advice, awake)

    @property
    def weights(self) -> np.ndarray:
        """The weights of the models for the next round."""
        return self._core.weights

    @property
    def regret(self) -> float:
        """The regret against the best model in hindsight."""
        return self._core.regret

    @property
    def bound(self) -> float | None:
        """The theorem's bound on that regret for these settings (None when no theorem
        covers them)."""
        return self._core.bound
