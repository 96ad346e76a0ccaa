"""XGBoost import: parity with the library's raw margin, per objective and per way of loading."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xgboost as xgb

from veritas_dsl.model import Ensemble, ModelError, load_model
from veritas_dsl.model.parity import probe_points

from reference.points import assert_parity

RNG = np.random.default_rng(7)
X = RNG.normal(size=(400, 5)).astype(np.float32) * np.array([1, 10, 0.1, 1000, 1], dtype=np.float32)
X[:, 4] = np.round(X[:, 4])  # an integer-valued feature, where thresholds sit at .5 steps
Z = X / np.array([1, 10, 0.1, 1000, 1], dtype=np.float32)
Y_BINARY = (Z[:, 0] + Z[:, 1] - Z[:, 2] > 0).astype(int)
Y_CLASS = np.digitize(Z[:, 0] + 0.5 * Z[:, 3], [-0.5, 0.5])
Y_REAL = 3 * Z[:, 0] - 2 * Z[:, 1] * Z[:, 2] + Z[:, 4]

OBJECTIVES = {
    "binary:logistic": (Y_BINARY, {}),
    "binary:logitraw": (Y_BINARY, {}),
    "binary:hinge": (Y_BINARY, {}),
    "reg:logistic": ((Y_REAL > 0).astype(float) * 0.8 + 0.1, {}),
    "reg:squarederror": (Y_REAL, {}),
    "reg:squaredlogerror": (np.abs(Y_REAL), {}),
    "reg:absoluteerror": (Y_REAL, {}),
    "reg:pseudohubererror": (Y_REAL, {}),
    "reg:quantileerror": (Y_REAL, {"quantile_alpha": 0.3}),
    "count:poisson": (np.round(np.abs(Y_REAL)), {}),
    "reg:gamma": (np.abs(Y_REAL) + 0.1, {}),
    "reg:tweedie": (np.abs(Y_REAL), {}),
    "survival:cox": (np.abs(Y_REAL) + 0.1, {}),
    "multi:softprob": (Y_CLASS, {"num_class": 3}),
    "multi:softmax": (Y_CLASS, {"num_class": 3}),
    "rank:pairwise": (Y_CLASS, {}),
}


def train(objective: str, rounds: int = 12, depth: int = 4, **extra) -> xgb.Booster:
    y, params = OBJECTIVES[objective]
    data = xgb.DMatrix(X, y)
    if objective.startswith("rank:"):
        data.set_group([100] * 4)
    params = {"objective": objective, "max_depth": depth, "eta": 0.3, "seed": 1, **params, **extra}
    return xgb.train(params, data, num_boost_round=rounds)


def margin(booster: xgb.Booster):
    return lambda points: booster.predict(xgb.DMatrix(points), output_margin=True)


@pytest.mark.parametrize("objective", sorted(OBJECTIVES))
def test_parity_per_objective(objective):
    booster = train(objective)
    model = Ensemble.from_xgboost(booster)
    assert_parity(model, margin(booster), probe_points(model, X))
    expected_task = {"binary": "binary", "multi": "multiclass"}.get(
        objective.split(":")[0], "regression"
    )
    assert model.task == expected_task


def test_binary_classes_match_predict():
    booster = train("binary:logistic")
    model = Ensemble.from_xgboost(booster)
    points = probe_points(model, X)["thresholds"]
    assert np.array_equal(model.predict_class(points), (booster.predict(xgb.DMatrix(points)) > 0.5))


def test_multiclass_classes_match_softmax():
    booster = train("multi:softmax")
    model = Ensemble.from_xgboost(booster)
    points = probe_points(model, X)["thresholds"]
    assert np.array_equal(model.predict_class(points), booster.predict(xgb.DMatrix(points)))


@pytest.mark.parametrize("suffix", [".json", ".ubj"])
def test_model_files_load_like_the_booster(tmp_path, suffix):
    booster = train("binary:logistic")
    path = tmp_path / f"model{suffix}"
    booster.save_model(path)
    from_file = load_model(path)
    direct = Ensemble.from_xgboost(booster)
    assert np.array_equal(from_file.threshold, direct.threshold)
    assert np.array_equal(from_file.value, direct.value)
    assert np.array_equal(from_file.base_score, direct.base_score)


def test_feature_names_come_from_the_model():
    names = ["a", "b", "c", "d", "e"]
    booster = xgb.train({"max_depth": 2}, xgb.DMatrix(X, Y_REAL, feature_names=names), 3)
    assert Ensemble.from_xgboost(booster).feature_names == tuple(names)
    assert train("reg:squarederror").feature_names is None
    assert Ensemble.from_xgboost(train("reg:squarederror")).feature_names == (
        "f0",
        "f1",
        "f2",
        "f3",
        "f4",
    )


def test_sklearn_wrappers():
    classifier = xgb.XGBClassifier(n_estimators=8, max_depth=3).fit(X, Y_BINARY)
    model = Ensemble.from_xgboost(classifier)
    assert model.task == "binary"
    points = probe_points(model, X)
    assert_parity(model, lambda p: classifier.predict(p, output_margin=True), points)
    assert np.array_equal(
        model.predict_class(points["thresholds"]), classifier.predict(points["thresholds"])
    )

    regressor = xgb.XGBRegressor(n_estimators=8, max_depth=3).fit(X, Y_REAL)
    model = Ensemble.from_xgboost(regressor)
    assert_parity(model, lambda p: regressor.predict(p, output_margin=True), probe_points(model, X))


def test_early_stopping_uses_best_iteration_like_predict():
    model = xgb.XGBRegressor(
        n_estimators=200, max_depth=3, early_stopping_rounds=3, learning_rate=0.9
    )
    model.fit(X[:300], Y_REAL[:300], eval_set=[(X[300:], Y_REAL[300:])], verbose=False)
    assert model.best_iteration + 1 < 200
    ensemble = Ensemble.from_xgboost(model)
    assert ensemble.n_trees == model.best_iteration + 1
    assert_parity(ensemble, lambda points: model.predict(points, output_margin=True), {"rows": X})
    assert np.allclose(ensemble.library.predict(X), model.predict(X, output_margin=True))


def test_library_model_predicts_the_raw_margin():
    booster = train("multi:softprob")
    model = Ensemble.from_xgboost(booster)
    assert np.array_equal(model.library.predict(X), margin(booster)(X).reshape(len(X), 3))


@pytest.mark.parametrize(
    "params, message",
    [
        ({"booster": "dart"}, "'dart'"),
        ({"booster": "gblinear", "max_depth": None}, "'gblinear'"),
        ({"objective": "survival:aft"}, "survival:aft"),
        (
            {
                "multi_strategy": "multi_output_tree",
                "tree_method": "hist",
                "objective": "reg:squarederror",
            },
            None,
        ),
    ],
)
def test_unsupported_models_are_refused(params, message):
    y = Y_REAL
    if params.get("multi_strategy"):
        y = np.column_stack([Y_REAL, -Y_REAL])
        message = "multi-target"
    data = xgb.DMatrix(X, y)
    if params.get("objective") == "survival:aft":
        data.set_float_info("label_lower_bound", np.abs(Y_REAL) + 1)
        data.set_float_info("label_upper_bound", np.abs(Y_REAL) + 2)
    booster = xgb.train(
        {"objective": "reg:squarederror", "max_depth": 2, **params}, data, num_boost_round=2
    )
    with pytest.raises(ModelError, match=message):
        Ensemble.from_xgboost(booster)


def test_categorical_split_is_refused():
    codes = RNG.integers(0, 3, 400).astype(np.float32)
    data = xgb.DMatrix(
        np.column_stack([codes, X[:, 0]]),
        (codes == 1) + (X[:, 0] > 0),
        feature_types=["c", "q"],
        enable_categorical=True,
    )
    booster = xgb.train({"tree_method": "hist", "max_depth": 2, "max_cat_to_onehot": 1}, data, 3)
    with pytest.raises(ModelError, match="categorical split"):
        Ensemble.from_xgboost(booster)


def test_missing_other_than_nan_is_refused():
    model = xgb.XGBClassifier(n_estimators=2, max_depth=2, missing=0.0).fit(X, Y_BINARY)
    with pytest.raises(ModelError, match="missing"):
        Ensemble.from_xgboost(model)


def test_bad_files_are_clear_errors(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ModelError, match=r"broken\.json: XGBoost cannot load"):
        Ensemble.from_xgboost(path)
    with pytest.raises(ModelError, match="no such model file"):
        Ensemble.from_xgboost(tmp_path / "absent.json")
