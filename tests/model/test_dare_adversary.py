"""The worst-of-n adversary (issue 38, item 3): ``DareForest.deletion_cost`` is exactly the
``last_deletion_cost`` of the deletion and leaves the forest as it was, and ``worst_deletion``
picks the candidate of the largest true cost (bench/dare_deletion.py's worst-of-1,000 column
uses it; it once ranked by a proxy whose pick cost 0 rows against a true worst of 25,540)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from dare_helpers import structure

from veritas_dsl.model import ModelError
from veritas_dsl.unlearning import DareForest, worst_deletion

SETTINGS = [
    dict(n_trees=6, max_depth=6, k=3, max_features=2, random_depth=0),  # G-DaRE
    # R-DaRE, random nodes deep enough that some deletions redraw one (from the generator)
    dict(n_trees=6, max_depth=6, k=3, max_features=2, random_depth=4),
    dict(n_trees=3, max_depth=5, k=None, max_features=None, random_depth=0),  # deterministic
    dict(n_trees=4, max_depth=6, k=2, max_features=3, random_depth=1, min_samples_leaf=3),
]


def data(seed: int, n: int = 150):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, (n, 4)).astype(np.float32) * 0.25
    y = ((X[:, 0] + X[:, 1] + rng.normal(0, 1, n)) > 2.7).astype(int)
    return X, y


def state(forest: DareForest) -> tuple:
    """Everything a trial deletion might disturb: the nodes, what the generator draws next,
    and each tree's arrays the walk edits in place (leaves' rows, ``leaf_of``, caches)."""
    arrays = []
    for tree in forest._trees:
        caches = [(node, [a.tobytes() for a in cache]) for node, cache in tree.cache.items()]
        arrays.append((tree.table.tobytes(), tree.rows.held.tobytes(), tree.leaf_of.tobytes()))
        arrays.append(caches)
    return structure(forest), repr(forest._rng.bit_generator.state), arrays


def forest_with_memos(settings: dict, seed: int) -> DareForest:
    X, y = data(seed)
    forest = DareForest(**settings, random_state=seed).fit(X, y)
    forest.delete([3, 50, 77])  # caches followed, memos kept, generator moved
    return forest


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("seed", [0, 1])
def test_the_cost_of_every_row_is_that_of_its_deletion_and_changes_nothing(settings, seed):
    forest = forest_with_memos(settings, seed)
    twin = copy.deepcopy(forest)
    before = state(forest)
    costs = [forest.deletion_cost(r) for r in forest.remaining().tolist()]
    assert state(forest) == before
    deleted = [forest.copy().delete([r]) for r in forest.remaining().tolist()]
    assert costs == [other.last_deletion_cost for other in deleted]
    assert max(costs) > 0  # the data has costly rows: the test can tell a cost from none
    drew = [repr(other._rng.bit_generator.state) != before[1] for other in deleted]
    assert any(drew) == (settings["random_depth"] == 4)  # trials that draw are tested too
    # The forest goes on deleting as one that never ran a trial does.
    for r in (5, 60, 101):
        forest.delete([r])
        twin.delete([r])
        assert forest.last_deletion_cost == twin.last_deletion_cost
        assert state(forest) == state(twin)


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_pick_costs_the_true_maximum_of_its_candidates(settings, seed):
    forest = forest_with_memos(settings, seed)
    candidates = np.random.default_rng(seed).choice(forest.remaining(), 40, replace=False)
    true = {int(r): forest.copy().delete([int(r)]).last_deletion_cost for r in candidates}
    row, cost = worst_deletion(forest, candidates)
    assert cost == max(true.values()) == true[row]
    assert row == next(r for r in true if true[r] == cost)  # the first on a tie
    assert forest.delete([row]).last_deletion_cost == cost


def test_a_count_draws_that_many_remaining_rows():
    forest = forest_with_memos(SETTINGS[0], 0)
    everyone = worst_deletion(forest, 10**6)  # more than remain: every row that may go
    true = [forest.copy().delete([r]).last_deletion_cost for r in forest.remaining().tolist()]
    assert everyone[1] == max(true)
    row, _ = worst_deletion(forest, 5, seed=3)
    assert row in forest.remaining()


def test_bad_candidates_are_refused():
    forest = forest_with_memos(SETTINGS[0], 0)
    for bad, message in (
        ([3], "row 3 is already deleted"),
        ([10**4], "does not exist"),
        ([], "non-empty"),
        (0, "at least 1"),
    ):
        with pytest.raises(ModelError, match=message):
            worst_deletion(forest, bad)
    X, y = data(0, 2)
    y[:] = [0, 1]
    two = DareForest(n_trees=2).fit(X, y).delete([0])
    with pytest.raises(ModelError, match="one row remains"):
        worst_deletion(two, 1000)
    with pytest.raises(ModelError, match="nothing to learn"):
        two.deletion_cost(1)


@pytest.mark.parametrize("settings", SETTINGS[:2])
def test_a_loaded_forest_costs_and_picks_exactly(settings, tmp_path):
    forest = forest_with_memos(settings, 0)
    forest.save(tmp_path / "f.dare")
    candidates = forest.remaining()[::3].tolist()
    cold = DareForest.load(tmp_path / "f.dare")  # no caches, no memos
    true = [cold.copy().delete([r]).last_deletion_cost for r in candidates]
    assert [cold.deletion_cost(r) for r in candidates] == true
    loaded = DareForest.load(tmp_path / "f.dare")
    row, cost = worst_deletion(loaded, candidates)  # warms the caches first
    assert cost == max(true) == true[candidates.index(row)]
