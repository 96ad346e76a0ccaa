"""Membership attacks on a deletion: can someone who queries the forest before (Mo) and after
(Mu) a deletion tell the deleted rows from rows never trained on?

The attacker of game-theoretic unlearning (Liu, Zhu, Zhang, Xiong; after Chen et al., CCS 2021):
shadow forests of the target's configuration, fit on data of the same distribution, with
deletions the attacker makes itself, give labelled examples (a deleted row: 1, a row outside the
shadow's training set: 0) of features of the two posteriors; an attack model M_A, a logistic
regression, learns from them and scores the target's deleted rows against rows never in its
training. An *unlearning* is how Mu is made from Mo and the ids: the forest's own deletion, or a
fit from scratch with a new seed (the baseline); the attacker knows which and plays it on its
shadows. Docs: docs/unlearning-leakage.md, "Membership attacks on a deletion".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from veritas_dsl.errors import UserError
from veritas_dsl.unlearning.dare import DareForest, classes
from veritas_dsl.unlearning.dare.derive import deleted, id_problems

#: How Mu is made: ``(before, ids, seed) -> after`` (anything with ``predict_proba``).
Unlearning = Callable[[DareForest, np.ndarray, int], object]
#: The metrics of one seed, in report order.
METRICS = ("auc", "priaa", "advantage", "probe_auc")
#: Newton steps of the attack model, and its ridge (on standardised features): few features,
#: so a small ridge only keeps a separable or constant feature from diverging.
_STEPS, _RIDGE = 50, 1e-3


class MembershipError(UserError):
    """The attack cannot be played on this input."""


def by_deletion(before: DareForest, ids: np.ndarray, seed: int) -> DareForest:
    """Mu as the forest's own ``delete`` makes it (``seed`` is not used: DaRE draws from the
    forest's generator)."""
    return deleted(before, ids)


def by_retraining(before: DareForest, ids: np.ndarray, seed: int) -> DareForest:
    """Mu fit from scratch on the remaining rows but ``ids``, with ``random_state=seed``."""
    X, y = before.training_rows()
    keep = ~np.isin(before.remaining(), ids)
    return type(before)(**{**before.params(), "random_state": seed}).fit(X[keep], y[keep])


#: The unlearnings a report plays, by name: the forest's deletion and its baseline.
UNLEARNINGS: dict[str, Unlearning] = {"delete": by_deletion, "retrain": by_retraining}


# -- features and metrics ------------------------------------------------------------------


def features(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The posterior-difference features of rows whose class-1 probabilities are ``before``
    (Mo) and ``after`` (Mu): columns ``Mo, Mu, Mu - Mo, |Mu - Mo|``, shape ``(n, 4)``. With two
    classes the class-0 probabilities are ``1 -`` these, so they add nothing."""
    before, after = np.asarray(before, np.float64), np.asarray(after, np.float64)
    return np.column_stack([before, after, after - before, np.abs(after - before)])


class AttackModel:
    """M_A: a logistic regression fit by Newton's method on standardised features, with a
    small ridge. Deterministic, numpy only: four features need no more."""

    def fit(self, X: np.ndarray, labels: np.ndarray) -> AttackModel:
        X, labels = np.asarray(X, np.float64), np.asarray(labels, np.float64)
        self.mean, scale = X.mean(axis=0), X.std(axis=0)
        self.scale = np.where(scale > 0, scale, 1.0)  # a constant feature stays 0
        Z = self._design(X)
        w = np.zeros(Z.shape[1])
        ridge = _RIDGE * len(Z) * np.eye(len(w))
        ridge[0, 0] = 0.0  # not the intercept
        for _ in range(_STEPS):
            p = _sigmoid(Z @ w)
            gradient = Z.T @ (p - labels) + ridge @ w
            hessian = (Z * (p * (1 - p))[:, None]).T @ Z + ridge
            step = np.linalg.solve(hessian + 1e-12 * np.eye(len(w)), gradient)
            w -= step
            if np.max(np.abs(step)) < 1e-10:
                break
        self.weights = w
        return self

    def probability(self, X: np.ndarray) -> np.ndarray:
        """The probability M_A gives each row of having been deleted."""
        return _sigmoid(self._design(np.asarray(X, np.float64)) @ self.weights)

    def _design(self, X: np.ndarray) -> np.ndarray:
        return np.column_stack([np.ones(len(X)), (X - self.mean) / self.scale])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # no overflow for large |z|


def auc(deleted_scores, outside_scores) -> float:
    """The chance that a deleted row scores above a row outside the training set, ties
    counting one half (the area under the ROC curve, Mann-Whitney's U over n1 * n0)."""
    pos, neg = np.asarray(deleted_scores, np.float64), np.asarray(outside_scores, np.float64)
    above = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(above / (len(pos) * len(neg)))


def advantage(deleted_scores, outside_scores) -> float:
    """The attacker's advantage: the largest TPR - FPR over thresholds ``score >= t`` (the
    threshold chosen knowing the answers, so an upper estimate; 0 with no threshold)."""
    pos, neg = np.sort(deleted_scores), np.sort(outside_scores)
    cuts = np.unique(np.concatenate([pos, neg]))
    tpr = 1 - np.searchsorted(pos, cuts, side="left") / len(pos)
    fpr = 1 - np.searchsorted(neg, cuts, side="left") / len(neg)
    return float(max(0.0, np.max(tpr - fpr)))


def priaa(deleted_probabilities) -> float:
    """The privacy attack advantage of Liu et al.: ``|mean over the deleted rows of M_A's
    decision - 0.5|``, the decision 1 (deleted) where M_A's probability is at least 0.5."""
    decisions = np.asarray(deleted_probabilities) >= 0.5
    return float(abs(decisions.mean() - 0.5))


# -- the game ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """Features of the deleted rows (label 1) and of as many rows outside the training set
    (label 0), each under the pair (Mo, Mu) of its deletion."""

    deleted: np.ndarray
    outside: np.ndarray

    def labelled(self) -> tuple[np.ndarray, np.ndarray]:
        X = np.concatenate([self.deleted, self.outside])
        return X, np.r_[np.ones(len(self.deleted)), np.zeros(len(self.outside))]


def sample(
    before: DareForest,
    batches: Sequence[np.ndarray],
    outside: np.ndarray,
    unlearn: Unlearning,
    rng: np.random.Generator,
) -> Sample:
    """Each batch of ids deleted from ``before`` apart (Mu = ``unlearn``), its rows' features
    and those of as many rows of ``outside``, drawn without replacement while they last."""
    X, _ = before.training_rows()
    alive = before.remaining()
    order = rng.permutation(len(outside))
    taken, pos, neg = 0, [], []
    p_before_out = before.predict_proba(outside)[:, 1]
    for ids in batches:
        after = unlearn(before, ids, int(rng.integers(2**31)))
        picks = order[np.arange(taken, taken + len(ids)) % len(order)]
        taken += len(ids)
        rows = X[np.searchsorted(alive, ids)]
        pos.append(features(before.predict_proba(rows)[:, 1], after.predict_proba(rows)[:, 1]))
        neg.append(features(p_before_out[picks], after.predict_proba(outside[picks])[:, 1]))
    return Sample(np.concatenate(pos), np.concatenate(neg))


def shadow_sample(
    params: dict,
    X: np.ndarray,
    y: np.ndarray,
    n_train: int,
    batch_sizes: Sequence[int],
    unlearn: Unlearning,
    rng: np.random.Generator,
    kind: type = DareForest,
) -> Sample:
    """One shadow game: a forest of class ``kind`` (the target's: a DareForest or a
    ShardedForest) and ``params`` (a fresh seed) fit on ``n_train`` rows of
    ``X, y`` drawn at random, the others outside; batches of those sizes drawn from its rows
    and deleted apart, as the target's were."""
    order = rng.permutation(len(X))
    train, out = order[:n_train], order[n_train:]
    if len(np.unique(y[train])) < 2:
        raise MembershipError("a shadow's rows are all of one class: give more outside rows")
    seed = int(rng.integers(2**31))
    shadow = kind(**{**params, "random_state": seed}).fit(X[train], y[train])
    batches = [rng.choice(n_train, size, replace=False) for size in batch_sizes]
    return sample(shadow, batches, X[out], unlearn, rng)


@dataclass(frozen=True)
class Scores:
    """One seed's attack on one unlearning: M_A's probabilities on the deleted and outside
    rows, and the probe's scores ``|Mu - Mo|`` (no shadows)."""

    deleted: np.ndarray
    outside: np.ndarray
    probe_deleted: np.ndarray
    probe_outside: np.ndarray

    def metrics(self) -> dict[str, float]:
        return {
            "auc": auc(self.deleted, self.outside),
            "priaa": priaa(self.deleted),
            "advantage": advantage(self.deleted, self.outside),
            "probe_auc": auc(self.probe_deleted, self.probe_outside),
        }


def play(
    before: DareForest,
    batches: Sequence[Sequence[int]],
    outside_X,
    outside_y,
    seed: int = 0,
    shadows: int = 4,
    unlearnings: dict[str, Unlearning] | None = None,
) -> dict[str, Scores]:
    """One seed of the game for each unlearning (default :data:`UNLEARNINGS`). The target is
    ``before`` and the batches of ids, each deleted from it apart; ``outside_X, outside_y``
    are rows never in its training set. They are split in two at random: one half gives the
    target's outside rows, the other joins the target's remaining rows (but the batches') as
    the attacker's data, from which each of ``shadows`` shadow forests draws as many
    training rows as the target has (fewer if the rest would not give one outside row per
    deleted row; they are then reused) and plays the same batch sizes."""
    batches = [np.asarray(b, dtype=np.int64) for b in batches]
    outside_X, outside_y = _outside(before, outside_X, outside_y)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(outside_X))
    evaluation, extra = order[: (len(order) + 1) // 2], order[(len(order) + 1) // 2 :]
    X, y = before.training_rows()
    kept = ~np.isin(before.remaining(), np.concatenate(batches))
    pool_X = np.concatenate([X[kept], outside_X[extra]])
    pool_y = np.concatenate([y[kept], outside_y[extra]])
    sizes = [len(b) for b in batches]
    n_train = min(len(before.remaining()), len(pool_X) - sum(sizes))
    if n_train < 2 * max(sizes):
        raise MembershipError(
            f"the attacker's data ({len(pool_X)} rows) is too small for shadows deleting "
            f"{max(sizes)} rows at once"
        )
    found = {}
    for name, unlearn in (unlearnings or UNLEARNINGS).items():
        game = np.random.default_rng([seed, 1])  # the same draws for every unlearning
        shadow = [
            shadow_sample(
                before.params(), pool_X, pool_y, n_train, sizes, unlearn, game, type(before)
            )
            for _ in range(shadows)
        ]
        model = AttackModel().fit(*_labelled(shadow))
        target = sample(before, batches, outside_X[evaluation], unlearn, game)
        found[name] = Scores(
            model.probability(target.deleted),
            model.probability(target.outside),
            target.deleted[:, 3],
            target.outside[:, 3],
        )
    return found


def _labelled(samples: list[Sample]) -> tuple[np.ndarray, np.ndarray]:
    parts = [s.labelled() for s in samples]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _outside(before: DareForest, X, y) -> tuple[np.ndarray, np.ndarray]:
    """The outside rows as float32 and 0/1 labels, checked against the forest."""
    X, y = np.asarray(X, dtype=np.float32), np.asarray(y)
    if X.ndim != 2 or X.shape[1] != before.n_features:
        raise MembershipError(
            f"the outside rows have shape {X.shape}; the forest reads {before.n_features} columns"
        )
    if len(X) < 4 or y.shape != (len(X),) or not np.isin(y, (0, 1)).all():
        raise MembershipError("give at least 4 outside rows, each with a label 0 or 1")
    return X, y.astype(np.int8)


# -- across seeds --------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """A metric's mean over seeds and its 95 % Student-t interval across seeds (None with
    one seed)."""

    mean: float
    low: float | None
    high: float | None


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (``p >= 1/2``) of Student's t with ``df`` degrees of freedom: its
    density integrated by Simpson's rule and the cdf inverted by bisection, to about 1e-9
    (numpy only: scipy would be a dependency for this one number)."""
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(x: float) -> float:
        u = np.linspace(0.0, x, 4001)
        f = np.exp(log_c - (df + 1) / 2 * np.log1p(u * u / df))
        return 0.5 + x / 12000 * (f[0] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum() + f[-1])

    low, high = 0.0, 1.0
    while cdf(high) < p:
        low, high = high, 2 * high
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < p else (low, mid)
    return (low + high) / 2


def estimate(values: Sequence[float]) -> Estimate:
    values = np.asarray(values, np.float64)
    mean = float(values.mean())
    if len(values) < 2:
        return Estimate(mean, None, None)
    half = float(t_quantile(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
    return Estimate(mean, mean - half, mean + half)


@dataclass(frozen=True)
class Membership:
    """The attack on each unlearning over seeds: ``per_seed[name]`` the metrics of each seed
    (:data:`METRICS`), ``summary[name][metric]`` their :class:`Estimate`."""

    deleted: tuple[int, ...]
    batches: int
    outside: int
    shadows: int
    seeds: int
    per_seed: dict[str, list[dict[str, float]]]
    summary: dict[str, dict[str, Estimate]] = field(init=False)

    def __post_init__(self) -> None:
        summary = {
            name: {m: estimate([s[m] for s in seeds]) for m in METRICS}
            for name, seeds in self.per_seed.items()
        }
        object.__setattr__(self, "summary", summary)

    def to_dict(self) -> dict:
        return {
            "deleted": list(self.deleted),
            "batches": self.batches,
            "outside_rows": self.outside,
            "shadows": self.shadows,
            "seeds": self.seeds,
            "unlearnings": {
                name: {
                    m: {"mean": e.mean, "low": e.low, "high": e.high, "per_seed": [
                        s[m] for s in self.per_seed[name]
                    ]}
                    for m, e in metrics.items()
                }
                for name, metrics in self.summary.items()
            },
        }


def membership(
    before: DareForest,
    batches: Sequence[Sequence[int]],
    outside_X,
    outside_y,
    seeds: int = 5,
    shadows: int = 4,
    unlearnings: dict[str, Unlearning] | None = None,
) -> Membership:
    """:func:`play` with seeds ``0 .. seeds - 1``, summarised. ``batches`` is a list of id
    lists (each deleted from ``before`` apart; one list: one deletion of those rows)."""
    if seeds < 1 or shadows < 1:
        raise MembershipError(f"seeds and shadows must be at least 1, not {seeds}, {shadows}")
    batches = [_checked(before, b) for b in batches]
    per_seed: dict[str, list[dict[str, float]]] = {}
    for seed in range(seeds):
        for name, scores in play(
            before, batches, outside_X, outside_y, seed, shadows, unlearnings
        ).items():
            per_seed.setdefault(name, []).append(scores.metrics())
    ids = tuple(sorted({int(i) for b in batches for i in b}))
    return Membership(ids, len(batches), len(outside_X), shadows, seeds, per_seed)


def _checked(before: DareForest, ids) -> np.ndarray:
    """``ids`` as an array, each a remaining row listed once, some row left."""
    if getattr(before, "multiclass", False):  # the attack reads one class of two
        raise MembershipError(str(classes.refuse("the membership attack")))
    ids = np.asarray(ids, dtype=np.int64).ravel()
    if len(ids) == 0:
        raise MembershipError("a deletion lists no rows")
    if problems := id_problems(before, ids.tolist()):
        k, reason, _ = problems[0]
        raise MembershipError(f"row {ids[k]} {_REASONS[reason]}")
    if len(ids) >= len(before.remaining()):
        raise MembershipError("deleting every remaining row would leave nothing to learn from")
    return ids


_REASONS = {"range": "does not exist", "twice": "is listed twice", "deleted": "is already deleted"}
