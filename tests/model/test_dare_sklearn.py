"""DareForest as a scikit-learn classifier: scikit-learn's own estimator checks, clone, search."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from veritas_dsl.unlearning import DareForest


@parametrize_with_checks([DareForest()])  # every check, none expected to fail
def test_scikit_learn_checks(estimator, check):
    check(estimator)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 4)).astype(np.float32)
    return X, np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")


def test_clone_grid_search_and_cross_validation_run():
    X, y = _data()
    forest = DareForest(n_trees=3, max_depth=None, max_features=0.5, random_state=None)
    assert clone(forest).get_params() == forest.get_params()
    search = GridSearchCV(DareForest(n_trees=2), {"n_trees": [2, 3], "max_depth": [2, None]}, cv=3)
    search.fit(X, y)
    assert search.best_score_ > 0.6
    assert len(cross_val_score(DareForest(n_trees=3, max_depth=3), X, y, cv=3)) == 3


def test_data_frame_names_reach_the_export_and_labels_come_back():
    pandas = pytest.importorskip("pandas")
    X, y = _data()
    frame = pandas.DataFrame(X, columns=["age", "income", "debt", "tenure"])
    forest = DareForest(n_trees=3, max_depth=3).fit(frame, y)
    assert forest.to_ensemble().feature_names == ("age", "income", "debt", "tenure")
    assert set(forest.predict(frame)) <= {"no", "yes"}
    assert forest.training_rows()[1].tolist() == y.tolist()


def test_an_int_seed_gives_the_forest_it_gave_before_a_generator_fits():
    X, y = _data()
    y01 = (y == "yes").astype(int)
    a = DareForest(n_trees=3, max_depth=3, random_state=7).fit(X, y01)
    b = DareForest(n_trees=3, max_depth=3, random_state=np.random.default_rng(7)).fit(X, y01)
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
