"""A DaRE forest's probability is the exact mean of its leaves' fractions, rounded once: a tie is
0.5 and a forest whose trees all say 1 is 1.0, whatever the number of trees (issue 38, item 4).
Added tree by tree in float64, dare_rf's README forest said 0.5000000000000003 with 100 trees
and 0.49999999999999994 with 10, so its class at a tie depended on the number of trees."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from dare_helpers import tied_data
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare.certificate import worst_case
from veritas_dsl.unlearning.dare.tree import LEAF

from conftest import examples

#: dare_rf's README (github.com/jjbrophy47/dare_rf): the test row [1, 0] reaches rows 3 and 4,
#: one positive, in every tree; deleting row 3 leaves it a positive leaf in every tree.
README_X = np.array([[0, 1], [0, 1], [0, 1], [1, 0], [1, 0]])
README_Y = np.array([1, 1, 1, 0, 1])


def readme_forest(n_trees: int) -> DareForest:
    return DareForest(n_trees=n_trees, max_depth=3, k=5, random_state=1).fit(README_X, README_Y)


@pytest.mark.parametrize("n_trees", [10, 100, 3, 7, 49])
def test_readme_tie_is_one_half_and_pure_is_one(n_trees):
    forest = readme_forest(n_trees)
    test = np.array([[1, 0]])
    assert forest.predict_proba(test).tolist() == [[0.5, 0.5]]
    model = forest.to_ensemble()
    assert model.eval(test).tolist() == [0.5]
    assert model.predict_class(test).tolist() == [0]  # not strictly above 0.5
    forest.delete([3])
    assert forest.predict_proba(test).tolist() == [[0.0, 1.0]]
    assert forest.to_ensemble().eval(test).tolist() == [1.0]


def _exact_mean(forest: DareForest, X: np.ndarray) -> list[Fraction]:
    """The mean over trees of each leaf's fraction of positives, in rationals, on the forest's
    own walk of its trees."""
    view = forest.view()
    nodes = view.leaves(X)
    return [
        sum((Fraction(int(view.positives[j]), int(view.count[j])) for j in row), Fraction(0))
        / view.n_trees
        for row in nodes
    ]


@settings(max_examples=examples(0.5))
@given(
    data=tied_data(max_rows=30, max_columns=3),
    n_trees=st.sampled_from([3, 10, 30, 100]),
    random_depth=st.integers(0, 2),
)
def test_probabilities_are_the_exact_mean_rounded_once(data, n_trees, random_depth):
    X, y, seed = data
    forest = DareForest(
        n_trees=n_trees, max_depth=3, k=3, random_depth=random_depth, random_state=seed
    ).fit(X, y)
    probes = np.concatenate([X, X + np.float32(0.25)])
    exact = _exact_mean(forest, probes)
    proba = forest.predict_proba(probes)
    assert proba[:, 1].tolist() == [float(v) for v in exact]
    assert proba[:, 0].tolist() == [float(1 - v) for v in exact]
    assert np.array_equal(forest.to_ensemble().eval(probes), proba[:, 1])


def test_leaf_values_are_each_fraction_rounded_once():
    forest = readme_forest(7)
    view = forest.view()
    leaf = view.kind == LEAF
    expected = [
        float(Fraction(int(p), int(c) * 7))
        for p, c in zip(view.positives[leaf], view.count[leaf], strict=True)
    ]
    assert view.leaf_values()[leaf].tolist() == expected


def test_certificate_bounds_at_no_deletion_are_the_forest():
    forest = readme_forest(100)
    lower, upper = worst_case(forest, 0)
    test = np.array([[1, 0], [0, 1]], dtype=np.float32)
    assert lower.eval(test).tolist() == upper.eval(test).tolist() == [0.5, 1.0]
