"""Membership attacks on a deletion (veritas_dsl.unlearning.membership): the features and the
metrics against hand-computed cases, the attack model against scikit-learn's logistic
regression, and the game's determinism for a fixed seed."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from veritas_dsl.unlearning import DareForest, MembershipError, membership
from veritas_dsl.unlearning.membership import (
    AttackModel,
    advantage,
    auc,
    estimate,
    features,
    play,
    priaa,
    t_quantile,
)


def test_features_are_both_posteriors_their_difference_and_its_size():
    got = features([0.2, 0.9, 0.75], [0.5, 0.9, 0.25])
    assert got.tolist() == [
        [0.2, 0.5, 0.3, 0.3],
        [0.9, 0.9, 0.0, 0.0],
        [0.75, 0.25, -0.5, 0.5],
    ]


def test_metrics_by_hand():
    deleted, outside = [0.9, 0.5, 0.4], [0.5, 0.1]
    # pairs above: (0.9, 0.5), (0.9, 0.1), (0.5, 0.1), (0.4, 0.1); (0.5, 0.5) a tie: 4.5 of 6
    assert auc(deleted, outside) == pytest.approx(0.75)
    # score >= 0.4: TPR 1, FPR 1/2; >= 0.9: 1/3, 0; >= 0.5: 2/3, 1/2; >= 0.1: 1, 1
    assert advantage(deleted, outside) == pytest.approx(0.5)
    # decisions 1, 1, 0 (0.5 counts as deleted): |2/3 - 1/2|
    assert priaa(deleted) == pytest.approx(1 / 6)
    assert priaa([0.1, 0.2]) == priaa([0.6, 0.7]) == 0.5
    assert auc([0.3], [0.3]) == 0.5 and advantage([0.3], [0.3]) == 0.0
    assert auc([0.1, 0.2], [0.3]) == 0.0 and advantage([0.1, 0.2], [0.3]) == 0.0


def test_interval_across_seeds_is_student_t():
    found = estimate([0.6, 0.7, 0.8])
    # mean 0.7, sd 0.1, t(0.975, 2) = 4.302653
    assert found.mean == pytest.approx(0.7)
    assert found.high - found.mean == pytest.approx(4.302653 * 0.1 / np.sqrt(3), rel=1e-6)
    assert estimate([0.6]).low is None


@pytest.mark.parametrize("df", [1, 2, 3, 4, 9, 30, 200])
@pytest.mark.parametrize("p", [0.975, 0.995, 0.5])
def test_t_quantile_is_scipys(p, df):
    stats = pytest.importorskip("scipy.stats", reason="scipy (scikit-learn's) is the reference")
    assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), abs=1e-9)


def test_attack_model_is_the_ridge_logistic_regression():
    X, y = make_classification(300, 4, n_informative=3, n_redundant=0, random_state=1)
    X[:, 1] *= 50  # standardised first, as ours does
    ours = AttackModel().fit(X, y)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    theirs = LogisticRegression(C=1 / (1e-3 * len(X)), tol=1e-12, max_iter=10_000).fit(Z, y)
    assert ours.weights[0] == pytest.approx(theirs.intercept_[0], abs=1e-6)
    assert ours.weights[1:] == pytest.approx(theirs.coef_[0], abs=1e-6)
    assert ours.probability(X) == pytest.approx(theirs.predict_proba(Z)[:, 1], abs=1e-6)


def test_a_constant_feature_does_not_break_the_fit():
    X = np.column_stack([np.zeros(6), [0, 0, 0, 1, 1, 1]])
    model = AttackModel().fit(X, [0, 0, 0, 1, 1, 1])
    assert np.all(np.isfinite(model.weights))
    p = model.probability(X)
    assert p[:3].max() < 0.5 < p[3:].min()


@pytest.fixture(scope="module")
def game():
    X, y = make_classification(240, 5, n_informative=3, random_state=0)
    forest = DareForest(n_trees=5, max_depth=4, random_state=3).fit(X[:160], y[:160])
    return forest, X[160:], y[160:]


def test_the_game_is_deterministic_for_a_seed(game):
    forest, X, y = game
    batches = [[1, 2, 3], [10, 11, 12]]
    first = membership(forest, batches, X, y, seeds=2, shadows=2).to_dict()
    again = membership(forest, batches, X, y, seeds=2, shadows=2).to_dict()
    assert first == again
    assert set(first["unlearnings"]) == {"delete", "retrain"}
    assert first["deleted"] == [1, 2, 3, 10, 11, 12] and first["batches"] == 2
    assert len(first["unlearnings"]["delete"]["auc"]["per_seed"]) == 2
    assert forest.remaining().tolist() == list(range(160))  # the target is left as it was


def test_scores_are_the_attack_models_on_the_target_pairs(game):
    forest, X, y = game
    scores = play(forest, [[4, 5]], X, y, seed=0, shadows=1)["delete"]
    assert len(scores.deleted) == len(scores.outside) == 2
    after = forest.copy().delete([4, 5])
    rows = forest.training_rows()[0][[4, 5]]
    probe = np.abs(after.predict_proba(rows)[:, 1] - forest.predict_proba(rows)[:, 1])
    assert scores.probe_deleted.tolist() == probe.tolist()


def test_in_the_deterministic_configuration_retraining_is_the_deletion(game):
    _, X, y = game
    forest = DareForest(n_trees=2, max_depth=4, k=None, max_features=None).fit(X, y)
    outside, labels = make_classification(80, 5, n_informative=3, random_state=1)
    found = play(forest, [[0, 7], [30, 31]], outside, labels, seed=4, shadows=2)
    assert found["delete"].deleted.tolist() == found["retrain"].deleted.tolist()
    assert found["delete"].outside.tolist() == found["retrain"].outside.tolist()


@pytest.mark.parametrize(
    "batches, outside, message",
    [
        ([[500]], None, "row 500 does not exist"),
        ([[1, 1]], None, "row 1 is listed twice"),
        ([[1]], (3, 5), "give at least 4 outside rows"),
        ([[1]], (10, 4), "the forest reads 5 columns"),
    ],
)
def test_bad_input_is_a_membership_error(game, batches, outside, message):
    forest, X, y = game
    if outside is not None:
        X, y = np.zeros(outside), np.zeros(outside[0])
    with pytest.raises(MembershipError, match=message):
        membership(forest, batches, X, y, seeds=1, shadows=1)
