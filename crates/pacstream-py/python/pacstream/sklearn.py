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
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import _pacstream

__all__ = ["KMeans"]


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
        Lloyd stops when at most ``tol`` × n points changed cluster.
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
        random_state=None,
    ):
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
