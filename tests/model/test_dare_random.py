"""The randomized DaRE forest (random top levels, k sampled thresholds, sqrt(p) attributes): a
deletion gives a forest distributed as a fit on the remaining rows, and every node stays what a
fit from its rows would make it.

The statistical test runs over fixed seeds, so it is deterministic; its critical values are
those of a 0.1 % level, computed by hand (no scipy in our dependencies).
"""

from __future__ import annotations

import numpy as np
import pytest
from dare_helpers import ks, ks_critical, tied_data
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare.splits import greedy_split, is_leaf
from veritas_dsl.unlearning.dare.store import _check_rows
from veritas_dsl.unlearning.dare.tree import GREEDY, LEAF

from conftest import examples

SEEDS = 200
PARAMS = dict(n_trees=1, max_depth=2, k=2, max_features="sqrt", random_depth=1)


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three attributes of different spreads; the rows to delete are those in the upper 70 % of
    attribute 0's range and the lowest of attribute 2, so that random roots often lose a side."""
    rng = np.random.default_rng(2021)
    n = 60
    X = np.stack([rng.uniform(0, 10, n), rng.integers(0, 4, n), rng.normal(0, 1, n)], axis=1)
    X = X.astype(np.float32)
    y = (X[:, 0] + 3 * X[:, 2] + rng.normal(0, 2, n) > 2).astype(int)
    deleted = np.union1d(np.flatnonzero(X[:, 0] > 3), [int(np.argmin(X[:, 2]))])
    return X, y, deleted


def _root(forest: DareForest, rows: np.ndarray) -> tuple[int, float]:
    """The root's attribute and its threshold relative to the interval it is drawn from on
    ``rows``: ``(v - low) / (high - low)`` with ``low, high`` the m-th smallest and m-th largest
    values (m = ``min_samples_leaf``; 1: the attribute's range)."""
    view = forest.view()
    attribute = int(view.feature[0])
    values = np.sort(rows[:, attribute].astype(np.float64))
    m = forest.min_samples_leaf
    low, high = values[m - 1], values[len(values) - m]
    return attribute, (view.threshold[0] - low) / (high - low)


def _chi_square(a: np.ndarray, b: np.ndarray, categories: int) -> tuple[float, int]:
    """Pearson's statistic of the 2 x c table of two samples' category counts, and its degrees
    of freedom (columns seen in neither sample are dropped)."""
    table = np.stack([np.bincount(a, minlength=categories), np.bincount(b, minlength=categories)])
    table = table[:, table.sum(axis=0) > 0]
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0) / table.sum()
    return float(((table - expected) ** 2 / expected).sum()), table.shape[1] - 1


CHI_SQUARE_001 = {1: 10.83, 2: 13.82}  # upper 0.1 % points


def _samples(X, y, deleted, min_samples_leaf: int, adding: bool = False):
    """Roots of forests fit on all rows then edited (rows ``deleted`` deleted, or when ``adding``
    fit without them then given them), and of forests fit on the result directly."""
    keep = np.setdiff1d(np.arange(len(X)), deleted)
    final = np.arange(len(X)) if adding else keep
    edited, fresh = [], []
    params = dict(PARAMS, min_samples_leaf=min_samples_leaf)
    for seed in range(SEEDS):
        if adding:
            forest = DareForest(**params, random_state=seed).fit(X[keep], y[keep])
            forest.add(X[deleted], y[deleted])
        else:
            forest = DareForest(**params, random_state=seed).fit(X, y).delete(deleted)
        edited.append(_root(forest, X[final]))
        retrained = DareForest(**params, random_state=SEEDS + seed).fit(X[final], y[final])
        fresh.append(_root(retrained, X[final]))
    edited, fresh = np.array(edited), np.array(fresh)
    assert np.all((edited[:, 1] >= 0) & (edited[:, 1] < 1))  # in [v_(m), v_(n-m+1))
    return edited, fresh


def _assert_same_distribution(edited: np.ndarray, fresh: np.ndarray, n_attributes: int) -> None:
    """Chi-square on the root attributes, KS on the relative thresholds, overall and given the
    attribute."""
    chi2, dof = _chi_square(edited[:, 0].astype(int), fresh[:, 0].astype(int), n_attributes)
    assert chi2 < CHI_SQUARE_001[dof], (chi2, dof)
    assert ks(edited[:, 1], fresh[:, 1]) < ks_critical(SEEDS, SEEDS)
    for attribute in range(n_attributes):  # given the attribute: sharper, on a third of the data
        a, b = edited[edited[:, 0] == attribute, 1], fresh[fresh[:, 0] == attribute, 1]
        assert ks(a, b) < ks_critical(len(a), len(b)), attribute


@pytest.mark.parametrize("min_samples_leaf", [1, 3])
def test_delete_then_predict_is_distributed_as_retraining(min_samples_leaf):
    X, y, deleted = _data()
    keep = np.setdiff1d(np.arange(len(X)), deleted)
    edited, fresh = _samples(X, y, deleted, min_samples_leaf)
    _assert_same_distribution(edited, fresh, X.shape[1])
    # The test sees a difference where there is one: roots on attribute 0 before the deletion,
    # measured on the remaining rows' range, are not distributed as a retraining's.
    params = dict(PARAMS, min_samples_leaf=min_samples_leaf)
    before = np.array(
        [_root(DareForest(**params, random_state=s).fit(X, y), X[keep]) for s in range(SEEDS)]
    )
    stale, retrained = before[before[:, 0] == 0, 1], fresh[fresh[:, 0] == 0, 1]
    assert ks(stale, retrained) > ks_critical(len(stale), len(retrained))


@pytest.mark.parametrize("min_samples_leaf", [1, 3])
def test_add_is_distributed_as_fitting_with_the_rows(min_samples_leaf):
    X, y, added = _data()
    _assert_same_distribution(*_samples(X, y, added, min_samples_leaf, True), X.shape[1])


def test_the_statistics_on_known_samples():
    assert ks(np.array([0.1, 0.2]), np.array([0.3, 0.4])) == 1.0
    assert ks(np.array([0.1, 0.3]), np.array([0.2, 0.4])) == 0.5
    chi2, dof = _chi_square(np.array([0, 0, 1, 1]), np.array([0, 0, 1, 1]), 3)
    assert (chi2, dof) == (0.0, 1)
    chi2, _ = _chi_square(np.array([0] * 10), np.array([1] * 10), 2)
    assert chi2 == pytest.approx(20.0)


def _assert_nodes_are_fresh_choices(forest: DareForest) -> None:
    """Counts and leaf rows match the remaining rows (the load check), and each greedy node's
    split is the one its rows and seed choose."""
    grower = forest._grower()
    for tree in forest._trees:
        _check_rows(tree, forest)
        stack = [(0, forest.remaining(), 0)]
        while stack:
            node, rows, depth = stack.pop()
            s = grower.settings
            m = s.min_samples_leaf
            leaf = is_leaf(len(rows), int(forest._y[rows].sum()), depth, s.max_depth, m)
            assert (tree.kind[node] == LEAF) >= leaf
            if tree.kind[node] == GREEDY:
                split = greedy_split(
                    forest._y, rows, tree.seed[node], s.k, s.max_features, m, grower.presorted
                )
                assert (split.attribute, split.threshold) == (
                    tree.feature[node],
                    tree.threshold[node],
                )
            if tree.kind[node] != LEAF:
                left = forest._X[rows, tree.feature[node]] <= tree.threshold[node]
                stack += [(tree.left[node], rows[left], depth + 1)]
                stack += [(tree.right[node], rows[~left], depth + 1)]


@settings(max_examples=examples(0.4))
@given(
    data=tied_data(max_rows=30, max_columns=4),
    random_depth=st.integers(0, 2),
    min_samples_leaf=st.integers(1, 3),
)
def test_after_random_edits_every_node_is_consistent(data, random_depth, min_samples_leaf):
    X, y, seed = data
    rng = np.random.default_rng(seed)
    params = dict(n_trees=2, max_depth=4, k=2, random_depth=random_depth, random_state=seed)
    params["min_samples_leaf"] = min_samples_leaf
    forest = DareForest(**params).fit(X, y)
    for _ in range(20):
        alive = forest.remaining()
        if len(alive) > 1 and rng.random() < 0.6:
            forest.delete(rng.choice(alive, 1))
        else:
            forest.add(X[rng.integers(len(X), size=2)] + 0.5, rng.integers(0, 2, 2))
        _assert_nodes_are_fresh_choices(forest)
