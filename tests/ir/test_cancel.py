"""CancelTrees: trees that a deletion left identical cancel in ``after(x) - before(x)`` before any
engine runs, and every engine answers footprint queries the same with and without it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.datasets import make_classification

from veritas_dsl.ir import (
    AnyOf,
    Find,
    Interval,
    Maximize,
    Minimize,
    OutputConstraint,
    Prove,
    Query,
    VoteMargin,
)
from veritas_dsl.ir.reductions import CancelTrees
from veritas_dsl.ir.reductions.cancel import cancelled_occurrences, without_trees
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.solvers.solve import solve
from veritas_dsl.unlearning import DareForest
from veritas_dsl.validate import validate_witness

from conftest import build, require
from reference.ir import features, out, term

ENGINES = ("astar", "milp", "sat", "oracle")


def pair(deleted: int = 0, n_trees: int = 4, seed: int = 0):
    """A small randomized DaRE forest before and after deleting one row; pure leaves leave
    many trees unchanged."""
    X, y = make_classification(60, 3, n_informative=2, n_redundant=0, random_state=seed)
    forest = DareForest(n_trees=n_trees, max_depth=2, k=3, random_state=seed).fit(X, y)
    before = forest.to_ensemble()
    return before, forest.delete([deleted]).to_ensemble()


def footprint(before, after, goal=Maximize, constraints=()) -> Query:
    diff = term(out(model="after"), out(model="before", coef=-1.0))
    models = {"before": before, "after": after}
    if goal is Find:
        return Query("fp", features(before), ("x",), models, constraints, Find())
    return Query("fp", features(before), ("x",), models, constraints, goal(diff))


def trees(query: Query) -> int:
    return sum(m.n_trees for m in query.models.values())


def changed_pair():
    """The first deletion of the data set that leaves some tree unchanged, and some changed."""
    for deleted in range(60):
        before, after = pair(deleted)
        reduced, _ = CancelTrees().apply(footprint(before, after))
        if 2 < trees(reduced) < before.n_trees + after.n_trees:
            return before, after
    raise AssertionError("no deletion of the data set leaves a tree unchanged")


def test_identical_trees_cancel_and_the_rest_stays():
    before, after = changed_pair()
    query = footprint(before, after)
    reduced, inverse = CancelTrees().apply(query)
    assert inverse is None
    assert trees(reduced) < trees(query)
    assert reduced.models.keys().isdisjoint({"before", "after"})  # originals are not read now
    rng = np.random.default_rng(0)
    X = rng.normal(0, 2, (500, before.n_features)).astype(np.float32)
    atoms = reduced.goal.term.atoms
    new = sum(a.coef * reduced.models[a.model].eval(X) for a in atoms)
    assert np.allclose(new, after.eval(X) - before.eval(X), rtol=0, atol=1e-12)


def test_a_pair_with_nothing_identical_is_untouched():
    a = build([(0, 0.5, 1.0, 2.0), (1, 0.5, 3.0, 4.0)], 2)
    b = build([(0, 0.5, 1.0, 2.5), (1, 0.25, 3.0, 4.0)], 2)  # a leaf and a threshold differ
    query = Query(
        "q",
        features(a),
        ("x",),
        {"after": a, "before": b},
        (),
        Maximize(term(out(model="after"), out(model="before", coef=-1.0))),
    )
    assert CancelTrees().apply(query) == (query, None)


def test_only_opposite_weights_on_the_same_instance_and_a_linear_term_cancel():
    a = build([(0, 0.5, 1.0, 2.0), (1, 0.5, 3.0, 4.0)], 2)
    same = {"after": a, "before": a}
    names = features(a)
    # Same sign, or two instances: nothing cancels.
    for atoms in (
        (out(model="after"), out(model="before")),
        (out(model="after"), out("y", model="before", coef=-1.0)),
    ):
        query = Query("q", names, ("x", "y"), same, (), Maximize(term(*atoms)))
        assert CancelTrees().apply(query)[0] is query
    # A vote compares a whole model with a threshold: it keeps reading the original.
    vote = VoteMargin("before", "x", 1, 0)
    diff = OutputConstraint(term(out(model="after"), out(model="before", coef=-1.0)), ">=", 0.1)
    query = Query("q", names, ("x",), same, (vote, AnyOf(((diff,),))), Find())
    reduced, _ = CancelTrees().apply(query)
    assert reduced.constraints[0] == vote and reduced.models["before"] is a
    (inner,) = reduced.constraints[1].alternatives[0]
    assert all(reduced.models[x.model].n_trees == 1 for x in inner.term.atoms)
    assert all(reduced.models[x.model].value.sum() == 0 for x in inner.term.atoms)


def test_weights_summing_to_zero_cancel_and_others_do_not():
    assert cancelled_occurrences([(0, 1.0), (1, -1.0), (2, 1.0)]) == {0, 1}
    assert cancelled_occurrences([(0, 1.0), (1, 1.0), (2, -2.0)]) == {0, 1, 2}
    assert cancelled_occurrences([(0, 0.1), (1, 0.2), (2, -0.3)]) == set()  # not exactly 0


def test_without_trees_keeps_the_rest_and_the_base_score():
    a = build([(0, 0.5, 1.0, 2.0), (1, 0.5, (0, 0.25, 5.0, 6.0), 4.0), 7.0], 2, base=0.5)
    kept = without_trees(a, frozenset({0}))
    X = np.random.default_rng(1).normal(0, 1, (200, 2)).astype(np.float32)
    assert kept.n_trees == 2 and kept.library is None
    assert np.array_equal(kept.eval(X), a.eval(X) - build([(0, 0.5, 1.0, 2.0)], 2).eval(X))


def answers(query: Query, name: str):
    """The engine's answer with the shared reductions (``solve``) and without (``engine.solve``)."""
    engine = registry.get(name)
    require(engine)
    return solve(engine, query), engine.solve(query)


def assert_same(result, expected, query: Query) -> None:
    assert result.solution == expected.solution, (result, expected)
    for got, want in ((result.lower, expected.lower), (result.upper, expected.upper)):
        assert (got is None) == (want is None)
        if got is not None:
            assert math.isclose(got, want, rel_tol=0, abs_tol=1e-12), (result, expected)
    for witness in result.witnesses:
        validate_witness(query, witness)  # on the original models and their library


@pytest.mark.parametrize("name", ENGINES)
def test_engines_agree_with_and_without_cancelling(name):
    before, after = changed_pair()
    oracle = registry.get("oracle")
    diff = term(out(model="after"), out(model="before", coef=-1.0))
    region = (Interval("x", 0, -0.5, 1.5),)
    queries = [
        footprint(before, after, Maximize),
        footprint(before, after, Minimize, region),
        footprint(before, after, Find, (OutputConstraint(diff, ">", 0.0), *region)),
        Query(
            "fp",
            features(before),
            ("x",),
            {"before": before, "after": after},
            region,
            Prove((OutputConstraint(diff, "<=", 0.05),)),
        ),
    ]
    for query in queries:
        expected = oracle.solve(query)  # the reference, as written
        assert expected.exact, expected
        for result in answers(query, name):
            assert_same(result, expected, query)


def test_solve_hands_every_engine_the_reduced_query_and_validates_on_the_originals():
    class Recording(OracleEngine):
        def solve_reduced(self, query, limits, *, progress=None):
            self.seen = query
            return super().solve_reduced(query, limits, progress=progress)

    before, after = changed_pair()
    query = footprint(before, after)
    engine = Recording()
    result = solve(engine, query)
    assert trees(engine.seen) < trees(query)
    assert result.witnesses
    for witness in result.witnesses:
        outputs = validate_witness(query, witness)  # the DaRE forests' own predict_proba
        found = outputs["after", "x"] - outputs["before", "x"]
        assert math.isclose(float(found[0]), result.upper, abs_tol=1e-12)
