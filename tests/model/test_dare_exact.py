"""The deterministic DaRE forest (random_depth 0, every threshold, every attribute): after each
deletion and addition it is the forest a fit on its remaining rows gives, node for node."""

from __future__ import annotations

import numpy as np
import pytest
from dare_helpers import DETERMINISTIC, assert_same_forest, shape, tied_data
from hypothesis import example, given, settings
from hypothesis import strategies as st

from veritas_dsl.unlearning import DareForest

from conftest import examples


def _edit_and_compare(
    X, y, seed, n_trees, max_depth, min_samples_leaf, steps=50, criterion="gini"
):
    """Interleave ``steps`` random deletions and additions, comparing with a fit after each."""
    rng = np.random.default_rng(seed)
    params = dict(DETERMINISTIC, n_trees=n_trees, max_depth=max_depth, criterion=criterion)
    params["min_samples_leaf"] = min_samples_leaf
    forest = DareForest(**params).fit(X, y)
    assert_same_forest(forest, X, y)
    pool_X, pool_y = X.copy(), y.copy()  # every row ever given, by id
    for _ in range(steps):
        alive = forest.remaining()
        before = shape(forest)
        if len(alive) > 1 and rng.random() < 0.6:
            count = int(rng.integers(1, min(3, len(alive) - 1) + 1))
            forest.delete(rng.choice(alive, count, replace=False))
            cost = forest.last_deletion_cost
            # the rows are forgotten one by one: each may grow every node on its paths again
            assert 0 <= cost <= count * n_trees * len(alive) * (max_depth + 1)
            if shape(forest) != before:  # only growing a subtree again changes the shape
                assert cost > 0
        else:
            source = rng.integers(0, len(pool_X), int(rng.integers(1, 3)))
            new_X = pool_X[source] + rng.integers(-1, 2, (len(source), X.shape[1])) * 0.5
            new_y = rng.integers(0, 2, len(source))
            forest.add(new_X.astype(np.float32), new_y)
            pool_X = np.concatenate([pool_X, new_X.astype(np.float32)])
            pool_y = np.concatenate([pool_y, new_y])
        assert_same_forest(forest, pool_X, pool_y)


@settings(max_examples=examples(0.6))
@given(
    data=tied_data(),
    n_trees=st.integers(1, 2),
    max_depth=st.integers(0, 4),
    min_samples_leaf=st.integers(1, 3),
    criterion=st.sampled_from(["gini", "entropy"]),
)
@example(
    data=(np.zeros((2, 1), np.float32), np.array([0, 1]), 0),
    n_trees=1,
    max_depth=3,
    min_samples_leaf=1,
    criterion="gini",
)
def test_edits_equal_a_fit_on_the_remaining_rows(
    data, n_trees, max_depth, min_samples_leaf, criterion
):
    X, y, seed = data
    _edit_and_compare(X, y, seed, n_trees, max_depth, min_samples_leaf, criterion=criterion)


@pytest.mark.parametrize("seed", range(4))
def test_pinned_edits_on_duplicates_and_constant_columns(seed):
    rng = np.random.default_rng(100 + seed)
    n = 30
    X = np.stack(
        [rng.integers(0, 3, n), np.full(n, 7), rng.integers(0, 2, n), rng.integers(0, 5, n)],
        axis=1,
    ).astype(np.float32)
    X[:5] = X[5]  # duplicate rows
    y = (X[:, 0] + X[:, 3] + rng.integers(0, 2, n) > 3).astype(int)
    _edit_and_compare(X, y, seed, n_trees=2, max_depth=5, min_samples_leaf=1 + seed % 2)


def test_deleting_a_row_that_moves_the_root_split_regrows_the_tree():
    # One feature, labels 0 0 1 1 0: the best root split is x <= 1.5 (3.5 scores lower).
    X = np.array([[0], [1], [2], [3], [4]], np.float32)
    y = np.array([0, 0, 1, 1, 0])
    forest = DareForest(n_trees=3, max_depth=1, **DETERMINISTIC).fit(X, y)
    assert forest.view().threshold[0] == 1.5
    forest.delete([4])  # the best split stays between 1 and 2: no subtree grows again
    assert forest.last_deletion_cost == 0
    assert_same_forest(forest, X, y)
    forest.delete([0, 1])  # rows 2 and 3 left: one class, every tree becomes a leaf
    assert forest.last_deletion_cost == 3 * 2
    assert_same_forest(forest, X, y)


def test_fit_returns_the_forest_and_add_gives_new_ids():
    X = np.array([[0], [1], [2]], np.float32)
    forest = DareForest(n_trees=2, **DETERMINISTIC)
    assert forest.fit(X, [0, 1, 1]) is forest
    assert forest.add([[5.0]], [0]) is forest
    assert forest.n_rows == 4 and forest.remaining().tolist() == [0, 1, 2, 3]
    forest.delete([1])
    assert forest.remaining().tolist() == [0, 2, 3]


# Labels 0 1 0 0 0 1 0 0 on x = 0..7: the cuts after the 2nd and after the 6th row both have
# G = 4/3 exactly (Gini score n - 2G), while their float64 scores differ in the last bit
# (5.333333333333333 and 5.333333333333334): a float comparison picked the larger threshold.
TIED_Y = np.array([0, 1, 0, 0, 0, 1, 0, 0])


def test_equal_gini_goes_to_the_smaller_threshold():
    X = np.arange(8, dtype=np.float32)[:, None]
    forest = DareForest(n_trees=1, max_depth=1, **DETERMINISTIC).fit(X, TIED_Y)
    assert forest.view().threshold[0] == 1.5


def test_equal_gini_goes_to_the_smaller_attribute():
    # Attribute 0 has only the cut after 2 rows, attribute 1 only the one after 6.
    X = np.array([[0, 0]] * 2 + [[1, 0]] * 4 + [[1, 1]] * 2, np.float32)
    forest = DareForest(n_trees=1, max_depth=1, **DETERMINISTIC).fit(X, TIED_Y)
    assert (forest.view().feature[0], forest.view().threshold[0]) == (0, 0.5)


@pytest.mark.parametrize("params", [DETERMINISTIC, dict(k=3, max_features=1, random_depth=0)])
def test_a_deletion_that_leaves_equal_gini_chooses_as_a_fit(params):
    """Row 8 (x = 8, positive) breaks the tie; deleting it brings the tie back, and the node,
    re-choosing from its cache or its rows, must pick what a fit on the 8 rows picks."""
    X = np.arange(9, dtype=np.float32)[:, None]
    y = np.append(TIED_Y, 1)
    forest = DareForest(n_trees=4, max_depth=2, **params).fit(X, y)
    forest.delete([8])
    assert_same_forest(forest, X, y)
    if params is DETERMINISTIC:
        assert forest.view().threshold[0] == 1.5


def test_entropy_is_its_own_criterion_saved_and_refused_by_the_certificate(tmp_path):
    from veritas_dsl.model.errors import ModelError
    from veritas_dsl.unlearning.dare.certificate import worst_case

    rng = np.random.default_rng(11)
    X = rng.integers(0, 6, (80, 3)).astype(np.float32)
    y = (X[:, 0] + rng.integers(0, 3, 80) > 4).astype(int)
    params = dict(DETERMINISTIC, n_trees=1, max_depth=4)
    gini = DareForest(**params).fit(X, y)
    entropy = DareForest(**params, criterion="entropy").fit(X, y)
    assert shape(gini) != shape(entropy)  # the two criteria choose differently here
    entropy.save(tmp_path / "e.dare")
    loaded = DareForest.load(tmp_path / "e.dare")
    assert loaded.criterion == "entropy"
    loaded.delete([3, 7])
    assert_same_forest(loaded, X, y)
    with pytest.raises(ModelError, match="criterion"):
        DareForest(criterion="log_loss").fit(X, y)
    with pytest.raises(ModelError, match="gini criterion"):
        worst_case(entropy, 1)
