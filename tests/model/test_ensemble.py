"""The Ensemble arrays: checks on construction, evaluation, reindexing and the JSON round trip."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from veritas_dsl.model import Ensemble, ModelError
from veritas_dsl.model.ensemble import classes_of, le_threshold_as_lt

from conftest import build


def test_eval_follows_x_less_than_threshold(two_trees):
    X = np.array([[0.0, 0.0], [0.99, 0.5], [1.0, 0.5], [1.5, 1.0], [2.0, 0.0], [5.0, 2.0]])
    assert two_trees.eval(X).tolist() == [1.5, 1.5, 3.5, 2.0, 7.0, -3.0]


def test_shape_facts(two_trees):
    assert (two_trees.n_trees, two_trees.n_nodes, two_trees.n_outputs) == (2, 10, 1)
    assert two_trees.tree_depths().tolist() == [2, 2]
    assert int(two_trees.is_leaf().sum()) == 6


def test_multi_output_eval_and_classes():
    model = build(
        [(0, 0.0, [1.0, 0.0, 0.0], [0.0, 2.0, 2.0])], 1, base=[0.0, 0.5, 0.0], task="multiclass"
    )
    margins = model.eval(np.array([[-1.0], [1.0]]))
    assert margins.tolist() == [[1.0, 0.5, 0.0], [0.0, 2.5, 2.0]]
    assert model.predict_class(np.array([[-1.0], [1.0]])).tolist() == [0, 1]


def test_binary_class_needs_strictly_above_threshold():
    model = build([(0, 0.0, -1.0, 1.0)], 1, task="binary")
    assert classes_of(np.array([-0.1, 0.0, 0.1]), model).tolist() == [0, 0, 1]


def test_nan_input_is_refused(two_trees):
    with pytest.raises(ModelError, match="row 1, feature 0 is NaN"):
        two_trees.eval(np.array([[0.0, 0.0], [np.nan, 0.0]]))


def test_wrong_width_is_refused(two_trees):
    with pytest.raises(ModelError, match=r"shape \(n, 2\)"):
        two_trees.eval(np.zeros((3, 3)))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"left": [1, 2, -1]}, "a leaf has children"),
        ({"left": [0, -1, -1]}, "forward"),
        ({"tree_offsets": [0, 2]}, "tree_offsets"),
        ({"feature": [5, -1, -1]}, "beyond feature_names"),
        ({"threshold": [np.nan, 0, 0]}, "NaN"),
        ({"value": [[0.0], [np.inf], [0.0]]}, "not finite"),
        ({"base_score": [0.0, 0.0]}, "base_score"),
    ],
)
def test_malformed_arrays_are_refused(change, message):
    arrays = dict(
        feature=[0, -1, -1],
        threshold=[0.5, 0, 0],
        left=[1, -1, -1],
        right=[2, -1, -1],
        value=[[0.0], [1.0], [2.0]],
        tree_offsets=[0, 3],
        base_score=[0.0],
        feature_names=("a",),
    )
    arrays.update(change)
    with pytest.raises(ModelError, match=message):
        Ensemble(**arrays)


def test_arrays_are_read_only(two_trees):
    with pytest.raises(ValueError):
        two_trees.threshold[0] = 3.0


def test_save_load_is_exact(tmp_path, two_trees):
    odd = build(
        [
            (
                0,
                float(np.float32(0.1)),
                1 / 3,
                (1, float(np.nextafter(np.float32(2), 0)), 1e-300, -7.5),
            )
        ],
        2,
    )
    for model in (two_trees, odd):
        path = tmp_path / "model.json"
        model.save(path)
        loaded = Ensemble.load(path)
        for name in (
            "feature",
            "threshold",
            "left",
            "right",
            "value",
            "tree_offsets",
            "base_score",
        ):
            assert np.array_equal(getattr(loaded, name), getattr(model, name)), name
        assert loaded.feature_names == model.feature_names
        assert not (tmp_path / "model.json.partial").exists()


def test_load_rejects_other_files(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"format": "something-else"}')
    with pytest.raises(ModelError, match="not a veritas-dsl-ensemble file"):
        Ensemble.load(path)
    path.write_text("{not json")
    with pytest.raises(ModelError, match="cannot read"):
        Ensemble.load(path)


def test_reindex_moves_features_and_keeps_outputs(two_trees):
    wide = two_trees.reindex(["z", "x1", "x0"])
    X = np.random.default_rng(0).uniform(-1, 4, size=(200, 2)).astype(np.float32)
    wide_X = np.column_stack([np.zeros(len(X)), X[:, 1], X[:, 0]])
    assert np.array_equal(wide.eval(wide_X), two_trees.eval(X))
    with pytest.raises(ModelError, match="x0"):
        two_trees.reindex(["x1"])


@given(
    t=st.floats(allow_nan=False, allow_infinity=False, width=64, min_value=-1e30, max_value=1e30),
    steps=st.integers(-3, 3),
)
def test_le_threshold_as_lt_matches_float64_comparison(t, steps):
    s = le_threshold_as_lt(np.array([t]))[0]
    x = np.float32(t)
    for _ in range(abs(steps)):
        x = np.nextafter(x, np.float32(np.inf if steps > 0 else -np.inf))
    assert (x < s) == (float(x) <= t)


def test_le_threshold_as_lt_when_rounding_goes_up():
    t = 0.1  # float32(0.1) is above 0.1
    assert float(np.float32(t)) > t
    s = le_threshold_as_lt(np.array([t]))[0]
    assert not np.float32(t) < s  # float32(0.1) > 0.1 goes right, as x <= 0.1 is false
    assert np.nextafter(np.float32(t), np.float32(0)) < s
