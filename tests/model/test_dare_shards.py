"""ShardedForest: a deletion is its shard's refit, the budget is spent as hand-computed, the
published labels follow the exponential mechanism, and bad input leaves the forest as it was."""

from __future__ import annotations

import math
import zipfile

import numpy as np
import pytest
from dare_helpers import DETERMINISTIC, assert_same_forest, structure
from scipy.stats import binomtest

from veritas_dsl.model import ModelError
from veritas_dsl.unlearning import ShardedForest
from veritas_dsl.unlearning.shards import Accountant, vote_probability


def data(n: int = 120, p: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, p)), 1).astype(np.float32)  # ties
    y = (X[:, 0] + X[:, 1] + rng.normal(0, 0.7, n) > 0).astype(int)
    return X, y


def sharded(**settings) -> ShardedForest:
    return ShardedForest(**{"n_shards": 3, "n_trees": 3, "max_depth": 3, **settings})


def shard_rows(forest: ShardedForest, X, y, i: int) -> tuple[np.ndarray, np.ndarray]:
    ids = forest.shard_ids(i)
    return X[ids], y[ids]


@pytest.mark.parametrize("deleted", [[5], [0, 7, 8, 50, 119], list(range(0, 120, 4))])
def test_a_deletion_is_its_shards_refit_node_for_node_and_leaves_the_others(deleted):
    X, y = data()
    forest = sharded(**DETERMINISTIC).fit(X, y)
    touched = set(forest.shard_of()[deleted].tolist())
    before = [structure(forest.shard(i)) for i in range(3)]
    forest.delete(deleted)
    for i in range(3):
        if i in touched:
            assert_same_forest(forest.shard(i), *shard_rows(forest, X, y, i))
        else:
            assert structure(forest.shard(i)) == before[i]
    keep = forest.remaining()
    assert keep.tolist() == sorted(set(range(120)) - set(deleted))
    fresh = sharded(**DETERMINISTIC).fit(X[keep], y[keep], shard=forest.shard_of()[keep])
    for i in range(3):  # the whole forest is the fit from scratch on the remaining rows
        mine = np.flatnonzero(forest.shard_of()[keep] == i)
        local = np.searchsorted(keep[mine], forest.shard_ids(i))
        assert structure(forest.shard(i), local) == structure(fresh.shard(i))
    assert np.array_equal(forest.votes(X), fresh.votes(X))


def test_an_addition_is_each_shards_refit_node_for_node_and_spends_nothing():
    X, y = data(150)
    forest = sharded(**DETERMINISTIC).fit(X[:120], y[:120])
    forest.predict(X[:4])
    spent, draws = forest.accountant.spent, forest.accountant.draws
    forest.delete([3, 10])
    forest.add(X[120:], y[120:])
    assert forest.n_rows == 150 and forest.shard_of()[120:].tolist() == [
        g % 3 for g in range(120, 150)
    ]
    for i in range(3):
        assert_same_forest(forest.shard(i), *shard_rows(forest, X, y, i))
    assert (forest.accountant.spent, forest.accountant.draws) == (spent, draws)
    with pytest.raises(ModelError):
        forest.add(X[:2, :3], y[:2])
    assert forest.n_rows == 150


def test_randomised_shards_edit_only_the_shard_a_row_is_in():
    X, y = data()
    forest = sharded(random_depth=2, random_state=7).fit(X, y)
    row = 11
    home = int(forest.shard_of()[row])
    before = [structure(forest.shard(i)) for i in range(3)]
    forest.delete([row])
    assert forest.shard(home).remaining().tolist() == [
        j for j, g in enumerate(forest.shard_ids(home)) if g != row
    ]
    for i in set(range(3)) - {home}:
        assert structure(forest.shard(i)) == before[i]


def test_the_budget_after_a_hand_computed_sequence_of_answers_and_draws():
    X, y = data()
    forest = sharded(epsilon=0.25, budget=1.0, random_depth=2).fit(X, y)
    spent = forest.accountant
    assert (spent.spent, spent.answers, spent.draws) == (0, 0, 0)
    first = [structure(forest.shard(i)) for i in range(3)]
    forest.predict(X[:3])  # 3 x 1/4
    assert (spent.spent, spent.answers, spent.draws) == (0.75, 3, 0)
    forest.predict(X[:2])  # 1/4 fits (spent 1); the next overruns it: draw, then 1/4
    assert (spent.spent, spent.answers, spent.draws) == (0.25, 1, 1)
    assert [structure(forest.shard(i)) for i in range(3)] != first  # fresh seeds
    forest.predict(X[:1], epsilon=0.5)  # 1/4 + 1/2
    assert (spent.spent, spent.answers, spent.draws) == (0.75, 2, 1)
    forest.predict(X[:1], epsilon=0.5)  # 3/4 + 1/2 > 1: draw, then 1/2
    assert (spent.spent, spent.answers, spent.draws) == (0.5, 1, 2)
    forest.predict(X[:9])  # 1/2 + 2 x 1/4, draw, 4 x 1/4, draw, 3 x 1/4
    assert (spent.spent, spent.answers, spent.draws) == (0.75, 3, 4)
    assert forest.adaptive_bound() == 3 * 0.75  # 3 shards
    forest.redraw()
    assert (spent.spent, spent.answers, spent.draws) == (0, 0, 5)
    assert forest.adaptive_bound() == 0


def test_the_accountant_sums_the_epsilons_as_written():
    accountant = Accountant(1.0)
    assert accountant.room(0.1) == 10  # 10 x 0.1 in floats is 1.0000000000000002
    accountant.spend(0.1, 10)
    assert accountant.room(0.1) == 0
    with pytest.raises(ModelError, match="overrun the budget"):
        accountant.spend(0.1)
    assert Accountant(0.3).room(0.1) == 3


def test_a_draw_refits_the_remaining_rows_and_is_deterministic_for_a_seed():
    X, y = data()
    one, two = (sharded(random_depth=2, epsilon=0.5, budget=2.0).fit(X, y) for _ in range(2))
    for forest in (one, two):
        forest.delete([3, 4, 40])
    assert np.array_equal(one.predict(X), two.predict(X))  # 30 draws on the way
    assert one.accountant.draws == 29
    for i in range(3):
        assert not {3, 4, 40} & set(one.shard_ids(i).tolist())
        assert structure(one.shard(i)) == structure(two.shard(i))
    other = sharded(random_depth=2, epsilon=0.5, budget=2.0, random_state=1).fit(X, y)
    assert [structure(other.shard(i)) for i in range(3)] != [
        structure(sharded(random_depth=2).fit(X, y).shard(i)) for i in range(3)
    ]


def test_a_shard_left_with_one_class_keeps_its_leaves_through_a_draw():
    X, y = data()
    forest = sharded(random_depth=2).fit(X, y)
    ids = forest.shard_ids(0)
    forest.delete(ids[y[ids] == 1])
    forest.redraw()
    assert np.all(forest.votes(X) <= 2)  # shard 0 votes 0 everywhere
    assert forest.shard(0).remaining().tolist() == np.flatnonzero(y[ids] == 0).tolist()


def test_the_vote_probability_is_the_exponential_mechanisms():
    # 3 of 5 shards vote 1 at epsilon 2: exp(2 * 3 / 2) against exp(2 * 2 / 2)
    assert vote_probability(3, 5, 2.0) == pytest.approx(math.exp(3) / (math.exp(3) + math.exp(2)))
    assert vote_probability(2.5, 5, 7.0) == 0.5
    # one shard changing its vote moves the probability by a factor of at most exp(epsilon)
    p = vote_probability(np.arange(6), 5, 0.8)
    assert np.all(p[1:] / p[:-1] <= math.exp(0.8) * (1 + 1e-12))
    assert np.all((1 - p[:-1]) / (1 - p[1:]) <= math.exp(0.8) * (1 + 1e-12))


def test_with_a_huge_epsilon_the_labels_are_the_plain_majority():
    X, y = data()
    forest = sharded(random_depth=2, epsilon=1e6, budget=1e9).fit(X, y)
    votes = forest.votes(X)
    decided = votes != 1.5
    assert decided.sum() > 100
    assert np.array_equal(forest.predict(X)[decided], (votes > 1.5)[decided])


@pytest.mark.parametrize("epsilon", [1e-9, 0.5])
def test_the_labels_follow_the_mechanism_over_many_draws(epsilon):
    """One input asked 4,000 times (fixed seed): the share of 1s is the mechanism's probability
    (near 1/2 for a tiny epsilon), by a two-sided binomial test at the 0.1 % level."""
    X, y = data()
    forest = sharded(random_depth=2, epsilon=epsilon, budget=1e6).fit(X, y)
    x = X[np.flatnonzero(forest.votes(X) == 3)[:1]]
    labels = forest.predict(np.repeat(x, 4000, axis=0))
    p = float(vote_probability(3, 3, epsilon))
    assert binomtest(int(labels.sum()), 4000, p).pvalue > 1e-3
    if epsilon < 1e-6:
        assert abs(labels.mean() - 0.5) < 0.03


def test_bad_deletions_raise_and_leave_the_forest_as_it_was():
    X, y = data()
    forest = sharded(random_depth=2).fit(X, y)
    forest.delete([4])
    before = [structure(forest.shard(i)) for i in range(3)]
    for rows, message in [
        ([4], "row 4 is already deleted"),
        ([2, 4], "row 4 is already deleted"),
        ([120], r"row 120 does not exist \(ids run from 0 to 119\)"),
        ([-1], "row -1 does not exist"),
        ([3, 3], "row 3 is listed twice"),
        ([], "non-empty list of integer ids"),
        (forest.shard_ids(1), "would leave shard 1 with no row"),
    ]:
        with pytest.raises(ModelError, match=message):
            forest.delete(rows)
    assert [structure(forest.shard(i)) for i in range(3)] == before
    assert forest.remaining().tolist() == [r for r in range(120) if r != 4]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (dict(n_shards=0), "n_shards must be an integer >= 1"),
        (dict(epsilon=0), "epsilon must be a positive number"),
        (dict(epsilon=float("nan")), "epsilon must be a positive number"),
        (dict(budget=-1), "budget must be a positive number"),
        (dict(epsilon=2, budget=1), "epsilon 2 is above the budget 1"),
        (dict(max_depth=-1), "max_depth must be an integer >= 0"),
        (dict(random_state=-3), "random_state must be an integer >= 0"),
        (dict(random_state=0, **{"random_state_": 1}), "unexpected keyword"),
    ],
)
def test_bad_settings(settings, message):
    with pytest.raises((ModelError, TypeError), match=message):
        sharded(**settings)


def test_bad_fits_and_calls_before_a_fit():
    X, y = data()
    with pytest.raises(ModelError, match="not fitted yet"):
        sharded().predict(X)
    with pytest.raises(ModelError, match="not fitted yet"):
        sharded().delete([0])
    with pytest.raises(ModelError, match="shard 1 holds 0 rows and not both classes"):
        sharded().fit(X, y, shard=np.zeros(120, dtype=int))
    with pytest.raises(ModelError, match="shard ids must run from 0 to 2"):
        sharded().fit(X, y, shard=np.full(120, 3))
    with pytest.raises(ModelError, match="one integer per row"):
        sharded().fit(X, y, shard=np.zeros(5, dtype=int))
    forest = sharded(epsilon=0.5, budget=1.0).fit(X, y)
    with pytest.raises(ModelError, match=r"X has shape \(120, 3\); the forest takes 4 columns"):
        forest.predict(X[:, :3])
    with pytest.raises(ModelError, match=r"epsilon 2\.0 is above the budget"):
        forest.predict(X, epsilon=2.0)
    assert forest.accountant.answers == 0


def test_save_and_load_keep_the_shards_the_accountant_and_the_noise(tmp_path):
    X, y = data()
    forest = sharded().fit(X, y)
    forest.delete([1, 2])
    forest.predict(X[:7], epsilon=0.5)
    forest.save(tmp_path / "s.shards")
    again = ShardedForest.load(tmp_path / "s.shards")
    assert np.array_equal(again.votes(X), forest.votes(X))
    assert np.array_equal(again.shard_of(), forest.shard_of())
    a, b = again.accountant, forest.accountant
    assert (a.spent, a.answers, a.draws) == (b.spent, b.answers, b.draws)
    assert np.array_equal(again.predict(X), forest.predict(X))  # the same noise and draws
    again.delete([3])
    forest.delete([3])
    assert np.array_equal(again.votes(X), forest.votes(X))


def test_damaged_and_foreign_files_are_refused(tmp_path):
    X, y = data()
    forest = sharded().fit(X, y)
    forest.save(tmp_path / "s.shards")
    whole = (tmp_path / "s.shards").read_bytes()
    (tmp_path / "cut").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ModelError, match="cut"):
        ShardedForest.load(tmp_path / "cut")
    forest.shard(0).save(tmp_path / "dare.npz")
    with pytest.raises(ModelError, match=r"dare\.npz"):
        ShardedForest.load(tmp_path / "dare.npz")
    with zipfile.ZipFile(tmp_path / "s.shards") as archive:
        parts = {name: archive.read(name) for name in archive.namelist()}
    parts["shard_0.npz"], parts["shard_1.npz"] = parts["shard_1.npz"], parts["shard_0.npz"]
    with zipfile.ZipFile(tmp_path / "swapped", "w") as archive:
        for name, content in parts.items():
            archive.writestr(name, content)
    with pytest.raises(ModelError, match="shard 0's forest does not hold its rows"):
        ShardedForest.load(tmp_path / "swapped")
    with pytest.raises(ModelError, match="cannot write"):
        forest.save(tmp_path / "no" / "dir")
    assert not list((tmp_path).glob("**/*.partial"))
