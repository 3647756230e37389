"""Run by ci.sh in a fresh virtual environment where only the built wheel (and NumPy) is
installed: the package imports from its wheel, not from the source tree, its extension is
the abi3 one, and every family learns."""

import pathlib
import sys

import numpy as np

import pacstream as ps
from pacstream import _pacstream

here = pathlib.Path(ps.__file__).resolve()
assert "site-packages" in here.parts, f"pacstream imported from {here}, not from the wheel"
assert ".abi3." in pathlib.Path(_pacstream.__file__).name, _pacstream.__file__

X = np.random.default_rng(0).normal(size=(200, 2))
for learner in (ps.SequentialKMeans(3), ps.Paco(iterations=20), ps.PrincipalCurve()):
    learner.learn_many(X)
    assert learner.n_rounds == 200
record = ps.SequentialKMeans(2).learn_one([0.0, 1.0])
assert record["round"] == 1
mixture = ps.Mixture("mlpol", experts=X, y=X[:, 0])
assert mixture.n_rounds == 200 and mixture.regret <= mixture.bound
print(f"pacstream {ps.__version__} from its wheel on Python {sys.version.split()[0]}: ok")
