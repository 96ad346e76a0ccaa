"""Deleting several rows at once checks every id first, then forgets them one at a time in place
(up to ``ONE_BY_ONE`` rows): it must give the very forest deleting them one by one gives (memos
and random generator included); a larger batch updates each tree from its rows at once; a bad id
anywhere in a batch must leave the forest as it was."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from dare_helpers import DETERMINISTIC, assert_same_forest, structure, tied_data
from hypothesis import example, given, settings
from hypothesis import strategies as st

from veritas_dsl.model import ModelError
from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare import forest as forest_module

from conftest import examples


def memos(forest: DareForest) -> list:
    """Every tree's memos: node, and per memo its split, seed and rows held."""
    return [
        sorted(
            (node, [(m.seed, m.attribute, m.threshold, m.size) for m in kept])
            for node, kept in tree.memos.by_node.items()
        )
        for tree in forest._trees
    ]


def state(forest: DareForest) -> tuple:
    return (
        structure(forest),
        memos(forest),
        forest._rng.bit_generator.state,
        forest.remaining().tolist(),
    )


@settings(max_examples=examples(0.5), deadline=None)
@given(
    data=tied_data(max_rows=40, max_columns=4),
    k=st.sampled_from([None, 1, 2]),
    random_depth=st.integers(0, 2),
    batches=st.integers(1, 4),
)
@example(
    data=(np.array([[0], [0], [1], [1], [2]], np.float32), np.array([0, 1, 0, 1, 1]), 3),
    k=1,
    random_depth=1,
    batches=2,
)
def test_a_batch_is_its_rows_deleted_one_by_one(data, k, random_depth, batches):
    X, y, seed = data
    params = dict(n_trees=3, max_depth=4, k=k, max_features=2, random_depth=random_depth)
    batch = DareForest(**params, random_state=seed % 1000).fit(X, y)
    single = copy.deepcopy(batch)
    order = np.random.default_rng(seed).permutation(len(X))[: len(X) - 1]
    for ids in np.array_split(order, batches):
        if len(ids) == 0:
            continue
        batch.delete(ids)
        cost = 0
        for r in np.sort(ids):
            single.delete([int(r)])
            cost += single.last_deletion_cost
        assert batch.last_deletion_cost == cost
        assert state(batch) == state(single)


@settings(max_examples=examples(0.3), deadline=None)
@given(data=tied_data(max_rows=40, max_columns=3), batches=st.integers(1, 4))
def test_a_deterministic_batch_equals_a_fit_on_the_remaining_rows(data, batches):
    X, y, seed = data
    forest = DareForest(n_trees=2, max_depth=4, **DETERMINISTIC).fit(X, y)
    order = np.random.default_rng(seed).permutation(len(X))[: len(X) - 1]
    for ids in np.array_split(order, batches):
        if len(ids):
            forest.delete(ids)
            assert_same_forest(forest, X, y)


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([0, 3, 40], "row 40 does not exist"),
        ([0, 3, -2], "row -2 does not exist"),
        ([0, 3, 5, 3], "row 3 is listed twice"),
        ([0, 3, 7], "row 7 is already deleted"),
    ],
)
@pytest.mark.parametrize("random_depth", [0, 2])
def test_one_bad_id_in_a_batch_changes_nothing(ids, message, random_depth):
    rng = np.random.default_rng(1)
    X = rng.integers(0, 5, (40, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=40) > 2).astype(int)
    forest = DareForest(n_trees=3, max_depth=4, k=1, max_features=2, random_depth=random_depth)
    forest.fit(X, y).delete([7, 11])
    before, cost = copy.deepcopy(state(forest)), forest.last_deletion_cost
    caches = [
        {node: [part.copy() for part in cache] for node, cache in tree.cache.items()}
        for tree in forest._trees
    ]
    with pytest.raises(ModelError, match=message):
        forest.delete(ids)
    assert state(forest) == before and forest.last_deletion_cost == cost
    for tree, cached in zip(forest._trees, caches, strict=True):
        assert tree.cache.keys() == cached.keys()
        for node, parts in cached.items():
            assert all(np.array_equal(a, b) for a, b in zip(tree.cache[node], parts, strict=True))
    forest.delete([0, 3])  # and it still deletes
    assert forest.remaining().tolist() == [r for r in range(40) if r not in (0, 3, 7, 11)]


@pytest.fixture
def small_limit(monkeypatch):
    """Batches of more than 3 rows update each tree from its rows at once."""
    monkeypatch.setattr(forest_module, "ONE_BY_ONE", 3)


@pytest.mark.usefixtures("small_limit")
@settings(max_examples=examples(0.2), deadline=None)
@given(data=tied_data(max_rows=40, max_columns=3), batches=st.integers(1, 3))
def test_a_large_deterministic_batch_equals_a_fit_on_the_remaining_rows(data, batches):
    X, y, seed = data
    forest = DareForest(n_trees=2, max_depth=4, **DETERMINISTIC).fit(X, y)
    order = np.random.default_rng(seed).permutation(len(X))[: len(X) - 1]
    for ids in np.array_split(order, batches):
        if len(ids):
            forest.delete(ids)
            assert_same_forest(forest, X, y)


@pytest.mark.usefixtures("small_limit")
def test_a_large_batch_updates_each_tree_once_and_a_bad_id_changes_nothing():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=60) > 0).astype(int)
    forest = DareForest(n_trees=3, max_depth=4, k=1, max_features=2, random_depth=2).fit(X, y)
    before = copy.deepcopy(state(forest))
    with pytest.raises(ModelError, match="row 60 does not exist"):
        forest.delete([1, 2, 3, 4, 60])
    assert state(forest) == before
    slow = copy.deepcopy(forest)
    alive = slow._alive.copy()
    alive[[1, 2, 3, 4]] = False
    slow._change(alive, np.array([1, 2, 3, 4]), adding=False)
    forest.delete([4, 3, 2, 1])
    assert state(forest) == state(slow)
    assert forest.last_deletion_cost == slow.last_deletion_cost
