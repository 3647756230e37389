"""pacstream: learning from data streams with regret guarantees.

Array-first learners backed by the Rust library ``pacstream``:

- expert aggregation: :class:`WeightedMajority`, :class:`RandomizedWeightedMajority`,
  :class:`Hedge`, :class:`EWA`, :class:`FPL` (sleeping experts through an ``awake`` mask);
- k-means: :class:`KMeans` (batch: k-means++ then Lloyd), :class:`SequentialKMeans`;
- :class:`Paco`: PACBO, online clustering with an unknown, changing number of clusters
  (Li, Guedj & Loustau 2018);
- :class:`PrincipalCurve`: sequential principal curves (Li & Guedj 2021), with projection;
- :class:`Aggregator`: any aggregation rule of the library by its name, and
  :class:`Mixture`, an opera-like facade over it (history of the weights, losses, regret
  and bound, and their figures).

Every learner follows the online protocol: ``learn_one`` pays the loss of the current
model on the revealed input, then updates, and returns the round's record; ``learn_many``
does the same over a C-ordered float64 array (read in place, the GIL released) and returns
arrays. Settings are checked by the library (a bad one raises ``ValueError`` naming it);
learners pickle and round-trip through ``to_json``/``from_json`` bit for bit.

Wrappers with the conventions of River and scikit-learn live in :mod:`pacstream.river`
and :mod:`pacstream.sklearn`.
"""

from ._pacstream import (
    EWA,
    Aggregator,
    FPL,
    Hedge,
    KMeans,
    Paco,
    PrincipalCurve,
    RandomizedWeightedMajority,
    Record,
    SequentialKMeans,
    WeightedMajority,
    __version__,
)
from .mixture import Mixture

__all__ = [
    "EWA",
    "Aggregator",
    "FPL",
    "Hedge",
    "KMeans",
    "Mixture",
    "Paco",
    "PrincipalCurve",
    "RandomizedWeightedMajority",
    "Record",
    "SequentialKMeans",
    "WeightedMajority",
    "__version__",
]
