"""scikit-learn HistGradientBoosting import: parity with decision_function and the raw predict."""

from __future__ import annotations

import numpy as np
import pytest

from veritas_dsl.model.parity import probe_points

from reference.points import assert_parity

pytest.importorskip("sklearn", reason="scikit-learn is an optional importer")
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

from veritas_dsl.model import Ensemble, ModelError, load_model

from reference.closest import assert_closest_agrees

RNG = np.random.default_rng(19)
# float64 data at very different scales: HGB's bin thresholds are float64 midpoints.
X = RNG.normal(size=(300, 4)) * np.array([1.0, 100.0, 0.01, 1.0])
X[:, 3] = np.round(X[:, 3] * 3)
Z = X / np.array([1.0, 100.0, 0.01, 1.0])
TARGETS = {
    "binary": (Z[:, 0] + Z[:, 1] > 0).astype(int),
    "multiclass": np.digitize(Z[:, 0] - Z[:, 2], [-0.6, 0.6]),
    "regression": Z[:, 0] * 2 + Z[:, 1] * Z[:, 2] + Z[:, 3],
}


def hgb_thresholds(estimator):
    return [
        (int(n["feature_idx"]), float(n["num_threshold"]))
        for iteration in estimator._predictors
        for predictor in iteration
        for n in predictor.nodes
        if not n["is_leaf"] and np.isfinite(n["num_threshold"])
    ]


def fit(task: str, **options):
    if task == "regression":
        loss = options.pop("loss", "squared_error")
        y = TARGETS[task] if loss != "poisson" else np.exp(TARGETS[task] / 4)
        return HistGradientBoostingRegressor(
            max_iter=6, max_leaf_nodes=8, loss=loss, **options
        ).fit(X, y)
    return HistGradientBoostingClassifier(max_iter=6, max_leaf_nodes=8, **options).fit(
        X, TARGETS[task]
    )


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_classifier_parity_with_decision_function(task):
    fitted = fit(task)
    model = Ensemble.from_sklearn(fitted)
    assert model.task == task
    assert model.n_trees == 6 * (3 if task == "multiclass" else 1)
    points = probe_points(model, X, extra_thresholds=hgb_thresholds(fitted))
    assert_parity(model, fitted.decision_function, points)
    for name, P in points.items():
        assert np.array_equal(model.predict_class(P), fitted.predict(P)), name


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error", "poisson"])
def test_regressor_parity_with_the_raw_prediction(loss):
    fitted = fit("regression", loss=loss)
    model = Ensemble.from_sklearn(fitted)
    assert model.task == "regression" and loss in model.source
    points = probe_points(model, X, extra_thresholds=hgb_thresholds(fitted))
    raw = fitted.predict if loss != "poisson" else lambda P: np.log(fitted.predict(P))
    assert_parity(model, raw, points)


def test_thresholds_are_float64_midpoints_compared_exactly():
    # Most HGB thresholds are not float32 values: a float32 input on either side of one must go
    # the way scikit-learn's float64 comparison sends it.
    fitted = fit("regression")
    thresholds = np.array([t for _, t in hgb_thresholds(fitted)])
    assert np.mean(thresholds.astype(np.float32).astype(np.float64) != thresholds) > 0.3
    model = Ensemble.from_sklearn(fitted)
    points = probe_points(model, np.zeros((1, 4)), extra_thresholds=hgb_thresholds(fitted))
    assert_parity(model, fitted.predict, points, tolerance=0.0)


def test_a_split_on_missing_values_sends_every_number_left():
    rng = np.random.default_rng(1)
    data = rng.normal(size=(400, 2))
    data[rng.random(400) < 0.3, 0] = np.nan
    fitted = HistGradientBoostingRegressor(max_iter=3, max_depth=2).fit(
        data, np.isnan(data[:, 0]) * 2.0 + 0.1 * data[:, 1]
    )
    nodes = [n for it in fitted._predictors for p in it for n in p.nodes if not n["is_leaf"]]
    assert any(n["num_threshold"] == np.inf for n in nodes)
    model = Ensemble.from_sklearn(fitted)
    assert model.n_nodes < sum(len(p.nodes) for it in fitted._predictors for p in it)
    numbers = np.nan_to_num(data)
    points = probe_points(model, numbers)
    points["extremes"] = np.array([[np.inf, 0.0], [-np.inf, 0.0], [3.4e38, 1.0]])
    assert_parity(model, fitted.predict, points)


def test_categorical_features_are_refused_with_their_names():
    data = X.copy()
    data[:, 3] = np.abs(data[:, 3])
    fitted = HistGradientBoostingClassifier(max_iter=3, categorical_features=[3]).fit(
        data, TARGETS["binary"]
    )
    with pytest.raises(ModelError, match="treats feature\\(s\\) f3 as categorical"):
        Ensemble.from_sklearn(fitted)


def test_a_categorical_split_is_refused_with_its_tree_and_node():
    data = X.copy()
    data[:, 3] = np.abs(data[:, 3])
    fitted = HistGradientBoostingClassifier(max_iter=3, categorical_features=[3]).fit(
        data, (data[:, 3] % 2 == 0).astype(int)
    )
    fitted.is_categorical_ = None  # as a doctored file could claim: the nodes must still tell
    with pytest.raises(
        ModelError, match=r"tree 0 \(iteration 0, output 0\), node 0 splits feature 0 by category"
    ):
        Ensemble.from_sklearn(fitted)


def test_an_unfitted_estimator_is_refused():
    with pytest.raises(ModelError, match="HistGradientBoostingRegressor is not a fitted"):
        Ensemble.from_sklearn(HistGradientBoostingRegressor())


def test_skops_file_loads_and_keeps_the_library_model(tmp_path):
    skops_io = pytest.importorskip("skops.io", reason="skops is an optional importer")
    fitted = fit("multiclass")
    path = tmp_path / "model.skops"
    skops_io.dump(fitted, path)
    model = load_model(path)
    assert np.array_equal(model.eval(X), Ensemble.from_sklearn(fitted).eval(X))
    assert np.array_equal(
        model.library.predict(X.astype(np.float32)), fitted.decision_function(X.astype(np.float32))
    )


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_closest_example_agrees_across_engines_and_flips_the_class(tmp_path, task):
    skops_io = pytest.importorskip("skops.io", reason="skops is an optional importer")
    fitted = HistGradientBoostingClassifier(max_iter=3, max_leaf_nodes=4).fit(
        X[:, :3], TARGETS[task]
    )
    skops_io.dump(fitted, tmp_path / "m.skops")
    assert_closest_agrees(
        tmp_path, 'model m = sklearn "m.skops"', ("f0", "f1", "f2"), X[:3, :3], fitted.predict
    )
