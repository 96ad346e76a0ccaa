"""When `delete` is a refit: a DareForest without random nodes (``random_depth=0``), whatever its
threshold and attribute sampling, after deleting rows is the forest a fit with the same settings
and seed on its remaining rows gives, node for node (each tree draws its root's seed before
seeing any row, and a greedy subtree is a function of its rows and that seed). The language
lets a certificate cover such refits (unlearning/checking/coverage.py). With random nodes it is not so: a fit
draws their thresholds from the rows it is given."""

from __future__ import annotations

import numpy as np
from dare_helpers import assert_same_forest, structure, tied_data
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare.derive import deleted, retrained

from conftest import examples


@settings(max_examples=examples(0.4), deadline=None)
@given(
    data=tied_data(max_rows=30),
    k=st.sampled_from([None, 1, 3]),
    max_features=st.sampled_from([None, 1, "sqrt"]),
    max_depth=st.integers(1, 4),
    random_state=st.integers(0, 1000),
    fraction=st.floats(0.05, 0.5),
)
def test_without_random_nodes_a_deletion_is_the_same_seed_refit(
    data, k, max_features, max_depth, random_state, fraction
):
    X, y, seed = data
    params = dict(n_trees=3, max_depth=max_depth, k=k, max_features=max_features)
    forest = DareForest(random_depth=0, random_state=random_state, **params).fit(X, y)
    rng = np.random.default_rng(seed)
    count = max(1, min(len(X) - 1, round(fraction * len(X))))
    forest.delete(rng.choice(len(X), count, replace=False))
    assert_same_forest(forest, X, y)


def test_with_random_nodes_a_refit_is_another_forest():
    """Deleting the rows of the largest and the smallest value of each attribute narrows the
    ranges the root draws from: `delete` keeps a threshold still inside, a fit draws anew."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=200) > 0).astype(int)
    before = DareForest(n_trees=5, max_depth=3, random_depth=2, random_state=0).fit(X, y)
    ids = sorted({int(i) for i in np.concatenate([X.argmax(axis=0), X.argmin(axis=0)])})
    after, again = deleted(before, ids), retrained(before, ids)
    keep = np.setdiff1d(np.arange(200), ids)
    assert structure(after)["threshold"] != structure(again, keep)["threshold"]
