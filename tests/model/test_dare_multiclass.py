"""DareForest with three or more classes (one binary forest per class): a deletion or an
addition gives, node for node, the forest a fit on the remaining rows gives (deterministic
configuration); probabilities, decisions and the exported Ensemble agree; every engine answers
the export; what reads binary trees refuses the forest instead of answering wrongly."""

from __future__ import annotations

import numpy as np
import pytest
from dare_helpers import DETERMINISTIC, structure
from hypothesis import given, settings
from hypothesis import strategies as st

import veritas_dsl
from veritas_dsl.model.errors import ModelError
from veritas_dsl.unlearning import DareForest, ShardedForest, membership
from veritas_dsl.unlearning.adversary import worst_deletion
from veritas_dsl.unlearning.dare.derive import deleted
from veritas_dsl.unlearning.leakage import LeakageError, leakage
from veritas_dsl.unlearning.membership import MembershipError

from conftest import examples


@st.composite
def classed_data(draw):
    """Tied rows (few values per column) with 3 or 4 classes, each class at least twice."""
    classes = draw(st.integers(3, 4))
    n = draw(st.integers(2 * classes, 24))
    p = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = (rng.integers(0, 4, (n, p)) * 0.5 - 1.0).astype(np.float32)
    y = rng.integers(0, classes, n)
    y[: 2 * classes] = np.repeat(np.arange(classes), 2)
    return X, y, rng


def assert_refit(edited: DareForest, X: np.ndarray, y: np.ndarray) -> None:
    """Each member of ``edited`` is node for node the member a fit on its remaining rows
    gives."""
    keep = edited.remaining()
    fresh = DareForest(**edited.get_params()).fit(X[keep], y[keep])
    assert len(edited._members) == len(fresh._members)
    for mine, theirs in zip(edited._members, fresh._members, strict=True):
        assert structure(mine) == structure(theirs, keep)


@settings(max_examples=examples(0.3), deadline=None)
@given(data=classed_data(), n_trees=st.integers(1, 2), max_depth=st.integers(0, 4))
def test_deletions_and_additions_equal_a_fit_node_for_node(data, n_trees, max_depth):
    X, y, rng = data
    forest = DareForest(n_trees=n_trees, max_depth=max_depth, **DETERMINISTIC).fit(X, y)
    assert_refit(forest, X, y)
    for _ in range(6):
        alive = forest.remaining()
        # Keep two rows of every class, so that a fit on the rest learns every class.
        spare = [r for r in alive if np.sum(y[alive] == y[r]) > 2]
        if spare and rng.random() < 0.7:
            forest.delete(rng.choice(spare, 1))
        else:
            source = rng.integers(0, len(X), 2)
            forest.add(X[source], y[source])
            X, y = np.concatenate([X, X[source]]), np.concatenate([y, y[source]])
        assert_refit(forest, X, y)


def test_a_deletion_of_many_rows_at_once_equals_a_fit():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])  # three classes
    forest = DareForest(n_trees=2, max_depth=4, **DETERMINISTIC).fit(X, y)
    forest.delete(rng.choice(300, 120, replace=False))  # beyond ONE_BY_ONE: each tree at once
    assert_refit(forest, X, y)


@pytest.fixture(scope="module")
def forest():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    y = np.array(["low", "mid", "high"])[np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.6, 0.6])]
    return DareForest(n_trees=4, max_depth=3, random_state=5).fit(X, y), X, y


def test_probabilities_decisions_and_the_export_agree(forest):
    model, X, y = forest
    assert model.classes_.tolist() == ["high", "low", "mid"] and model.multiclass
    p = model.predict_proba(X)
    assert p.shape == (200, 3) and np.allclose(p.sum(axis=1), 1.0)
    assert model.score(X, y) > 0.7
    scores = np.column_stack([m.predict_proba(X)[:, 1] for m in model._members])
    exported = model.to_ensemble()
    assert exported.task == "multiclass" and exported.n_outputs == 3
    assert np.array_equal(exported.eval(X), scores)  # each output a member's probability
    decided = model.classes_[np.argmax(exported.eval(X), axis=1)]
    assert np.array_equal(decided, model.predict(X))
    # An int seed gives the same forest again; another seed another.
    again = DareForest(**model.get_params()).fit(X, y)
    assert np.array_equal(again.predict_proba(X), p)


@pytest.mark.parametrize("engine", ["astar", "milp", "sat"])
def test_every_engine_answers_the_export(forest, engine):
    model = forest[0]
    spec = veritas_dsl.parse(
        "model clf = dare\n"
        "features {\n    f0 : real in [-3, 3]\n    f1 : real in [-3, 3]\n    f2 : real in [-3, 3]\n}\n"
        f"query top {{\n    input x\n    maximize clf(x)[2]\n    solve with {engine}\n}}\n",
        models={"clf": model},
    )
    (run,) = spec.run(timeout_s=60)
    assert run.result.termination == veritas_dsl.Termination.OPTIMAL
    witness = run.result.witnesses[0].inputs["x"].reshape(1, -1).astype(np.float32)
    value = model._members[2].predict_proba(witness)[0, 1]
    assert run.result.upper == pytest.approx(value, abs=1e-12)
    # No input scores higher: the grid of the member's thresholds, on a sample.
    grid = np.random.default_rng(1).uniform(-3, 3, (2000, 3)).astype(np.float32)
    assert model._members[2].predict_proba(grid)[:, 1].max() <= run.result.upper + 1e-12


def test_what_reads_binary_trees_refuses_it(forest):
    model, X, y = forest
    after = deleted(model, [1, 2])
    with pytest.raises(LeakageError, match="two classes"):
        leakage(model, after)
    with pytest.raises(MembershipError, match="two classes"):
        membership(model, [[1]], X[:20], y[:20], seeds=1, shadows=1)
    for call in (lambda: worst_deletion(model, 3), lambda: model.view(),
                 lambda: model.save("never.dare"), lambda: model.deletion_cost(1)):  # fmt: skip
        with pytest.raises(ModelError, match="two classes"):
            call()
    with pytest.raises(ModelError, match="two classes"):
        ShardedForest(n_shards=2).fit(X, y)
