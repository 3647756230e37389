"""An opera-like facade for expert aggregation: :class:`Mixture`.

R's opera fits ``mixture(Y, experts, model, loss.type, awake)`` and plots the weights over
time, the cumulative losses and the regret. :class:`Mixture` does the same on any rule of
the library, named as the library names it (``Mixture.rules()``): the rounds are played by
the library's generic aggregator (``pacstream.Aggregator``), which resolves each rule's
defaults, checks its settings (a bad one raises ``ValueError`` naming it), computes the
forecasts, the losses, the regret and the theorem's bound. This module only keeps the
history of the rounds and draws it; it computes none of those figures itself.

>>> import numpy as np
>>> from pacstream import Mixture
>>> experts = np.array([[0.0, 1.0], [0.2, 0.9], [0.1, 1.1], [0.0, 1.0]])
>>> y = np.array([1.0, 1.0, 1.0, 0.9])
>>> mix = Mixture(rule="ewa", loss="square", learning_rate=2.0, loss_bound=1.0)
>>> _ = mix.update(experts, y)
>>> int(np.argmax(mix.weights))
1
>>> mix.weights_history.shape
(4, 2)
>>> bool(mix.regret <= mix.bound)
True
>>> bool(np.isclose(mix.predict([0.0, 1.0]), mix.weights @ [0.0, 1.0]))
True

Figures (``pip install pacstream[plot]`` for matplotlib): :meth:`Mixture.plot_weights`,
:meth:`Mixture.plot_losses`, :meth:`Mixture.plot_regret`, or all three with
:meth:`Mixture.plot`.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from . import _pacstream

__all__ = ["Mixture"]

# The columns kept per round (the learner's) and per round and expert.
_ROUND_COLUMNS = ("prediction", "loss", "cumulative_loss", "regret", "bound")
_EXPERT_COLUMNS = ("weights", "expert_cumulative_loss")


def _matplotlib():
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the figures of Mixture need matplotlib: pip install pacstream[plot]"
        ) from error
    return plt


class Mixture:
    """Aggregates N experts' forecasts round after round with a rule of the library, and
    keeps what opera users look at: the weights over time, the cumulative losses of the
    mixture and of each expert, the regret and its bound.

    Parameters
    ----------
    rule
        The rule's library name (``Mixture.rules()``): "mlpol" (ML-Poly, opera's default),
        "ewa", "fixed-share", "hedge", "fpl", "wm", "rwm", ...
    loss
        "square", "absolute", "pinball:τ" or "zero-one"; None: the rule's default as the
        library sets it (the square loss, the zero-one loss for the binary rules wm, rwm).
    experts, y, awake
        If given, the first rounds, played at once (opera's ``mixture(Y, experts, awake)``):
        see :meth:`update`.
    names
        The experts' names, for the figures and :meth:`summary` (default: the columns of
        a pandas ``experts``, else "0", "1", ...).
    **settings
        The rule's settings by their library names: ``learning_rate`` (a float η or a
        schedule's name: "adahedge", "anytime", "doubling", "horizon" with ``horizon``),
        ``eta``, ``beta``, ``loss_bound``, ``prior``, ``gradient``, ``alpha``, ``seed``, ...
        and any setting the library's rules gain. Checked by the library when the mixture
        is made (and again when the number of experts is known): a bad or unknown one
        raises ``ValueError`` naming it.
    """

    def __init__(
        self,
        rule: str = "mlpol",
        loss: str | None = None,
        *,
        experts=None,
        y=None,
        awake=None,
        names: list[str] | None = None,
        **settings: Any,
    ):
        self.rule = rule
        self.loss = loss
        self.settings = dict(settings)
        self.names = None if names is None else [str(n) for n in names]
        self._core = None
        self._history: dict[str, list[np.ndarray]] = {}
        # The settings are checked now, on as many experts as a prior names (else 2): the
        # library refuses a bad one before any data arrives.
        prior = settings.get("prior")
        probe = 2 if prior is None else len(prior)
        self._make(probe)
        self._core = None
        if experts is not None or y is not None:
            if experts is None or y is None:
                raise ValueError("give both experts and y (or neither)")
            self.update(experts, y, awake)

    # --- settings ---------------------------------------------------------------------

    @staticmethod
    def rules() -> list[str]:
        """The names of the library's aggregation rules."""
        return _pacstream.Aggregator.rules()

    def _make(self, n_experts: int):
        return _pacstream.Aggregator(self.rule, n_experts, loss=self.loss, **self.settings)

    def _core_for(self, n_experts: int):
        if self._core is None:
            self._core = self._make(n_experts)
            if self.names is not None and len(self.names) != n_experts:
                raise ValueError(
                    f"names must name the {n_experts} experts, got {len(self.names)}"
                )
        elif n_experts != self._core.n_experts:
            raise ValueError(
                f"experts must have {self._core.n_experts} columns (the experts of the "
                f"earlier rounds), got {n_experts}"
            )
        return self._core

    # --- rounds -----------------------------------------------------------------------

    def update(self, experts, y, awake=None) -> dict[str, np.ndarray]:
        """Plays rounds: ``experts`` the forecasts of the N experts (a 1-D array for one
        round with a number ``y``, or a T × N array with T outcomes ``y``; lists and
        pandas frames are converted), ``awake`` an optional mask of the same shape
        (sleeping experts: False where an expert gives no forecast). Each round pays the
        loss of the mixture's forecast, then updates the weights.

        Returns the rounds' records as arrays (``prediction``, ``loss``, ``regret``, ...).
        Atomic: if a round is refused (NaN, wrong size), the mixture is as it was before
        the call and the error names the round.
        """
        if names := self._names_of(experts):
            self.names = self.names or names
        experts = np.asarray(experts, dtype=np.float64)
        one_round = experts.ndim == 1
        if one_round:
            experts = experts[None, :]
            y = np.asarray([y], dtype=np.float64).reshape(1)
        if experts.ndim != 2:
            raise ValueError(
                f"experts must be a 1-D array (one round) or a T × N array, got shape "
                f"{experts.shape}"
            )
        experts = np.ascontiguousarray(experts)
        y = np.ascontiguousarray(np.asarray(y, dtype=np.float64).reshape(-1))
        if awake is not None:
            awake = np.ascontiguousarray(np.asarray(awake, dtype=bool).reshape(experts.shape))
        had_core = self._core is not None
        core = self._core_for(experts.shape[1])
        before = core.__copy__()
        try:
            out = core.learn_many(experts, y, awake, history=True)
        except Exception:
            # the rounds before a bad one were learned by the core: undo them, so that the
            # history and the weights stay one run
            self._core = before if had_core else None
            raise
        for key in _ROUND_COLUMNS + _EXPERT_COLUMNS:
            self._history.setdefault(key, []).append(out[key])
        return out

    @staticmethod
    def _names_of(experts) -> list[str] | None:
        columns = getattr(experts, "columns", None)
        return None if columns is None else [str(c) for c in columns]

    def predict(self, experts, awake=None):
        """The mixture's forecast for the experts' forecasts ``experts`` (1-D: a number;
        T × N: one forecast per row, each with the current weights), without learning;
        computed by the library (NaN for the rules that choose an expert, Hedge and FPL).
        """
        experts = np.asarray(experts, dtype=np.float64)
        core = self._core_for(experts.shape[-1])
        if awake is not None:
            awake = np.ascontiguousarray(np.asarray(awake, dtype=bool))
        forecast = core.predict(np.ascontiguousarray(experts), awake)
        return np.nan if forecast is None else forecast

    # --- what the run gives -------------------------------------------------------------

    def _column(self, key: str) -> np.ndarray:
        parts = self._history.get(key, [])
        if not parts:
            n = 0 if self._core is None else self._core.n_experts
            return np.empty((0, n)) if key in _EXPERT_COLUMNS else np.empty(0)
        return np.concatenate(parts)

    def _fitted(self):
        if self._core is None:
            raise ValueError("no round played yet: call update(experts, y) first")
        return self._core

    @property
    def n_rounds(self) -> int:
        """The rounds played."""
        return 0 if self._core is None else self._core.n_rounds

    @property
    def n_experts(self) -> int | None:
        """N, once the first round has fixed it."""
        return None if self._core is None else self._core.n_experts

    @property
    def weights(self) -> np.ndarray:
        """The weights of the experts for the next round."""
        return self._fitted().weights

    @property
    def weights_history(self) -> np.ndarray:
        """T × N: the weights each round was played with."""
        return self._column("weights")

    @property
    def predictions(self) -> np.ndarray:
        """The mixture's forecast of each round (NaN for Hedge and FPL)."""
        return self._column("prediction")

    @property
    def losses(self) -> np.ndarray:
        """The loss the mixture paid each round (the loss its bound is about)."""
        return self._column("loss")

    @property
    def cumulative_loss(self) -> float:
        """The mixture's cumulative loss."""
        return self._fitted().cumulative_loss

    @property
    def cumulative_loss_history(self) -> np.ndarray:
        """The mixture's cumulative loss after each round."""
        return self._column("cumulative_loss")

    @property
    def expert_losses(self) -> np.ndarray:
        """Every expert's cumulative loss (on its awake rounds)."""
        return self._fitted().expert_losses

    @property
    def expert_losses_history(self) -> np.ndarray:
        """T × N: every expert's cumulative loss after each round."""
        return self._column("expert_cumulative_loss")

    @property
    def regret(self) -> float:
        """The regret against the best expert in hindsight."""
        return self._fitted().regret

    @property
    def regret_history(self) -> np.ndarray:
        """The regret against the best expert so far, after each round."""
        return self._column("regret")

    @property
    def bound(self) -> float | None:
        """The theorem's bound on the regret for exactly these settings, or None when no
        theorem covers them (see :attr:`guarantee`)."""
        return self._fitted().bound

    @property
    def bound_history(self) -> np.ndarray:
        """The bound after each round (NaN where there is none)."""
        return self._column("bound")

    @property
    def guarantee(self) -> dict:
        """What the bound bounds and under which theorem, or why there is none."""
        return self._fitted().guarantee

    @property
    def resolved_settings(self) -> dict:
        """The settings by name, every default of the rule resolved by the library."""
        return self._fitted().settings

    def summary(self) -> dict:
        """The run's summary as the library gives it: totals, the regret and its bound,
        every expert's loss, regret, bound and weight."""
        return self._fitted().summary(self.names)

    # --- snapshots ------------------------------------------------------------------------

    def to_json(self) -> str:
        """The mixture as JSON text: its settings, the library's snapshot of the rule and
        the history. :meth:`from_json` resumes it bit for bit."""
        return json.dumps(
            {
                "rule": self.rule,
                "loss": self.loss,
                "settings": self.settings,
                "names": self.names,
                "core": None if self._core is None else self._core.to_json(),
                "history": {
                    key: [part.tolist() for part in parts]
                    for key, parts in self._history.items()
                },
            },
            default=_plain,
        )

    @classmethod
    def from_json(cls, text: str) -> Mixture:
        """Restores a mixture written by :meth:`to_json`; a corrupt one raises
        ``ValueError``."""
        try:
            state = json.loads(text)
            mixture = cls(state["rule"], state["loss"], names=state["names"], **state["settings"])
            if state["core"] is not None:
                mixture._core = _pacstream.Aggregator.from_json(state["core"])
            mixture._history = {
                key: [np.asarray(part, dtype=np.float64) for part in parts]
                for key, parts in state["history"].items()
            }
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as error:
            raise ValueError(f"invalid Mixture snapshot: {error}") from error
        return mixture

    def __getstate__(self):
        return {"json": self.to_json()}

    def __setstate__(self, state):
        self.__dict__.update(type(self).from_json(state["json"]).__dict__)

    def __repr__(self) -> str:
        settings = "".join(f", {k}={v!r}" for k, v in self.settings.items())
        return f"Mixture(rule={self.rule!r}, loss={self.loss!r}{settings}; {self.n_rounds} rounds)"

    # --- figures ----------------------------------------------------------------------

    def _labels(self) -> list[str]:
        n = self._fitted().n_experts
        return self.names or [str(i) for i in range(n)]

    def plot_weights(self, ax=None):
        """The weights over time, stacked (opera's weight plot); returns the axes."""
        plt = _matplotlib()
        ax = ax if ax is not None else plt.subplots()[1]
        weights = self.weights_history
        rounds = np.arange(1, len(weights) + 1)
        ax.stackplot(rounds, weights.T, labels=self._labels())
        ax.set_xlabel("round")
        ax.set_ylabel("weight")
        ax.set_ylim(0.0, 1.0)
        ax.set_title(f"Weights of the experts ({self.rule})")
        if weights.shape[1] <= 12:
            ax.legend(loc="upper left", fontsize="small")
        return ax

    def plot_losses(self, ax=None):
        """The cumulative loss of the mixture against that of each expert; returns the
        axes."""
        plt = _matplotlib()
        ax = ax if ax is not None else plt.subplots()[1]
        experts = self.expert_losses_history
        rounds = np.arange(1, len(experts) + 1)
        for column, label in zip(experts.T, self._labels()):
            ax.plot(rounds, column, linewidth=0.8, alpha=0.7, label=label)
        ax.plot(rounds, self.cumulative_loss_history, color="black", linewidth=2, label="mixture")
        ax.set_xlabel("round")
        ax.set_ylabel("cumulative loss")
        ax.set_title("Cumulative loss: the mixture against each expert")
        if experts.shape[1] <= 12:
            ax.legend(loc="upper left", fontsize="small")
        return ax

    def plot_regret(self, ax=None):
        """The regret against the best expert so far, and the theorem's bound for these
        settings where there is one; returns the axes."""
        plt = _matplotlib()
        ax = ax if ax is not None else plt.subplots()[1]
        regret = self.regret_history
        rounds = np.arange(1, len(regret) + 1)
        ax.plot(rounds, regret, color="black", label="regret")
        bound = self.bound_history
        if np.isfinite(bound).any():
            ax.plot(rounds, bound, color="tab:red", linestyle="--", label="bound")
        ax.axhline(0.0, color="grey", linewidth=0.5)
        ax.set_xlabel("round")
        ax.set_ylabel("regret against the best expert")
        has_bound = np.isfinite(bound).any()
        ax.set_title("Regret and its bound" if has_bound else "Regret (no bound for these settings)")
        ax.legend(loc="upper left", fontsize="small")
        return ax

    def plot(self, path: str | None = None):
        """The three figures side by side; saved to ``path`` if given. Returns the
        matplotlib figure."""
        plt = _matplotlib()
        figure, axes = plt.subplots(1, 3, figsize=(15, 4.2))
        self.plot_weights(axes[0])
        self.plot_losses(axes[1])
        self.plot_regret(axes[2])
        figure.tight_layout()
        if path is not None:
            figure.savefig(path)
        return figure


def _plain(value):
    """JSON for the NumPy values a user may give as settings."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")
