"""The membership attack of issue 41 item 1 played on a ShardedForest (item 3): the attacker
reads the probability of each published label (the mechanism's output distribution), and its
shadows are sharded forests of the target's settings."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from veritas_dsl.unlearning import ShardedForest, membership
from veritas_dsl.unlearning.membership import by_retraining, play
from veritas_dsl.unlearning.shards import vote_probability


@pytest.fixture(scope="module")
def game():
    X, y = make_classification(300, 4, n_informative=3, n_redundant=0, random_state=0)
    forest = ShardedForest(n_shards=3, epsilon=0.5, random_state=4, n_trees=3, max_depth=3)
    return forest.fit(X[:180], y[:180]), X[180:], y[180:]


def test_the_posterior_is_the_published_labels_probability_and_spends_nothing(game):
    forest, X, _ = game
    spent = forest.accountant.spent
    p = forest.predict_proba(X)
    assert np.array_equal(p[:, 1], vote_probability(forest.votes(X), 3, 0.5))
    assert np.array_equal(p[:, 0], 1.0 - p[:, 1])
    assert forest.accountant.spent == spent


def test_the_attack_plays_a_sharded_forest(game):
    forest, X, y = game
    batches = [[1, 2], [40], [77]]
    first = membership(forest, batches, X, y, seeds=2, shadows=2).to_dict()
    assert first == membership(forest, batches, X, y, seeds=2, shadows=2).to_dict()
    assert set(first["unlearnings"]) == {"delete", "retrain"}
    assert forest.remaining().tolist() == list(range(180))  # the target is left as it was
    # The probe reads |Mu - Mo| of the published labels' probabilities: for a deleted row it
    # is the sharded forest's own deletion, which touches the row's shard alone.
    scores = play(forest, [[40]], X, y, seed=0, shadows=1)["delete"]
    after = forest.copy().delete([40])
    row = forest.training_rows()[0][[40]]
    probe = np.abs(after.predict_proba(row)[:, 1] - forest.predict_proba(row)[:, 1])
    assert scores.probe_deleted.tolist() == probe.tolist()


def test_the_baseline_refits_shards_with_a_fresh_seed(game):
    forest, _, _ = game
    again = by_retraining(forest, np.array([3, 5]), 11)
    assert isinstance(again, ShardedForest) and again.random_state == 11
    assert again.params() == {**forest.params(), "random_state": 11}
    assert len(again.remaining()) == 178
