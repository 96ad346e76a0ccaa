"""XGBoost JSON tree dumps: the same Ensemble as the JSON model file, exact float32 parsing."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xgboost as xgb

from veritas_dsl.model import Ensemble, ModelError, load_model
from veritas_dsl.model.parity import probe_points

from reference.points import assert_parity

RNG = np.random.default_rng(2)
X = (RNG.normal(size=(400, 6)) * np.array([1, 1e3, 1e-3, 1, 5, 1])).astype(np.float32)
Z = X / np.array([1, 1e3, 1e-3, 1, 5, 1], dtype=np.float32)
CASES = {
    "binary:logistic": ((Z[:, 0] + Z[:, 1] > 0).astype(int), {}),
    "reg:squarederror": (Z[:, 0] * 2 - Z[:, 2] * Z[:, 3], {}),
    "multi:softprob": (np.digitize(Z[:, 0] - Z[:, 4], [-0.5, 0.5]), {"num_class": 3}),
}


@pytest.mark.parametrize("objective", sorted(CASES))
@pytest.mark.parametrize("as_file", [True, False])
def test_dump_equals_the_model_file(tmp_path, objective, as_file):
    y, extra = CASES[objective]
    booster = xgb.train(
        {"objective": objective, "max_depth": 4, "seed": 0, **extra}, xgb.DMatrix(X, y), 15
    )
    booster.save_model(tmp_path / "model.json")
    model = load_model(tmp_path / "model.json")
    n_classes = extra.get("num_class", 1)
    if as_file:
        booster.dump_model(tmp_path / "dump.json", dump_format="json")
        source = tmp_path / "dump.json"
    else:
        source = booster.get_dump(dump_format="json")
    dumped = Ensemble.from_xgboost_dump(
        source, base_score=model.base_score, n_classes=n_classes, n_features=6
    )
    points = probe_points(model, X)
    for P in points.values():
        assert np.array_equal(dumped.eval(P), model.eval(P))
    # and both match XGBoost's own margin, on every threshold and beside it
    assert_parity(dumped, lambda P: booster.predict(xgb.DMatrix(P), output_margin=True), points)


def test_named_features_need_names(tmp_path):
    data = xgb.DMatrix(X[:, :2], Z[:, 0], feature_names=["age", "income"])
    booster = xgb.train({"max_depth": 2}, data, 3)
    dump = booster.get_dump(dump_format="json")
    with pytest.raises(
        ModelError, match=r"splits on feature `(age|income)`; give the feature names"
    ):
        Ensemble.from_xgboost_dump(dump)
    named = Ensemble.from_xgboost_dump(dump, feature_names=["age", "income"])
    assert named.feature_names == ("age", "income")


def tree(condition: str) -> str:
    return json.dumps(
        {
            "nodeid": 0,
            "split": "f0",
            "split_condition": 0,
            "yes": 1,
            "no": 2,
            "missing": 1,
            "children": [{"nodeid": 1, "leaf": 0.5}, {"nodeid": 2, "leaf": -0.5}],
        }
    ).replace('"split_condition": 0', f'"split_condition": {condition}')


def test_thresholds_round_once_to_float32():
    # This decimal lies just above the midpoint of 1 and the next float32, and its float64 is the
    # midpoint itself: rounding twice gives 1, rounding once (as XGBoost does) the next float32.
    text = "1.00000005960464477539062500000000000000001"
    model = Ensemble.from_xgboost_dump([tree(text)])
    assert model.threshold[0] == np.nextafter(np.float32(1), np.float32(2))
    assert float(np.float32(float(text))) == 1.0


@pytest.mark.parametrize(
    "document, message",
    [
        ("{}", "JSON array of trees"),
        ("[not json", "not a JSON tree dump"),
        (
            '[{"nodeid": 0, "split": "f0", "split_condition": 1, "yes": 1, "no": 5, "children": [{"nodeid": 1, "leaf": 1}]}]',
            "refers to node 5",
        ),
        (
            '[{"nodeid": 0, "split": "f0", "yes": 1, "no": 2, "children": [{"nodeid": 1, "leaf": 1}, {"nodeid": 2, "leaf": 0}]}]',
            "no split_condition",
        ),
        ("[]", "no trees"),
    ],
)
def test_malformed_dumps(tmp_path, document, message):
    path = tmp_path / "dump.json"
    path.write_text(document)
    with pytest.raises(ModelError, match=message):
        Ensemble.from_xgboost_dump(path)


def test_feature_count_must_cover_the_splits():
    with pytest.raises(ModelError, match="beyond 0 features"):
        Ensemble.from_xgboost_dump([tree("0.5")], n_features=0)
    with pytest.raises(ModelError, match="more than 1,000,000"):
        Ensemble.from_xgboost_dump([tree("0.5")], n_features=10**30)


def test_format_detection_and_options(tmp_path):
    path = tmp_path / "dump.json"
    path.write_text("[" + tree("0.5") + "]")
    model = load_model(path, options={"base_score": 0.25, "features": 3})
    assert model.n_features == 3 and model.eval(np.zeros((1, 3)))[0] == 0.75
