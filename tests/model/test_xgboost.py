"""XGBoost import: parity with the library's raw margin, per objective and per way of loading."""

from __future__ import annotations

import json
import re

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


def test_a_few_rows_are_predicted_on_one_thread_and_alike_and_the_booster_is_left_alone():
    booster = train("binary:logistic")
    booster.set_param({"nthread": 2})
    config = booster.save_config()
    model = Ensemble.from_xgboost(booster)
    for rows in (X[:1], X[:5], X):  # one thread for the first two, the booster's for all
        assert np.array_equal(model.library.predict(rows), margin(booster)(rows))
    assert booster.save_config() == config


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
    with pytest.raises(
        ModelError, match=r"broken\.json: not an XGBoost model \(`learner` is missing"
    ):
        Ensemble.from_xgboost(path)
    with pytest.raises(ModelError, match="no such model file"):
        Ensemble.from_xgboost(tmp_path / "absent.json")


def test_pruned_trees_drop_their_deleted_nodes(tmp_path):
    # The exact method prunes with gamma and keeps the deleted nodes, unreachable, in the file.
    params = {"tree_method": "exact", "gamma": 5.0, "max_depth": 6, "seed": 0}
    booster = xgb.train(params, xgb.DMatrix(X, Y_REAL), 4)
    trees = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    deleted = sum(int(tree["tree_param"]["num_deleted"]) for tree in trees)
    stored = sum(int(tree["tree_param"]["num_nodes"]) for tree in trees)
    assert deleted > 0
    path = tmp_path / "pruned.ubj"
    booster.save_model(path)
    for model in (Ensemble.from_xgboost(booster), load_model(path)):
        assert model.n_nodes == stored - deleted
        assert_parity(model, margin(booster), probe_points(model, X))


def test_nodes_in_any_order_are_renumbered(tmp_path):
    # XGBoost numbers nodes as it likes; ours must have each child after its parent.
    booster = train("reg:squarederror", rounds=3)
    document = json.loads(booster.save_raw("json"))
    tree = document["learner"]["gradient_booster"]["model"]["trees"][0]
    n = len(tree["left_children"])
    new_id = np.concatenate([[0], np.arange(n - 1, 0, -1)])  # the root stays first
    old_id = np.argsort(new_id)
    for key in ("left_children", "right_children", "parents"):
        links = np.array(tree[key])
        tree[key] = [int(new_id[i]) if 0 <= i < n else int(i) for i in links[old_id]]
    for key, values in tree.items():
        if (
            isinstance(values, list)
            and len(values) == n
            and key
            not in (
                "left_children",
                "right_children",
                "parents",
            )
        ):
            tree[key] = [values[i] for i in old_id]
    path = tmp_path / "reordered.json"
    path.write_text(json.dumps(document))
    model = load_model(path)
    reloaded = xgb.Booster(model_file=str(path))
    assert np.array_equal(model.eval(X), Ensemble.from_xgboost(booster).eval(X))
    assert_parity(model, margin(reloaded), probe_points(model, X))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda tree: tree["parents"].__setitem__(2, 10**6), "node 2: `parents` names 1000000"),
        (lambda tree: tree["left_children"].__setitem__(0, 0), "tree 0, node 0 has two parents"),
        (lambda tree: tree["left_children"].__setitem__(0, 10**6), "left child 1000000 is neither"),
        (lambda tree: tree["right_children"].__setitem__(0, -1), "right child -1 is neither"),
        (lambda tree: tree["split_indices"].__setitem__(0, 9), "node 0 splits on feature 9 of 5"),
        (lambda tree: tree["split_type"].__setitem__(0, 1), "node 0 is a categorical split"),
        (lambda tree: tree["split_conditions"].pop(), "has 24 entries, not 25"),
        (lambda tree: tree["tree_param"].__setitem__("num_nodes", "x"), "`num_nodes` is `x`"),
        (lambda tree: tree.__setitem__("id", 3), "is not a tree with id 0"),
        (lambda tree: tree["left_children"].__setitem__(1, 1.5), "not a list of whole numbers"),
    ],
)
def test_corrupt_trees_are_refused_before_xgboost_reads_them(tmp_path, edit, message):
    document = json.loads(train("reg:squarederror", rounds=2).save_raw("json"))
    tree = document["learner"]["gradient_booster"]["model"]["trees"][0]
    assert len(tree["left_children"]) == 25
    edit(tree)
    path = tmp_path / "corrupt.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ModelError, match=re.escape(message)):
        load_model(path)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda learner: learner["learner_model_param"].update(num_feature="0"), "is 0, outside"),
        (
            lambda learner: learner["gradient_booster"]["model"]["tree_info"].__setitem__(0, 3),
            "tree_info names an output beyond 1",
        ),
        (lambda learner: learner["gradient_booster"]["model"]["tree_info"].append(0), "tree_info"),
        (
            lambda learner: learner["learner_model_param"].update(base_score="[x]"),
            "XGBoost cannot load this model",
        ),
        (lambda learner: learner.update(feature_names=["a"]), "1 feature_names for 5 features"),
        (lambda learner: learner["gradient_booster"]["model"]["trees"].clear(), "no trees"),
    ],
)
def test_corrupt_learners_are_refused(tmp_path, edit, message):
    document = json.loads(train("reg:squarederror", rounds=2).save_raw("json"))
    edit(document["learner"])
    path = tmp_path / "corrupt.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ModelError, match=re.escape(message)):
        load_model(path)


def test_files_xgboost_cannot_read_are_refused_first(tmp_path):
    # XGBoost quotes a bad file in its error message, and decoding that message failed.
    path = tmp_path / "model.ubj"
    path.write_bytes(b"\x80\x04\x95 a pickle")
    with pytest.raises(ModelError, match="not an XGBoost model file"):
        load_model(path, "xgboost")
    path = tmp_path / "model.json"
    path.write_bytes(b'{"lear\xffner": {}}')
    with pytest.raises(ModelError, match="byte 6 is not UTF-8 text"):
        load_model(path, "xgboost")
