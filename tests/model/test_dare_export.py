"""``DareForest.to_ensemble``: its ``eval`` is ``predict_proba[:, 1]`` bit for bit, on the training
rows, random points, and float32 points on and next to every threshold."""

from __future__ import annotations

import numpy as np
import pytest
from dare_helpers import DETERMINISTIC, tied_data
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.model import Ensemble
from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare.tree import LEAF

from conftest import examples


def _probes(forest: DareForest, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The rows, random points, and for each split a row moved onto the float32 nearest its
    threshold and one float32 step either side."""
    view = forest.view()
    span = np.abs(X).max() + 1
    points = [X, rng.uniform(-span, span, (50, X.shape[1])).astype(np.float32)]
    for node in np.flatnonzero(view.kind != LEAF):
        at = np.float32(view.threshold[node])
        for value in (np.nextafter(at, -np.inf), at, np.nextafter(at, np.inf)):
            row = X[rng.integers(len(X))].copy()
            row[view.feature[node]] = value
            points.append(row[None, :])
    return np.concatenate(points).astype(np.float32)


def _assert_export_matches(forest: DareForest, X: np.ndarray, seed: int) -> None:
    ensemble = forest.to_ensemble()
    probes = _probes(forest, X, np.random.default_rng(seed))
    expected = forest.predict_proba(probes)[:, 1]
    assert np.array_equal(ensemble.eval(probes), expected)
    assert np.array_equal(ensemble.library.predict(probes), expected)
    assert ensemble.task == "binary" and ensemble.class_threshold == 0.5
    assert np.array_equal(ensemble.predict_class(probes), (expected > 0.5).astype(np.int64))


@settings(max_examples=examples(0.4))
@given(
    data=tied_data(max_rows=30, max_columns=3),
    random_depth=st.integers(0, 2),
    k=st.sampled_from([None, 1, 3]),
    scale=st.sampled_from([1.0, 1e-3, 3e7]),
)
def test_export_evaluates_as_predict_proba(data, random_depth, k, scale):
    X, y, seed = data
    X = (X * np.float32(scale) + np.float32(scale / 7)).astype(np.float32)
    forest = DareForest(
        n_trees=3, max_depth=4, k=k, random_depth=random_depth, max_features=None, random_state=seed
    ).fit(X, y)
    _assert_export_matches(forest, X, seed)


def test_export_of_random_thresholds_on_wide_values():
    rng = np.random.default_rng(5)
    X = (rng.standard_normal((200, 4)) * 10.0 ** rng.integers(-6, 8, (200, 4))).astype(np.float32)
    y = (X[:, 0] > 0).astype(int) ^ (rng.random(200) < 0.2)
    forest = DareForest(n_trees=5, max_depth=6, random_depth=2, random_state=3).fit(X, y)
    _assert_export_matches(forest, X, 1)


def test_export_is_a_snapshot_and_leaf_values_are_fractions_over_trees():
    X = np.array([[0], [1], [2], [3]], np.float32)
    forest = DareForest(n_trees=4, max_depth=1, **DETERMINISTIC).fit(X, [0, 1, 1, 1])
    ensemble = forest.to_ensemble()
    assert isinstance(ensemble, Ensemble)
    # root x <= 0.5: left leaf 0/1, right leaf 3/3, each divided by 4 trees
    assert ensemble.value[:3, 0].tolist() == [0.0, 0.0, 0.25]
    assert ensemble.threshold[0] == np.nextafter(np.float32(0.5), np.float32(np.inf))
    before = ensemble.eval(X)
    forest.delete([0])
    assert np.array_equal(ensemble.eval(X), before)
    assert np.array_equal(ensemble.library.predict(X), before)
    assert forest.predict_proba(X)[:, 1].tolist() == [1.0] * 4


@pytest.mark.parametrize("threshold", [0.5, 1e-40, 16777217.0])
def test_split_at_a_float64_threshold_keeps_float32_inputs_on_their_side(threshold):
    # 16777217 lies between two float32 values; 1e-40 is subnormal in float32.
    low = np.float32(np.nextafter(np.float32(threshold), np.float32(-np.inf)))
    X = np.array([[low], [np.float32(2 * threshold + 1)]], np.float32)
    forest = DareForest(n_trees=1, max_depth=1, **DETERMINISTIC).fit(X, [0, 1])
    probes = np.array([[low], [np.float32(threshold)], [X[1, 0]]], np.float32)
    assert np.array_equal(forest.to_ensemble().eval(probes), forest.predict_proba(probes)[:, 1])
