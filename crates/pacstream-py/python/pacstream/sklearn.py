"""scikit-learn estimators backed by pacstream's Rust learners.

They follow scikit-learn's conventions (constructor arguments stored unchanged, fitted
attributes with a trailing underscore, ``random_state``, input validation) and pass
``sklearn.utils.estimator_checks.check_estimator``.

>>> import numpy as np
>>> from pacstream.sklearn import KMeans
>>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
>>> km = KMeans(n_clusters=2, random_state=1).fit(X)
>>> float(km.inertia_)
1.0
>>> bool(km.predict(X)[0] != km.predict(X)[2])
True
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import (
    _check_sample_weight,
    _num_samples,
    check_is_fitted,
    validate_data,
)

from . import _pacstream

__all__ = ["KMeans", "Paco", "PrincipalCurve", "SequentialKMeans"]


def _seed(random_state) -> int:
    """A 64-bit seed from scikit-learn's ``random_state`` (None: 0, so that a fit is
    reproducible by default, as every pacstream learner is)."""
    if random_state is None:
        return 0
    if isinstance(random_state, (int, np.integer)):
        return int(random_state) & 0xFFFF_FFFF_FFFF_FFFF
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


class KMeans(ClusterMixin, TransformerMixin, BaseEstimator):
    """Batch k-means: greedy k-means++ seeding (or "k-means++", "random", or given
    centres), then Lloyd's iterations, the best of ``n_init`` restarts; computed by
    ``pacstream.KMeans``.

    Parameters
    ----------
    n_clusters : int, default=8
        The number of clusters k.
    init : {"greedy++", "k-means++", "random"} or array of shape (k, d), default="greedy++"
        The seeding.
    n_init : int, default=1
        Restarts; the fit with the least inertia is kept.
    max_iter : int, default=300
        The largest number of Lloyd iterations per restart.
    tol : float, default=1e-4
        Lloyd stops when the centres' total squared shift is at most ``tol`` × the mean
        per-feature variance of X (``stopping="centre-shift"``, scikit-learn's rule and the
        library's default) or when at most ``tol`` × n points changed cluster
        (``"changed-labels"``).
    stopping : {"centre-shift", "changed-labels"}, default="centre-shift"
    algorithm : {"auto", "lloyd", "hamerly"}, default="auto"
        How the assignment step is computed (the same fit either way).
    refinement : {"hartigan", "none"}, default="hartigan"
        What runs after Lloyd: Hartigan's single-point moves (a point moves whenever that
        lowers the inertia, counting how the move shifts both centres; never a higher
        inertia than Lloyd's) or nothing. Before the moves, Lloyd runs on past the
        stopping rule until a pass changes at most 10⁻⁵ of the points (by weight).
    random_state : int, RandomState or None, default=None
        The seed (None: 0).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (k, d)
    labels_ : ndarray of shape (n,)
    inertia_ : float
        Σ w(x) min_j ‖x − c_j‖² on the training data.
    n_iter_ : int
    n_features_in_ : int
    """

    def __init__(
        self,
        n_clusters=8,
        *,
        init="greedy++",
        n_init=1,
        max_iter=300,
        tol=1e-4,
        stopping="centre-shift",
        algorithm="auto",
        refinement="hartigan",
        random_state=None,
    ):
        self.stopping = stopping
        self.algorithm = algorithm
        self.refinement = refinement
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y=None, sample_weight=None):
        """Fits the centres to ``X`` (read in place when C-ordered float64)."""
        X = validate_data(self, X, dtype=np.float64, order="C", accept_sparse=False)
        if sample_weight is not None:
            sample_weight = np.ascontiguousarray(
                _check_sample_weight(sample_weight, X, dtype=np.float64)
            )
        init = self.init
        if not isinstance(init, str):
            init = np.ascontiguousarray(init, dtype=np.float64)
        core = _pacstream.KMeans(
            int(self.n_clusters),
            init=init,
            n_init=int(self.n_init),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            stopping=self.stopping,
            algorithm=self.algorithm,
            refinement=self.refinement,
            seed=_seed(self.random_state),
        )
        core.fit(X, sample_weight)
        self._core = core
        self._stream = None
        self.cluster_centers_ = core.centres
        self.labels_ = core.labels
        self.inertia_ = core.inertia
        self.n_iter_ = core.report["n_iter"]
        return self

    def partial_fit(self, X, y=None):
        """Learns the rows of ``X`` as a stream (sequential k-means, ``pacstream.
        SequentialKMeans``): the first batch is the warm-up, fitted by the seeding and
        Lloyd (from the centres of an earlier ``fit``, if any); every later row moves its
        nearest centre by 1/n_j. Batches in order give the run of one stream."""
        first = getattr(self, "_stream", None) is None
        X = validate_data(self, X, dtype=np.float64, order="C", reset=first)
        if first:
            init = self.init
            if hasattr(self, "cluster_centers_"):
                init = self.cluster_centers_
            if not isinstance(init, str):
                init = np.ascontiguousarray(init, dtype=np.float64)
            self._stream = _pacstream.SequentialKMeans(
                int(self.n_clusters),
                init=init,
                init_size=X.shape[0],
                seed=_seed(self.random_state),
            )
        self._stream.learn_many(X)
        self._core = self._stream
        self.cluster_centers_ = self._stream.centres
        self.n_steps_ = self._stream.n_rounds
        return self

    def _validated(self, X):
        check_is_fitted(self)
        return validate_data(self, X, dtype=np.float64, order="C", reset=False)

    def predict(self, X):
        """The nearest centre of every row of ``X``."""
        X = self._validated(X)
        return self._core.predict(X)

    def transform(self, X):
        """The Euclidean distance of every row of ``X`` to every centre, as scikit-learn's
        ``KMeans.transform`` gives it (the square root of the library's squared
        distances)."""
        X = self._validated(X)
        return np.sqrt(self._core.transform(X))

    def score(self, X, y=None):
        """Minus the inertia of the centres on ``X`` (scikit-learn's convention: higher is
        better)."""
        X = self._validated(X)
        return -self._core.inertia_on(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


def _rows(estimator, X, reset):
    """``X`` validated as scikit-learn does, as the C-ordered float64 rows the core reads
    in place."""
    return validate_data(estimator, X, dtype=np.float64, order="C", reset=reset)


class _Stream(ClusterMixin, BaseEstimator):
    """Shared plumbing of the stream clusterers: ``fit`` learns ``X`` as a new stream,
    ``partial_fit`` continues it; the fitted attributes are read from the core."""

    def _make_core(self, n_samples: int):  # pragma: no cover - overridden
        raise NotImplementedError

    def fit(self, X, y=None):
        """Learns the rows of ``X`` in order as a new stream (as ``learn_many``), then
        labels them with the final centres."""
        self._core = None
        X = _rows(self, X, reset=True)
        self._learn(X)
        self.labels_ = self.predict(X)
        return self

    def partial_fit(self, X, y=None):
        """Learns the rows of ``X`` in order, continuing the stream of the earlier calls
        (the first call starts it). Batches in order give the run of one stream."""
        first = getattr(self, "_core", None) is None
        X = _rows(self, X, reset=first)
        self._learn(X)
        return self

    def _learn(self, X):
        if getattr(self, "_core", None) is None:
            self._core = self._make_core(X.shape[0])
        self._core.learn_many(X)
        self._read_model()
        self.n_steps_ = self._core.n_rounds
        self.cumulative_loss_ = self._core.cumulative_loss

    def _read_model(self):
        centres = self._core.centres
        if centres is not None:
            self.cluster_centers_ = centres

    def predict(self, X):
        """The nearest centre of every row of ``X``."""
        check_is_fitted(self, "cluster_centers_")
        X = _rows(self, X, reset=False)
        return self._core.predict(X)

    def transform(self, X):
        """The Euclidean distance of every row of ``X`` to every centre (as scikit-learn's
        ``KMeans.transform``)."""
        check_is_fitted(self, "cluster_centers_")
        X = _rows(self, X, reset=False)
        return np.sqrt(self._core.transform(X))

    def score(self, X, y=None):
        """Minus the inertia of the current centres on ``X`` (higher is better)."""
        check_is_fitted(self, "cluster_centers_")
        X = _rows(self, X, reset=False)
        return -self._core.inertia_on(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


class SequentialKMeans(TransformerMixin, _Stream):
    """Sequential (online) k-means, computed by ``pacstream.SequentialKMeans``: a warm-up
    buffer fitted by k-means++ and Lloyd, then each row moves its nearest centre by 1/n_j
    (optionally forgetting, and reassigning starved centres).

    Parameters
    ----------
    n_clusters : int, default=8
    init : {"greedy++", "k-means++", "random"} or array of shape (k, d), default="greedy++"
        The seeding of the warm-up buffer.
    init_size : int or None, default=None
        The warm-up rows; None: the library's default (10·k), or all the rows of the first
        batch when it has fewer, so that a batch always ends the warm-up.
    decay_half_life : float or None, default=None
        After this many rows a row's weight in its centre has halved (None: no decay).
    reassignment_ratio : float or None, default=None
        Move a centre whose count falls below this ratio of the largest to a recent row.
    random_state : int, RandomState or None, default=None
        The seed (None: 0).

    Attributes
    ----------
    cluster_centers_, labels_ (``fit`` only: the final centre of every training row),
    n_steps_, cumulative_loss_ (the loss paid before each update), n_features_in_.
    """

    def __init__(
        self,
        n_clusters=8,
        *,
        init="greedy++",
        init_size=None,
        decay_half_life=None,
        reassignment_ratio=None,
        random_state=None,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.init_size = init_size
        self.decay_half_life = decay_half_life
        self.reassignment_ratio = reassignment_ratio
        self.random_state = random_state

    def _make_core(self, n_samples):
        init = self.init
        if not isinstance(init, str):
            init = np.ascontiguousarray(init, dtype=np.float64)
        init_size = self.init_size
        if init_size is None:
            init_size = min(10 * int(self.n_clusters), n_samples)
        return _pacstream.SequentialKMeans(
            int(self.n_clusters),
            init=init,
            init_size=int(init_size),
            decay_half_life=self.decay_half_life,
            reassignment_ratio=self.reassignment_ratio,
            seed=_seed(self.random_state),
        )


class Paco(TransformerMixin, _Stream):
    """PACBO (Li, Guedj & Loustau 2018), computed by ``pacstream.Paco``: online clustering
    whose number of clusters is unknown and may change; each round's clustering is drawn
    from a Gibbs quasi-posterior by reversible-jump MCMC. Every setting left as None takes
    the library's calibrated default.

    Parameters
    ----------
    max_k, radius, center, scale, warmup, eta, coeff, proposal, proposal_scale,
    iterations, window, restart, summation
        As ``pacstream.Paco``; ``warmup`` None takes the library's default, or all the
        rows of the first batch when it has fewer.
    random_state : int, RandomState or None, default=None
        The seed of the chain (None: 0).

    Attributes
    ----------
    cluster_centers_, n_clusters_ (k̂ of the current clustering), labels_ (``fit``
    only), n_steps_, cumulative_loss_, n_features_in_.
    """

    def __init__(
        self,
        *,
        max_k=None,
        radius=None,
        center=None,
        scale=None,
        warmup=None,
        eta=None,
        coeff=None,
        proposal=None,
        proposal_scale=None,
        iterations=None,
        window=None,
        restart=None,
        summation=None,
        random_state=None,
    ):
        self.summation = summation
        self.max_k = max_k
        self.radius = radius
        self.center = center
        self.scale = scale
        self.warmup = warmup
        self.eta = eta
        self.coeff = coeff
        self.proposal = proposal
        self.proposal_scale = proposal_scale
        self.iterations = iterations
        self.window = window
        self.restart = restart
        self.random_state = random_state

    def _make_core(self, n_samples):
        settings = {
            name: getattr(self, name)
            for name in (
                "max_k", "radius", "center", "scale", "eta", "coeff", "proposal",
                "proposal_scale", "iterations", "window", "restart", "summation",
            )
        }
        warmup = self.warmup
        if warmup is None:
            default = _pacstream.Paco(**settings).settings["warmup"]
            warmup = max(1, min(default, n_samples))
        return _pacstream.Paco(warmup=warmup, seed=_seed(self.random_state), **settings)

    def _read_model(self):
        super()._read_model()
        self.n_clusters_ = self._core.n_clusters


class PrincipalCurve(TransformerMixin, BaseEstimator):
    """Sequential principal curve (slpc, Li & Guedj 2021), computed by
    ``pacstream.PrincipalCurve``: a polygonal line through the stream.

    ``transform`` gives the **projection index**: the arc length, from the curve's first
    vertex, of the nearest point of the curve to each row (princurve's ``lambda``), as an
    array of shape (n, 1). ``project`` gives the projected points themselves (n, d).

    Parameters
    ----------
    radius, delta, max_segments, max_length, penalty, eta_scale, feedback, estimator,
    explore, alpha, local_vertices, max_candidates, warmup, window, bin_side, max_atoms
        As ``pacstream.PrincipalCurve``; ``warmup`` None takes the library's default, or
        all the rows of the first batch when it has fewer.
    random_state : int, RandomState or None, default=None
        The seed (None: 0).

    Attributes
    ----------
    vertices_ (the curve's vertices, one row each), n_steps_, cumulative_loss_,
    n_features_in_.
    """

    def __init__(
        self,
        *,
        radius=None,
        delta=None,
        max_segments=None,
        max_length=None,
        penalty=None,
        eta_scale=None,
        feedback=None,
        estimator=None,
        explore=None,
        alpha=None,
        local_vertices=None,
        max_candidates=None,
        warmup=None,
        window=None,
        bin_side=None,
        max_atoms=None,
        random_state=None,
    ):
        self.eta_scale = eta_scale
        self.estimator = estimator
        self.alpha = alpha
        self.local_vertices = local_vertices
        self.max_candidates = max_candidates
        self.bin_side = bin_side
        self.max_atoms = max_atoms
        self.radius = radius
        self.delta = delta
        self.max_segments = max_segments
        self.max_length = max_length
        self.penalty = penalty
        self.feedback = feedback
        self.explore = explore
        self.warmup = warmup
        self.window = window
        self.random_state = random_state

    def _make_core(self, n_samples):
        settings = {
            name: getattr(self, name)
            for name in (
                "radius", "delta", "max_segments", "max_length", "penalty", "eta_scale",
                "feedback", "estimator", "explore", "alpha", "local_vertices",
                "max_candidates", "window", "bin_side", "max_atoms",
            )
        }
        warmup = self.warmup
        if warmup is None:
            default = _pacstream.PrincipalCurve(**settings).settings["warmup"]
            warmup = max(2, min(default, n_samples))
        return _pacstream.PrincipalCurve(warmup=warmup, seed=_seed(self.random_state), **settings)

    def fit(self, X, y=None):
        """Learns the rows of ``X`` in order as a new stream (at least 2 rows: a curve
        needs two points)."""
        self._core = None
        n_samples = _num_samples(X)
        if n_samples < 2:
            raise ValueError(
                f"a principal curve needs at least 2 rows, got n_samples = {n_samples}"
            )
        return self.partial_fit(X)

    def partial_fit(self, X, y=None):
        """Learns the rows of ``X`` in order, continuing the stream of earlier calls."""
        first = getattr(self, "_core", None) is None
        X = _rows(self, X, reset=first)
        if first:
            self._core = self._make_core(X.shape[0])
        self._core.learn_many(X)
        vertices = self._core.vertices
        if vertices is not None:
            self.vertices_ = vertices
        self.n_steps_ = self._core.n_rounds
        self.cumulative_loss_ = self._core.cumulative_loss
        return self

    def _projection(self, X):
        check_is_fitted(self, "vertices_")
        X = _rows(self, X, reset=False)
        return self._core.project(X)

    def transform(self, X):
        """The projection index of every row of ``X`` (arc length along the curve), shape
        (n, 1)."""
        return self._projection(X)["arc_length"][:, None]

    def project(self, X):
        """The nearest point of the curve to every row of ``X``, shape (n, d)."""
        return self._projection(X)["points"]

    def score(self, X, y=None):
        """Minus the mean squared distance of the rows of ``X`` to the curve (higher is
        better)."""
        return -float(np.mean(self._projection(X)["squared_distance"]))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags
