"""Footprint queries against their closed form.

In the deterministic configuration (``random_depth=0, k=None, max_features=None``), when deleting
one row changes no split, each tree changes only at the leaf the deleted row reached: its count
drops by one, and its positives too when the row was positive. That leaf's value ``p / c / n``
(``n`` trees) becomes ``(p - 1) / (c - 1) / n`` for a positive row, never larger since ``p <= c``,
and ``p / (c - 1) / n`` for a negative one, never smaller. So ``after(x) - before(x)`` is the sum
of the changes of the deleted row's leaves that ``x`` reaches, all of one sign: its minimum (a
deleted positive) or maximum (a deleted negative) is the sum of all the changes, reached where
``x`` reaches every one of those leaves, the intersection of their boxes (which holds the deleted
row).

Every engine's optimum must equal that sum to 1e-12: both sides add the same float64 leaf values,
but in different orders (the closed form subtracts leaf by leaf, an engine sums each forest), so
they may differ by a few units in the last place of values below 1, never more.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_classification

from veritas_dsl.ir import Maximize, Minimize, Query
from veritas_dsl.ir.query import Feature
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.solve import solve
from veritas_dsl.unlearning import DareForest, LeakageError, leakage
from veritas_dsl.unlearning.dare.tree import LEAF
from veritas_dsl.validate import validate_witness

from conftest import require
from reference.ir import features, out, term

ENGINES = ("astar", "milp", "sat", "oracle")
DETERMINISTIC = dict(k=None, max_features=None, random_depth=0)
SPLITS = ("kind", "feature", "threshold", "left", "right")


def data_sets():
    X, y = make_classification(80, 3, n_informative=2, n_redundant=0, random_state=1)
    yield "classification", X, y
    X, y = make_classification(120, 4, n_informative=3, n_redundant=0, flip_y=0.1, random_state=2)
    yield "noisy", X, y
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast_cancer", X[:150, :4], y[:150]


def unchanged_splits(before: DareForest, after: DareForest) -> bool:
    a, b = before.view(), after.view()
    return all(np.array_equal(getattr(a, n), getattr(b, n)) for n in SPLITS)


def closed_form(before: DareForest, after: DareForest, row: np.ndarray):
    """The leaf each tree sends ``row`` to and the sum of those leaves' changes."""
    view_b, view_a = before.view(), after.view()
    leaves = view_b.leaves(row)[0]
    assert np.all(view_b.kind[leaves] == LEAF)
    change = view_a.leaf_values()[leaves] - view_b.leaf_values()[leaves]
    return leaves, change, float(change.sum())


def cases():
    """Per data set, two single deletions of each label that change no split but some leaf
    (deleting a row from a pure leaf changes nothing)."""
    for name, X, y in data_sets():
        forest = DareForest(n_trees=3, max_depth=2, **DETERMINISTIC).fit(X, y)
        found = {0: 0, 1: 0}
        for row in range(len(X)):
            if found[int(y[row])] >= 2:
                continue
            after = copy.deepcopy(forest).delete([row])
            if unchanged_splits(forest, after) and closed_form(forest, after, X[row])[2] != 0:
                found[int(y[row])] += 1
                yield pytest.param(forest, after, X[row], int(y[row]), id=f"{name}-row{row}")
        assert found == {0: 2, 1: 2}, (name, found)


CASES = list(cases())


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("before, after, row, label", CASES)
def test_the_footprint_optimum_is_the_closed_form(name, before, after, row, label):
    engine = registry.get(name)
    require(engine)
    leaves, change, expected = closed_form(before, after, row)
    assert np.all(change <= 0) if label == 1 else np.all(change >= 0)
    models = {"before": before.to_ensemble(), "after": after.to_ensemble()}
    diff = term(out(model="after"), out(model="before", coef=-1.0))
    goal = Minimize(diff) if label == 1 else Maximize(diff)  # the informative direction
    query = Query("footprint", features(models["before"]), ("x",), models, (), goal)
    result = solve(engine, query)
    assert result.exact and result.witnesses, result
    assert math.isclose(result.lower, expected, rel_tol=0, abs_tol=1e-12), (result, expected)
    assert math.isclose(result.upper, expected, rel_tol=0, abs_tol=1e-12), (result, expected)
    witness = result.witnesses[0]
    validate_witness(query, witness)
    x = np.asarray(witness.inputs["x"], dtype=np.float32)
    changed = change != 0
    assert np.array_equal(before.view().leaves(x)[0][changed], leaves[changed])


@pytest.mark.parametrize("engine", ["astar", "milp"])
@pytest.mark.parametrize("before, after, row, label", CASES[:4] + CASES[-2:])
def test_leakage_reports_the_closed_form_box_and_the_rows_in_it(engine, before, after, row, label):
    found = leakage(before, after, engine=engine)
    leaves, _, expected = closed_form(before, after, row)
    extreme = found.minimum if label == 1 else found.maximum
    assert extreme.proven
    assert math.isclose(extreme.lower, expected, rel_tol=0, abs_tol=1e-12)
    assert math.isclose(extreme.upper, expected, rel_tol=0, abs_tol=1e-12)
    assert found.changed_trees == 2 * before.n_trees  # every tree changed its deleted row's leaf
    (deleted,) = found.deleted
    assert deleted in found.anonymity and found.anonymity_exact
    # The informative extreme's box is exactly where the rows reach the deleted row's leaves.
    X, _ = before.training_rows()
    same = np.all(before.view().leaves(X) == leaves, axis=1)
    assert extreme.rows == tuple(before.remaining()[same].tolist())
    assert extreme.deleted == (deleted,)
    low, high = np.array(extreme.box).T
    assert np.all((low <= row.astype(np.float32)) & (row.astype(np.float32) < high))


def test_leakage_with_and_without_cancelling_agrees():
    X, y = make_classification(80, 3, n_informative=2, n_redundant=0, random_state=3)
    before = DareForest(n_trees=4, max_depth=3, k=3, random_state=3).fit(X, y)
    for row in range(6):
        after = copy.deepcopy(before).delete([row])
        fast, slow = leakage(before, after), leakage(before, after, cancel=False)
        for a, b in ((fast.minimum, slow.minimum), (fast.maximum, slow.maximum)):
            assert a.proven and b.proven
            assert (a.lower, a.upper) == pytest.approx((b.lower, b.upper), abs=1e-12)
        assert fast.changed_trees == slow.changed_trees <= 2 * before.n_trees


def test_leakage_refuses_forests_that_are_not_before_and_after():
    X, y = make_classification(40, 3, n_informative=2, n_redundant=0, random_state=4)
    before = DareForest(n_trees=2, max_depth=2).fit(X, y)
    other = DareForest(n_trees=2, max_depth=2).fit(X + 1, y)
    with pytest.raises(LeakageError, match="not before with rows deleted"):
        leakage(before, other)
    with pytest.raises(LeakageError, match="not before with rows deleted"):
        leakage(copy.deepcopy(before).delete([1]), before)  # a row came back
    with pytest.raises(LeakageError, match="DareForest"):
        leakage(before.to_ensemble(), before)


def test_leakage_refuses_features_not_those_of_the_forests():
    X, y = make_classification(40, 3, n_informative=2, n_redundant=0, random_state=4)
    before = DareForest(n_trees=2, max_depth=2).fit(X, y)
    after = copy.deepcopy(before).delete([1])
    names = [Feature(name) for name in before.to_ensemble().feature_names]
    with pytest.raises(LeakageError, match="in that order"):
        leakage(before, after, features=tuple(reversed(names)))
    assert leakage(before, after, features=tuple(names)).features == ("f0", "f1", "f2")
