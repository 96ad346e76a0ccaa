"""Bad input to a DareForest is a ModelError saying what is wrong, and leaves the forest as it was."""

from __future__ import annotations

import numpy as np
import pytest
from dare_helpers import structure

from veritas_dsl.model import ModelError
from veritas_dsl.unlearning import DareForest

X = np.array([[0, 1], [1, 1], [2, 0], [3, 0], [4, 1]], np.float32)
Y = np.array([0, 0, 1, 1, 0])


@pytest.mark.parametrize(
    ("rows", "labels", "message"),
    [
        ([[0, np.nan], [1, 1]], [0, 1], r"X\[0, 1\] is nan"),
        ([[0, np.inf], [1, 1]], [0, 1], r"X\[0, 1\] is inf"),
        ([[0, 1], [1, 1]], [0, 0.5], "Unknown label type"),
        ([[0, 1], [1, 1]], [0.5, 1], "Unknown label type"),
        ([[0, 1], [1, 1]], [1, 1], "one class only"),
        ([[0, 1], [1, 1]], [0, 1, 1], "one label per row"),
        ([0, 1], [0, 1], "2-d"),
        ([["a", "b"]], [0], "not numbers"),
    ],
)
def test_bad_rows_at_fit(rows, labels, message):
    forest = DareForest(n_trees=2).fit(X, Y)
    before = structure(forest)
    with pytest.raises(ModelError, match=message):
        forest.fit(rows, labels)
    assert structure(forest) == before


@pytest.mark.parametrize(
    ("indices", "message"),
    [
        ([7], r"row 7 does not exist \(ids run from 0 to 4\)"),
        ([-1], "row -1 does not exist"),
        ([1, 1], "row 1 is listed twice"),
        ([2], "row 2 is already deleted"),
        ([0, 1, 3, 4], "deleting every remaining row"),
        ([], "non-empty list of integer ids"),
        ([1.5], "integer ids"),
    ],
)
def test_bad_deletions_name_the_row_and_change_nothing(indices, message):
    forest = DareForest(n_trees=3, k=None, random_depth=1).fit(X, Y).delete([2])
    before, state = structure(forest), forest._rng.bit_generator.state
    with pytest.raises(ModelError, match=message):
        forest.delete(indices)
    assert structure(forest) == before and forest._rng.bit_generator.state == state
    assert forest.remaining().tolist() == [0, 1, 3, 4]


@pytest.mark.parametrize(
    ("rows", "labels", "message"),
    [
        ([[1, 2, 3]], [0], "X has 3 features, but DareForest is expecting 2"),
        ([[1, np.nan]], [0], "must be finite"),
        ([[1, 2]], [3], "learned the classes"),
    ],
)
def test_bad_additions_change_nothing(rows, labels, message):
    forest = DareForest(n_trees=2).fit(X, Y)
    before = structure(forest)
    with pytest.raises(ModelError, match=message):
        forest.add(rows, labels)
    assert structure(forest) == before and forest.n_rows == 5


def test_predict_checks_the_width_and_nan():
    forest = DareForest(n_trees=2).fit(X, Y)
    with pytest.raises(ModelError, match="is expecting 2 features"):
        forest.predict_proba([[1, 2, 3]])
    with pytest.raises(ModelError, match="NaN"):
        forest.predict_proba([[1, np.nan]])


@pytest.mark.parametrize("call", ["delete", "add", "predict_proba", "to_ensemble", "save"])
def test_using_a_forest_before_fit_says_so(call, tmp_path):
    forest = DareForest()
    args = {"delete": ([0],), "add": (X, Y), "predict_proba": (X,), "save": (tmp_path / "f",)}
    with pytest.raises(ModelError, match=r"not fitted yet: call fit\(X, y\) first"):
        getattr(forest, call)(*args.get(call, ()))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n_trees": 0}, "n_trees must be an integer >= 1"),
        ({"k": 0}, "k must be"),
        ({"max_features": "cube"}, "max_features must be"),
        ({"max_features": 1.5}, "max_features as a fraction"),
        ({"random_state": -1}, "random_state must be"),
        ({"max_depth": 1.5}, "max_depth must be"),
        ({"min_samples_leaf": True}, "min_samples_leaf must be"),
    ],
)
def test_bad_parameters(params, message):
    forest = DareForest(**params)  # stored as given (scikit-learn), checked at fit
    with pytest.raises(ModelError, match=message):
        forest.fit([[0.0], [1.0]], [0, 1])
