"""The Ensemble arrays: checks on construction, evaluation, reindexing and the JSON round trip."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from veritas_dsl.model import Ensemble, ModelError
from veritas_dsl.model.ensemble import classes_of
from veritas_dsl.model.library import le_threshold_as_lt

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


#: Two trees: tree 0 splits node 0 (x0) into 1 and leaf 2, node 1 (x1) into leaves 3 and 4;
#: tree 1 (nodes 5-7) splits node 5 (x0) into leaves 6 and 7.
TWO_TREES = dict(
    feature=[0, 1, -1, -1, -1, 0, -1, -1],
    threshold=[0.5, 0.5, 0, 0, 0, 1.5, 0, 0],
    left=[1, 3, -1, -1, -1, 6, -1, -1],
    right=[2, 4, -1, -1, -1, 7, -1, -1],
    value=[[0.0], [0.0], [1.0], [2.0], [3.0], [0.0], [4.0], [5.0]],
    tree_offsets=[0, 5, 8],
    base_score=[0.0],
    feature_names=("a", "b"),
)


def changed(arrays, **entries):
    """``arrays`` with single entries replaced: ``left=(1, 0)`` sets ``left[1] = 0``."""
    out = {key: list(value) if isinstance(value, list) else value for key, value in arrays.items()}
    for key, (index, item) in entries.items():
        out[key][index] = item
    return out


@pytest.mark.parametrize(
    "arrays, message",
    [
        (changed(TWO_TREES, left=(2, 3)), "tree 0, node 2 is a leaf with children"),
        (changed(TWO_TREES, left=(1, 0)), "tree 0, node 1: its left child 0 is not a later"),
        (changed(TWO_TREES, left=(1, 1)), "tree 0, node 1: its left child 1 is not a later"),
        (changed(TWO_TREES, right=(1, 6)), "tree 0, node 1: its right child 6 is not a later"),
        (changed(TWO_TREES, right=(5, 8)), "tree 1, node 0: its right child 8 is not a later"),
        (changed(TWO_TREES, left=(1, -1)), "tree 0, node 1: its left child -1"),
        (changed(TWO_TREES, right=(1, 2)), "tree 0, node 2 has two parents"),
        (changed(TWO_TREES, left=(0, 3)), "tree 0, node 1 is reached from no parent"),
        (changed(TWO_TREES, feature=(5, 2)), "tree 1, node 0 splits on feature 2, but the model"),
        (changed(TWO_TREES, feature=(2, -2)), "tree 0, node 2 splits on feature -2"),
        (changed(TWO_TREES, threshold=(1, np.inf)), "tree 0, node 1 has threshold inf"),
        (changed(TWO_TREES, threshold=(0, np.nan)), "tree 0, node 0 has threshold nan"),
        (changed(TWO_TREES, value=(6, [np.inf])), "tree 1, node 1 has a leaf value that is not"),
        (changed(TWO_TREES, value=(1, [1.0])), "tree 0, node 1 is a split with a leaf value"),
        (
            changed(changed(TWO_TREES, value=(2, [1e308])), value=(6, [1e308])),
            "output overflows",
        ),
        (changed(TWO_TREES, tree_offsets=(1, 9)), "tree_offsets"),
        ({**TWO_TREES, "tree_offsets": [0, 8, 8]}, "tree_offsets"),
        ({**TWO_TREES, "base_score": [0.0, 0.0]}, "base_score"),
        ({**TWO_TREES, "base_score": [np.nan]}, "base score"),
        ({**TWO_TREES, "class_threshold": np.inf}, "class threshold"),
        (changed(TWO_TREES, feature=(0, 0.5)), "feature holds a value that is not a whole"),
        (changed(TWO_TREES, left=(0, 2**40)), "left holds a value beyond int32"),
        ({**TWO_TREES, "feature_names": ("a", "a")}, "feature name `a` appears twice"),
        ({**TWO_TREES, "feature_names": ("a", 1)}, "feature name `1` is not a string"),
        (
            dict(
                TWO_TREES,
                feature=[],
                threshold=[],
                left=[],
                right=[],
                value=np.zeros((0, 1)),
                tree_offsets=[0],
            ),
            "no trees",
        ),
        (  # a LightGBM text with max_feature_idx=-1: an internal error in ver inspect and run
            dict(
                TWO_TREES,
                feature=[-1],
                threshold=[0],
                left=[-1],
                right=[-1],
                value=[[0.5]],
                tree_offsets=[0, 1],
                feature_names=(),
            ),
            "the model has no features",
        ),
    ],
)
def test_malformed_arrays_are_refused(arrays, message):
    Ensemble(**TWO_TREES)  # the unchanged arrays are fine
    with pytest.raises(ModelError, match=re.escape(message)):
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


def test_a_pickled_ensemble_drops_its_library_model_and_a_copy_keeps_it(tmp_path):
    import copy
    import pickle

    import xgboost as xgb

    X = np.random.default_rng(0).normal(size=(60, 3)).astype(np.float32)
    booster = xgb.train({"max_depth": 2}, xgb.DMatrix(X, label=X[:, 0] > 0), 3)
    model = Ensemble.from_xgboost(booster)
    assert model.library is not None
    again = pickle.loads(pickle.dumps(model))
    assert again.library is None  # a live Booster never travels to a worker
    assert np.array_equal(again.eval(X), model.eval(X))
    assert copy.deepcopy(model).library is model.library
    assert copy.copy(model) is model
