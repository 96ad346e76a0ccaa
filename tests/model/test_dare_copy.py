"""``DareForest.copy`` and ``DareForest.warm``, which families of deletion variants use: a copy
edits apart from its original exactly as a deep copy would, and warming the caches of a loaded
forest changes no forest that deletions make from it."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from dare_helpers import structure

from veritas_dsl.model import ModelError
from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare.derive import deleted

SETTINGS = [  # sampled thresholds and attributes, random top levels: the caches decide
    dict(n_trees=4, max_depth=6, k=3, max_features=2, random_depth=1),
    dict(n_trees=3, max_depth=5, k=None, max_features=None, random_depth=0),
]


def data(seed: int, n: int = 160):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, (n, 4)).astype(np.float32) * 0.25
    y = ((X[:, 0] + X[:, 1] + rng.normal(0, 1, n)) > 2.7).astype(int)
    return X, y


def probe(forest: DareForest) -> tuple:
    """What tells two forests apart: their nodes, and what their generators draw next."""
    return structure(forest), repr(forest._rng.bit_generator.state)


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_copy_edits_as_a_deep_copy_and_leaves_its_original(settings, seed):
    X, y = data(seed)
    forest = DareForest(**settings, random_state=seed).fit(X, y)
    forest.delete([3, 50])  # caches followed, memos kept
    before = probe(forest)
    rng = np.random.default_rng(seed)
    ours, theirs = forest.copy(), copy.deepcopy(forest)
    for _ in range(3):
        ids = sorted(rng.choice(ours.remaining(), 4, replace=False).tolist())
        ours.delete(ids)
        theirs.delete(ids)
        assert probe(ours) == probe(theirs)
    more_X, more_y = data(seed + 10, 12)
    ours.add(more_X, more_y)
    theirs.add(more_X, more_y)
    assert probe(ours) == probe(theirs)
    assert probe(forest) == before
    grid = np.random.default_rng(seed).uniform(-0.5, 3.5, (300, 4)).astype(np.float32)
    assert np.array_equal(forest.predict_proba(grid), copy.deepcopy(forest).predict_proba(grid))


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_warming_a_loaded_forest_changes_no_deletion(settings, seed, tmp_path):
    X, y = data(seed)
    DareForest(**settings, random_state=seed).fit(X, y).save(tmp_path / "f.dare")
    rng = np.random.default_rng(seed)
    sets = [sorted(rng.choice(len(X), 5, replace=False).tolist()) for _ in range(4)]
    warmed, cold = DareForest.load(tmp_path / "f.dare"), DareForest.load(tmp_path / "f.dare")
    warmed.warm(sorted({r for ids in sets for r in ids}))
    assert probe(warmed) == probe(cold)
    for ids in sets:
        ours, theirs = deleted(warmed, ids), deleted(cold, ids)
        assert probe(ours) == probe(theirs)
        later = ours.remaining()[:3].tolist()
        assert probe(ours.delete(later)) == probe(theirs.delete(later))


def test_warm_checks_its_ids():
    X, y = data(0)
    forest = DareForest(n_trees=2, max_depth=3).fit(X, y)
    with pytest.raises(ModelError):
        forest.warm([len(X)])
