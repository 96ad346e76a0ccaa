"""XGBoost JSON tree dumps: the same Ensemble as the JSON model file, exact float32 parsing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

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
    first = json.loads(dump[0])["split"]  # the root of the first tree
    with pytest.raises(ModelError, match=rf"splits on feature `{first}`; give the feature names"):
        Ensemble.from_xgboost_dump(dump)
    named = Ensemble.from_xgboost_dump(dump, feature_names=["age", "income"])
    assert named.feature_names == ("age", "income")


def test_the_unknown_feature_named_is_the_same_on_every_run(tmp_path):
    # The names were kept in a set: which one the message named changed with the hash seed.
    path = tmp_path / "dump.json"
    path.write_text(json.dumps([json.loads(named_tree(f"c{i}")) for i in range(12)]))
    code = (
        "from veritas_dsl.model import Ensemble, ModelError\n"
        "try:\n"
        f"    Ensemble.from_xgboost_dump({str(path)!r})\n"
        "except ModelError as error:\n"
        "    print(error)\n"
    )
    messages = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            check=True,
        ).stdout
        for seed in range(3)
    }
    assert len(messages) == 1 and "splits on feature `c0`" in messages.pop()


def test_integer_split_ids_name_features(tmp_path):
    # The treeVerification and RobustTrees dumps write `"split": 7` for feature f7.
    booster = xgb.train({"max_depth": 3, "seed": 0}, xgb.DMatrix(X, Z[:, 0] - Z[:, 4]), 6)
    texts = booster.get_dump(dump_format="json")
    by_id = [re.sub(r'"split": "f(\d+)"', r'"split": \1', text) for text in texts]
    assert '"split": 4' in "".join(by_id)
    path = tmp_path / "dump.json"
    path.write_text("[" + ",".join(by_id) + "]")
    model = load_model(path, options={"features": 6})
    reference = Ensemble.from_xgboost_dump(texts, n_features=6)
    assert model.feature_names == tuple(f"f{i}" for i in range(6))
    for P in probe_points(model, X).values():
        assert np.array_equal(model.eval(P), reference.eval(P))


def named_tree(name: str) -> str:
    return tree("0.5").replace('"split": "f0"', f'"split": "{name}"')


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
        # `yes` leads back to the root: flattening looped forever, filling memory.
        (
            '[{"nodeid": 0, "split": "f0", "split_condition": 1, "yes": 0, "no": 1, "children": [{"nodeid": 1, "leaf": 1}]}]',
            "node 0 is reached twice",
        ),
        (
            '[{"nodeid": 0, "split": "f0", "split_condition": 1, "yes": 1, "no": 1, "children": [{"nodeid": 1, "leaf": 1}]}]',
            "node 1 is reached twice",
        ),
        # A missing or odd field was a KeyError or TypeError: an internal error.
        (
            '[{"nodeid": 0, "split": "f0", "split_condition": 1, "yes": 1, "children": [{"nodeid": 1, "leaf": 1}]}]',
            "`no` is `None`, not a node id",
        ),
        (
            '[{"nodeid": 0, "split": "f0", "split_condition": 1, "yes": 1, "no": 2, "children": {}}]',
            "`children` is not a list",
        ),
        (
            '[{"nodeid": 0, "split": "f0", "split_condition": 1, "yes": 1, "no": 2, "children": [{"nodeid": 1, "leaf": 1}, {"nodeid": 1, "leaf": 0}]}]',
            "two nodes have nodeid 1",
        ),
        ('[{"nodeid": 0, "leaf": [1]}]', "`leaf` is `['1']`, not a number"),
        ('[{"nodeid": 0, "leaf": "x"}]', "could not convert"),
        ('[{"nodeid": 0, "leaf": 1e39}]', "has a leaf value that is not finite"),
        ('[{"nodeid": 1.5, "leaf": 1}]', "not a node id"),
        ("[1]", "JSON array of trees"),
        (b'[{"nodeid": 0, "leaf": 1}]\xff', "byte 26 is not UTF-8 text"),
        ("[" * 100_000, "not a JSON tree dump"),
    ],
)
def test_malformed_dumps(tmp_path, document, message):
    path = tmp_path / "dump.json"
    path.write_bytes(document if isinstance(document, bytes) else document.encode())
    with pytest.raises(ModelError, match=re.escape(message)):
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
