"""LightGBM import: parity with ``predict(raw_score=True)`` per objective, files, refusals."""

from __future__ import annotations

import re

import numpy as np
import pytest

from veritas_dsl.model.parity import probe_points

from reference.points import assert_parity

lgb = pytest.importorskip("lightgbm", reason="LightGBM is an optional importer")

from veritas_dsl.model import Ensemble, ModelError, load_model  # noqa: E402

RNG = np.random.default_rng(5)
X = RNG.normal(size=(500, 4)) * np.array([1.0, 50.0, 0.02, 1.0])
Z = X / np.array([1.0, 50.0, 0.02, 1.0])
Y_BINARY = (Z[:, 0] - Z[:, 1] > 0).astype(int)
Y_CLASS = np.digitize(Z[:, 0] + Z[:, 2], [-0.5, 0.5])
Y_REAL = Z[:, 0] * 3 - Z[:, 1] + Z[:, 2] * Z[:, 3]

CASES = {
    "binary": (Y_BINARY, {}),
    "multiclass": (Y_CLASS, {"num_class": 3}),
    "multiclassova": (Y_CLASS, {"num_class": 3}),
    "regression": (Y_REAL, {}),
    "regression_l1": (Y_REAL, {}),
    "huber": (Y_REAL, {}),
    "poisson": (np.round(np.abs(Y_REAL)), {}),
    "quantile": (Y_REAL, {"alpha": 0.7}),
    "cross_entropy": ((Y_REAL > 0) * 0.8 + 0.1, {}),
}


def train(objective: str, **extra) -> lgb.Booster:
    y, params = CASES[objective]
    params = {"objective": objective, "num_leaves": 8, "verbose": -1, "seed": 3, **params, **extra}
    return lgb.train(params, lgb.Dataset(X, y), num_boost_round=10)


def lgb_thresholds(booster):
    found = []
    for info in booster.dump_model()["tree_info"]:
        stack = [info["tree_structure"]]
        while stack:
            node = stack.pop()
            if "split_feature" in node:
                found.append((node["split_feature"], node["threshold"]))
                stack += [node["left_child"], node["right_child"]]
    return found


@pytest.mark.parametrize("objective", sorted(CASES))
def test_parity_per_objective(objective):
    booster = train(objective)
    model = Ensemble.from_lightgbm(booster)
    points = probe_points(model, X, extra_thresholds=lgb_thresholds(booster))
    assert_parity(model, lambda p: booster.predict(p, raw_score=True), points)
    expected = {"binary": "binary", "multiclass": "multiclass", "multiclassova": "multiclass"}
    assert model.task == expected.get(objective, "regression")


def test_random_forest_mode_is_the_mean_of_its_trees():
    booster = train("regression", boosting="rf", bagging_freq=1, bagging_fraction=0.6)
    model = Ensemble.from_lightgbm(booster)
    assert_parity(model, booster.predict, probe_points(model, X))  # predict averages; raw sums
    assert np.allclose(
        model.library.predict(X.astype(np.float32)), booster.predict(X.astype(np.float32))
    )


def test_sklearn_wrapper_and_text_file(tmp_path):
    fitted = lgb.LGBMClassifier(n_estimators=6, num_leaves=6, verbose=-1).fit(X, Y_CLASS)
    model = Ensemble.from_lightgbm(fitted)
    assert np.array_equal(model.predict_class(X), fitted.predict(X))
    path = tmp_path / "model.txt"
    fitted.booster_.save_model(path)
    assert np.array_equal(load_model(path).eval(X), model.eval(X))


def test_categorical_split_is_refused():
    codes = RNG.integers(0, 4, len(X))
    data = lgb.Dataset(
        np.column_stack([codes, X[:, 0]]), (codes == 2) + (X[:, 0] > 0), categorical_feature=[0]
    )
    booster = lgb.train(
        {"objective": "regression", "verbose": -1, "min_data_per_group": 5, "cat_smooth": 1},
        data,
        3,
    )
    with pytest.raises(ModelError, match="categorical"):
        Ensemble.from_lightgbm(booster)


def test_linear_tree_is_refused():
    booster = lgb.train(
        {"objective": "regression", "linear_tree": True, "verbose": -1}, lgb.Dataset(X, Y_REAL), 2
    )
    with pytest.raises(ModelError, match="linear_tree"):
        Ensemble.from_lightgbm(booster)


def test_zero_as_missing_split_that_moves_zero_is_refused():
    data = X.copy()
    data[RNG.random(data.shape) < 0.3] = 0.0
    target = data[:, 0] * 3 + (data[:, 1] == 0)
    params = {"objective": "regression", "zero_as_missing": True, "verbose": -1, "num_leaves": 8}
    booster = lgb.train(params, lgb.Dataset(data, target), 5)
    with pytest.raises(ModelError, match="sends zero"):
        Ensemble.from_lightgbm(booster)


def test_inputs_near_zero_are_read_as_zero_like_lightgbm():
    # A feature of -1, 0 and 1 makes LightGBM split at -kZeroThreshold and +kZeroThreshold, and its
    # predictor reads any |x| <= kZeroThreshold as 0; points on both thresholds must agree.
    values = RNG.choice([-1.0, 0.0, 1.0], size=600)
    data = np.column_stack([values, RNG.normal(size=600)])
    target = (values == 0) * 2.0 + (values > 0) + 0.1 * data[:, 1]
    booster = lgb.train(
        {"objective": "regression", "verbose": -1, "num_leaves": 4}, lgb.Dataset(data, target), 5
    )
    thresholds = {t for f, t in lgb_thresholds(booster) if f == 0}
    assert any(t < 0 for t in thresholds) and any(t > 0 for t in thresholds), thresholds
    model = Ensemble.from_lightgbm(booster)
    tiny = np.array([[v, 0.0] for v in (-1e-35, -1e-36, 0.0, 1e-36, 1e-35, -2e-35, 2e-35)])
    points = probe_points(model, data, extra_thresholds=lgb_thresholds(booster))
    points["tiny"] = tiny
    assert_parity(model, lambda p: booster.predict(p, raw_score=True), points)


@pytest.mark.parametrize("objective", ["binary", "multiclass", "regression"])
def test_the_rewritten_text_predicts_like_the_original(tmp_path, objective):
    # LightGBM reads only our rewrite of a model file, never the file itself.
    booster = train(objective)
    path = tmp_path / "model.txt"
    booster.save_model(path)
    model = load_model(path)
    points = probe_points(model, X, extra_thresholds=lgb_thresholds(booster))
    assert_parity(model, lambda p: booster.predict(p, raw_score=True), points)
    for P in points.values():
        assert np.array_equal(model.library.predict(P), booster.predict(P, raw_score=True))


def test_random_forest_file_is_the_mean_of_its_trees(tmp_path):
    booster = train("regression", boosting="rf", bagging_freq=1, bagging_fraction=0.6)
    path = tmp_path / "model.txt"
    booster.save_model(path)
    model = load_model(path)
    assert_parity(model, booster.predict, probe_points(model, X))


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("num_leaves=8", "num_leaves=x", "num_leaves `x` is not a whole number"),
        ("num_leaves=8", "num_leaves=-3", "num_leaves -3 is outside"),
        ("left_child=1 ", "left_child=9 ", "tree 0, split 0: left_child 9 is outside -8..6"),
        ("left_child=1 ", "left_child=", "left_child has 6 entries, not 7"),
        ("left_child=1 ", "left_child=0 ", "tree 0, node 0 has two parents"),
        ("split_feature=", "split_feature=7 ", "split_feature has 8 entries"),
        (r"threshold=\S+", "threshold=1e999", "entry 0 of threshold is not a finite number"),
        (r"threshold=\S+", "threshold=nan", "entry 0 of threshold, `nan`, is not a number"),
        ("decision_type=2", "decision_type=1", "split 0 is categorical"),
        ("max_feature_idx=3", "max_feature_idx=4", "4 feature_names for max_feature_idx 4"),
        ("num_class=1", "num_klass=1", "not a LightGBM text model (it has no `num_class=` line)"),
        ("Tree=1", "Tree=7", "expected `Tree=1`, found `Tree=7`"),
    ],
)
def test_corrupt_text_is_refused_before_lightgbm_reads_it(tmp_path, old, new, message):
    text = train("regression").model_to_string()
    assert re.search(old, text)
    path = tmp_path / "model.txt"
    path.write_text(re.sub(old, new, text, count=1))
    with pytest.raises(ModelError, match=re.escape(message)):
        load_model(path)


def test_text_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "model.txt"
    path.write_bytes(train("regression").model_to_string().encode() + b"\xff")
    with pytest.raises(ModelError, match="is not UTF-8 text"):
        load_model(path)
