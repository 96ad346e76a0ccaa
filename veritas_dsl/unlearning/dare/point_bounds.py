"""Bounds, at given inputs, on every forest that ``DareForest.delete`` of at most ``k`` rows can
give, following the greedy choices a deletion can lead to instead of bounding a node that may
change by its counts alone (:mod:`.certificate` does that, for the whole input space at once).

A greedy subtree after a deletion is the tree grown on the node's remaining rows with its own
seed (tree.py). At a node of ``n`` rows, ``P`` positive, at depth ``d``, with ``k`` deletions:

- it is a leaf now: it stays one (``splits.is_leaf``), of at least ``n - k`` of its rows;
- it may turn into a leaf when ``min(P, n - P) <= k`` (pure) or ``n - k < 2 m``;
- otherwise it takes the best-scoring cut among the ones it samples. A *reference* cut is one
  sure to be sampled and valid whatever the deletion: its attribute among the first
  ``max_features`` of those with a valid cut now (deletions only remove valid cuts, so it can
  only move up), its threshold among the ``k_thresholds - k`` first by key (a deletion creates
  at most ``k`` thresholds, by emptying value groups), both value groups next to it and both
  labels among them keeping a row, each side keeping ``m``. The cut taken then scores at least
  as well as the reference: it is the reference or one of
  :func:`~.gini_margin.overtaking_cuts` against it (every cut between adjacent values, exact
  over the deletion patterns). With no reference the node is bounded as grown afresh
  (``bound_trees._regrown``: every leaf holds at least ``min(m, n - k)`` of its rows).
- a cut's threshold is the midpoint of the nearest remaining values either side, within the
  band its emptiable neighbour groups allow; an input inside the band may go either way.

The bound at ``x`` is the least (largest) leaf value over every leaf ``x`` can reach this way,
each leaf of its rows less ``k``; a random node is followed while no deletion can change it
(``certificate._random_reason``) and bounded as grown afresh otherwise. Each node allows ``k``
deletions of its own, a superset of the deletions of ``k`` rows in all. Nodes are analysed once
per (rows, depth, seed) and shared between inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.model.errors import ModelError
from veritas_dsl.unlearning.dare.bound_trees import _regrown, leaf_bound_fractions
from veritas_dsl.unlearning.dare.certificate import (
    _groups,
    _random_reason,
    _rivals,
    _robust_cuts,
    _valid_cuts,
    check_deletions,
)
from veritas_dsl.unlearning.dare.classes import two_classes
from veritas_dsl.unlearning.dare.gini_margin import _gini_now, overtaking_cuts
from veritas_dsl.unlearning.dare.kernels import attribute_keys, threshold_key
from veritas_dsl.unlearning.dare.splits import is_leaf
from veritas_dsl.unlearning.dare.tree import LEAF, RANDOM, child_seed

if TYPE_CHECKING:
    from veritas_dsl.unlearning.dare.forest import DareForest


#: Nodes followed per tree and input; past it a node is bounded as grown afresh (the choices
#: multiply down a path, and a deep tree's can reach millions).
BUDGET = 200


@dataclass(frozen=True)
class _Cut:
    """A cut a node may take: attribute ``b``, its threshold within ``[low, high]``, and the
    node's rows either side."""

    b: int
    low: float
    high: float
    left: np.ndarray
    right: np.ndarray


@dataclass(frozen=True)
class _Choices:
    """What a node may be after a deletion: a leaf bounded by ``leaf`` (``(least, largest)``
    fractions, None when it cannot be one) and the ``cuts`` it may split on."""

    leaf: tuple[Fraction, Fraction] | None
    cuts: tuple[_Cut, ...]


def point_bounds(
    forest: DareForest, X, deletions: int, budget: int = BUDGET
) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)``, per row of ``X``, such that for every set S of at most ``deletions``
    remaining training rows ``lower <= forest.copy().delete(S).predict_proba(X)[:, 1] <=
    upper`` (the module docstring says how). Exact sums, rounded to the nearest float64.
    Binary forests of the gini criterion only (as :func:`~.certificate.worst_case`); a
    ModelError otherwise, and for ``X`` that is not a table of numbers of the forest's width."""
    two_classes(forest, "point_bounds")
    k = check_deletions(forest, deletions)
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ModelError(f"X must be numbers: {error}") from None
    if X.ndim != 2 or X.shape[1] != forest._X.shape[1]:
        raise ModelError(f"X must have {forest._X.shape[1]} columns, not shape {X.shape}")
    bounds = _Bounds(forest, k, budget)
    lower, upper = np.empty(len(X)), np.empty(len(X))
    trees = len(forest._trees)
    for i, x in enumerate(X):
        low = high = Fraction(0)
        for tree in forest._trees:
            least, most = bounds.tree(tree, x)
            low, high = low + least, high + most
        lower[i], upper[i] = float(low / trees), float(high / trees)
    return lower, upper


class _Bounds:
    """The per-tree bounds at an input, with the node analyses shared between inputs."""

    def __init__(self, forest: DareForest, k: int, budget: int) -> None:
        self.X = forest._X.astype(np.float64)
        self.y = forest._y.astype(np.int64)
        self.k = k
        self.settings = forest._grower().settings
        self.memo: dict = {}
        self.per_tree, self.budget = budget, budget

    def tree(self, tree, x) -> tuple[Fraction, Fraction]:
        """Follow the tree's random levels while they cannot change, then its greedy choices."""
        self.budget = self.per_tree
        node, rows, depth, m = 0, tree.rows_below(0), 0, self.settings.min_samples_leaf
        while tree.kind[node] == RANDOM:
            a, v = tree.feature[node], tree.threshold[node]
            go_left = self.X[rows, a] <= v
            if _random_reason(self.y[rows], go_left, self.k, m):
                return self._fresh(rows)
            left = x[a] <= v
            node = tree.left[node] if left else tree.right[node]
            rows, depth = rows[go_left if left else ~go_left], depth + 1
        if tree.kind[node] == LEAF and depth < self.settings.random_depth:
            return self._leaf(rows)
        return self.greedy(rows, depth, int(tree.seed[node]), x)

    def greedy(self, rows, depth: int, seed: int, x) -> tuple[Fraction, Fraction]:
        self.budget -= 1
        if self.budget < 0:
            return self._fresh(rows)
        choices = self._choices(rows, depth, seed)
        least, most = choices.leaf if choices.leaf else (Fraction(1), Fraction(0))
        for cut in choices.cuts:
            sides = [(cut.left, 0)] if x[cut.b] <= cut.low else []
            sides += [(cut.right, 1)] if x[cut.b] > cut.high else []
            if not sides:  # inside the band: either side
                sides = [(cut.left, 0), (cut.right, 1)]
            for side_rows, side in sides:
                low, high = self.greedy(side_rows, depth + 1, child_seed(seed, side), x)
                least, most = min(least, low), max(most, high)
        return least, most

    def _choices(self, rows, depth: int, seed: int) -> _Choices:
        key = (rows.tobytes(), depth, seed)
        if key not in self.memo:
            self.memo[key] = self._analyse(rows, depth, seed)
        return self.memo[key]

    def _analyse(self, rows, depth: int, seed: int) -> _Choices:
        s, k = self.settings, self.k
        m = s.min_samples_leaf
        X, y = self.X[rows], self.y[rows]
        n, positives = len(rows), int(y.sum())
        if is_leaf(n, positives, depth, s.max_depth, m):
            return _Choices(self._leaf(rows), ())
        reference = _reference(X, y, seed, k, s)
        if reference is None:
            return _Choices(self._fresh(rows), ())
        a, below = reference
        may_leaf = min(positives, n - positives) <= k or n - k < 2 * m
        found = overtaking_cuts(X, y, a, below, k, m, _rivals(X, y, a, seed, k, s))
        values = np.unique(X[:, a])
        cuts = [(a, float((values[below] + values[below + 1]) / 2))]
        cuts += [(b, t) for b, t, *_ in found]
        return _Choices(
            self._leaf(rows) if may_leaf else None,
            tuple(_cut(X, y, rows, b, t, k) for b, t in cuts),
        )

    def _leaf(self, rows) -> tuple[Fraction, Fraction]:
        n, positives = np.array([len(rows)]), np.array([int(self.y[rows].sum())])
        (lp, ln), (hp, hn) = leaf_bound_fractions(n, positives, self.k)
        return Fraction(int(lp[0]), int(ln[0])), Fraction(int(hp[0]), int(hn[0]))

    def _fresh(self, rows) -> tuple[Fraction, Fraction]:
        n, positives = len(rows), int(self.y[rows].sum())
        low, high = _regrown(n, positives, self.k, self.settings.min_samples_leaf)
        return Fraction(*low), Fraction(*high)


def _reference(X, y, seed: int, k: int, settings) -> tuple[int, int] | None:
    """``(attribute, value group below the cut)`` of the reference cut of least Gini ``G`` now
    (module docstring), or None when no cut is sure to be sampled and valid."""
    p, m = X.shape[1], settings.min_samples_leaf
    best, best_g = None, np.inf
    valid_attributes = 0
    for b in np.argsort(attribute_keys(seed, p)).tolist():
        if valid_attributes == settings.max_features:
            break
        values, sizes, pos = _groups(X[:, b], y)
        valid = _valid_cuts(values, sizes, pos, m)
        if not valid.any():
            continue
        valid_attributes += 1
        sure = _robust_cuts(sizes, pos, k, m)
        if settings.k is not None:
            mids = (values[:-1] + values[1:]) / 2.0
            keys = np.array([threshold_key(seed, b, t) for t in mids], dtype=np.uint64)
            # keys of valid thresholds that may sort first (an equal key too, itself not)
            ahead = np.searchsorted(np.sort(keys[valid]), keys, side="right") - valid
            sure &= ahead + k < settings.k
        for c in np.flatnonzero(sure).tolist():
            g = _gini_now(X[:, b] <= values[c], y)
            if g < best_g:
                best, best_g = (b, c), g
    return best


def _cut(X, y, rows, b: int, t: float, k: int) -> _Cut:
    """The cut of attribute ``b`` between the value groups either side of ``t``, its threshold
    band: the midpoint of the nearest values either side once up to k rows of groups next to
    it are deleted."""
    values, sizes, _ = _groups(X[:, b], y)
    c = int(np.searchsorted(values, t)) - 1  # the group just below t
    lo, emptied = c, 0
    while lo > 0 and emptied + sizes[lo] <= k:
        emptied += int(sizes[lo])
        lo -= 1
    hi, emptied = c + 1, 0
    while hi < len(values) - 1 and emptied + sizes[hi] <= k:
        emptied += int(sizes[hi])
        hi += 1
    left = X[:, b] <= values[c]
    return _Cut(
        b,
        float((values[lo] + values[c + 1]) / 2),
        float((values[c] + values[hi]) / 2),
        rows[left],
        rows[~left],
    )
