"""Weighted distances (the language's ``scale``) in every engine.

The engines are checked against the oracle on random weighted queries in ``test_engines.py``
(family ``weighted_distance``); here the oracle itself is checked against a plain enumeration of
the float32 points that can be closest, weights of 1 against no weights, and the weights
against the answer they must change.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from veritas_dsl.float32 import next_down
from veritas_dsl.ir import Ball, MinimizeDistance, OutputConstraint, Query, Row
from veritas_dsl.ir.constructs import constructs
from veritas_dsl.ir.evaluate import distance, holds, model_outputs
from veritas_dsl.result import Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.oracle.engine import OracleEngine

from conftest import build, examples
from reference.ir import features, out, term
from reference.strategies import WEIGHTS, ensembles, queries, rows

ORACLE = OracleEngine()
ENGINES = ("astar", "milp", "sat", "oracle")


@st.composite
def row_queries(draw) -> Query:
    """A weighted closest point to a row, maybe inside a weighted ball around it."""
    n = 3
    model = draw(ensembles(n_features=n))
    row = draw(rows(n))
    weights = tuple(draw(st.lists(st.sampled_from(WEIGHTS), min_size=n, max_size=n)))
    norm = draw(st.sampled_from(["l1", "linf"]))
    constraints = [OutputConstraint(term(out()), draw(st.sampled_from([">", "<"])), 0.0)]
    if draw(st.booleans()):
        radius = draw(st.sampled_from([0.3, 1.0, 2.0]))
        constraints.append(Ball(draw(st.sampled_from(["l1", "linf"])), "x", row, radius, weights))
    goal = MinimizeDistance(norm, "x", row, weights)
    space = features([f"x{i}" for i in range(n)])
    return Query("weighted", space, ("x",), {"m": model}, tuple(constraints), goal)


def enumerated_optimum(query: Query) -> float:
    """The least weighted distance over every point whose coordinates are the row's value, a
    threshold or the float32 just below one: the closest point of any cell of the models' splits
    is among them (each coordinate as close to the row as its cell allows)."""
    model = query.models["m"]
    row = query.goal.center.values
    candidates = []
    for f in range(query.n_features):
        thresholds = model.threshold[model.feature == f].tolist()
        values = {row[f], *thresholds, *(next_down(t) for t in thresholds)}
        candidates.append(sorted(values))
    best = math.inf
    for point in itertools.product(*candidates):
        inputs = {"x": np.array(point, dtype=np.float32)}
        margins = model_outputs(query, inputs)
        if all(holds(c, inputs, margins) for c in query.constraints):
            goal = query.goal
            best = min(best, distance(goal.norm, inputs["x"], np.float32(row), goal.weights))
    return best


@settings(max_examples=examples(4))
@given(query=row_queries())
def test_the_oracle_finds_the_enumerated_weighted_optimum(query):
    result = ORACLE.solve(query)
    expected = enumerated_optimum(query)
    if math.isinf(expected):
        assert result.termination is Termination.INFEASIBLE
    else:
        assert result.termination is Termination.OPTIMAL
        assert result.upper == expected


def _with_weights(query: Query, weights) -> Query:
    constraints = tuple(
        replace(c, weights=weights) if isinstance(c, Ball) else c for c in query.constraints
    )
    goal = query.goal
    if isinstance(goal, MinimizeDistance):
        goal = replace(goal, weights=weights)
    return replace(query, constraints=constraints, goal=goal)


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("family", ["linf", "l1", "min_linf", "min_l1", "two_instances"])
def test_weights_of_one_answer_as_no_weights(name, family):
    engine = registry.get(name)

    def answer(query):
        try:
            result = engine.solve(query, Limits(timeout_s=20))
        except UnsupportedQuery:
            return "refused"
        return result.termination, result.lower, result.upper

    @settings(max_examples=examples(0.6))
    @given(query=queries(family))
    def run(query):
        plain = _with_weights(query, None)
        if not constructs(plain) <= engine.capabilities.constructs:
            return  # sat takes no l1
        assert answer(_with_weights(query, (1.0,) * query.n_features)) == answer(plain)

    run()


@pytest.mark.parametrize(
    "name, norm",
    [(name, norm) for name in ENGINES for norm in ("l1", "linf") if (name, norm) != ("sat", "l1")],
)  # sat takes no l1 (declared; test_engines checks that it refuses)
def test_a_weight_changes_which_point_is_closest(name, norm):
    """Approved at x0 >= 4 or x1 >= 2, from (0, 0): unweighted, x1 moves (2 < 4); with x1
    weighing 3 and x0 1, x0 moves (4 < 6)."""
    model = build([(0, 4.0, (1, 2.0, -1.0, 1.0), 1.0)], 2)
    row = Row((0.0, 0.0))
    approved = (OutputConstraint(term(out()), ">", 0.0),)
    space = features(["x0", "x1"])
    engine = registry.get(name)
    for weights, value, point in ((None, 2.0, (0.0, 2.0)), ((1.0, 3.0), 4.0, (4.0, 0.0))):
        goal = MinimizeDistance(norm, "x", row, weights)
        query = Query("w", space, ("x",), {"m": model}, approved, goal)
        result = engine.solve(query, Limits(timeout_s=20))
        assert (result.termination, result.upper) == (Termination.OPTIMAL, value)
        assert tuple(result.witnesses[0].inputs["x"].tolist()) == point


@example(weights=(0.1, 3.0, 1.0))
@given(weights=st.lists(st.sampled_from(WEIGHTS), min_size=3, max_size=3).map(tuple))
@settings(max_examples=examples(0.4))
def test_every_engine_gives_the_same_weighted_linf_optimum(weights):
    """A three-feature forest, a weighted L-inf closest point: the four engines agree."""
    model = build(
        [(0, 0.5, (1, 1.0, -1.0, 0.5), (2, -0.5, 0.5, -1.0)), (1, 0.25, -0.5, (0, 2.0, 0.0, 1.0))],
        3,
    )
    row = Row((0.1, -0.5, 2.5))
    approved = (OutputConstraint(term(out()), ">", 0.0),)
    query = Query(
        "w", features(["x0", "x1", "x2"]), ("x",), {"m": model}, approved,
        MinimizeDistance("linf", "x", row, weights),
    )  # fmt: skip
    answers = {
        name: registry.get(name).solve(query, Limits(timeout_s=20)).upper for name in ENGINES
    }
    assert len(set(answers.values())) == 1, answers
