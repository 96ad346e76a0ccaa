"""The SAT engine: what it refuses, its trace, the float64 edge cases its encoding has to get
exactly right, the oracle on values that do not scale to integers (the rounding path), its time
limit and hard voting. Every witness is validated on the model (``validate_witness``), and every
exact answer is compared with the oracle's. The questions answered by hand are asked of every
engine in test_hand_cases.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.float32 import ball_interval
from veritas_dsl.ir import (
    Ball,
    Find,
    Linear,
    LinearTerm,
    Maximize,
    Minimize,
    MinimizeDistance,
    OutputConstraint,
    Query,
    Row,
    Tie,
)
from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.evaluate import vote_counts
from veritas_dsl.ir.logic import negate
from veritas_dsl.ir.query import vote_wins
from veritas_dsl.result import Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.solvers.sat.engine import SatEngine
from veritas_dsl.solvers.solve import solve as solve_checked
from veritas_dsl.validate import validate_witness

from conftest import build, examples
from reference.agreement import assert_agrees, check_witnesses
from reference.grid import grid_points
from reference.ir import features, out, term

SAT = SatEngine()
ORACLE = OracleEngine()


def query_of(model, goal, constraints=(), instances=("x",), **feature_args):
    return Query(
        "q", features(model, **feature_args), instances, {"m": model}, tuple(constraints), goal
    )


def solve(model, goal, constraints=(), instances=("x",), check=True, **feature_args):
    """SAT's answer, its witnesses validated, and (``check``) equal to the oracle's."""
    query = query_of(model, goal, constraints, instances, **feature_args)
    result = SAT.solve(query, Limits(timeout_s=30))
    check_witnesses(query, result)
    if check:
        expected = ORACLE.solve(query)
        assert_agrees(query, result, expected, engine="sat")
        assert (result.lower, result.upper) == (expected.lower, expected.upper)
    return result


# -- the registry and what is refused -------------------------------------------------------------


def test_registered():
    assert registry.get("sat") is registry.ENGINES["sat"]
    assert SAT.available()


@pytest.mark.parametrize(
    "constraint",
    [
        Ball("l1", "x", Row((0.0, 0.0)), 1.0),
        Linear((LinearTerm(1.0, "x", 0), LinearTerm(1.0, "x", 1)), "<=", 1.0),
    ],
)
def test_inexpressible_constraints_are_refused(two_trees, constraint):
    query = query_of(two_trees, Maximize(term(out())), [constraint])
    with pytest.raises(UnsupportedQuery, match="engine sat does not support"):
        solve_checked(SAT, query)
    with pytest.raises(UnsupportedQuery, match="engines that can: oracle"):
        registry.check_supports(SAT, query)


def test_l1_distance_goal_is_refused(two_trees):
    query = query_of(two_trees, MinimizeDistance("l1", "x", Row((0.0, 0.0))))
    with pytest.raises(UnsupportedQuery, match="l1"):
        solve_checked(SAT, query)


def test_three_instances_compared_on_one_feature_are_refused(two_trees):
    chain = [Ball("linf", "x2", "x1", 0.5), Ball("linf", "x3", "x2", 0.5)]
    query = query_of(two_trees, Maximize(term(out("x3"))), chain, instances=("x1", "x2", "x3"))
    with pytest.raises(UnsupportedQuery, match="at most two instances"):
        SAT.solve(query)


# -- one instance ---------------------------------------------------------------------------------


def test_trace_brackets_the_optimum(two_trees):
    result = solve(two_trees, Maximize(term(out(), constant=0.5)))
    assert result.trace
    for point in result.trace:
        assert point.lower <= 7.5 <= point.upper
    assert (result.trace[-1].lower, result.trace[-1].upper) == (7.5, 7.5)


def test_output_constraints_at_their_thresholds(two_trees):
    above = solve(two_trees, Find(), [OutputConstraint(term(out()), ">", 7.0)])
    assert above.termination == Termination.INFEASIBLE
    # leaf values are exact in float64 here, so the encoding is exact: no model is excluded late
    assert above.stats["excluded_by_rounding"] == 0
    found = solve(two_trees, Find(), [OutputConstraint(term(out()), ">=", 7.0)])
    assert two_trees.eval(found.witnesses[0].inputs["x"])[0] == 7.0
    below = solve(two_trees, Maximize(term(out())), [OutputConstraint(term(out()), "<", 7.0)])
    assert below.lower == 3.5


# -- two instances --------------------------------------------------------------------------------


def test_fairness_pairs_the_trees_of_two_tied_instances():
    # x1 and x2 share x1 and x2 but not x0: every tree becomes one group of compatible pairs
    # of leaves; trees that never split on x0 contribute nothing to the gap.
    trees = [(1, 0.5, (2, 0.0, 1.0, -1.0), 2.0), (0, 0.5, (1, 0.0, -1.0, 0.5), 3.0)]
    trees += [(2, 0.25, 0.5, (1, 1.0, -0.5, 1.5))] * 3
    model = build(trees, 3)
    gap = term(out("x2"), out("x1", coef=-1.0))
    ties = [Tie("x1", "x2", 1), Tie("x1", "x2", 2)]
    result = solve(model, Maximize(gap), ties, instances=("x1", "x2"))
    assert result.lower == 4.0  # x0 moves from below 0.5 (-1 at x1 < 0) to above (3)
    assert result.stats["paired_trees"] == 5


def test_multiclass_and_two_models():
    model = build(
        [(0, 0.0, [1.0, 0.0, 0.0], [0.0, 1.0, 3.0]), (1, 0.0, [0.0, 2.0, 0.0], [0.5, 0.0, 0.0])],
        2,
        task="multiclass",
    )
    diff = term(out(output=2), out(output=0, coef=-1.0))
    assert solve(model, Maximize(diff)).lower == 3.0
    assert solve(model, Minimize(diff)).lower == -1.5
    other = build([(0, 0.5, 1.0, -1.0)], 2)
    query = Query(
        "q",
        features(other),
        ("x",),
        {"m": other, "m2": build([(0, 0.0, 2.0, 0.0)], 2)},
        (),
        Maximize(term(out(model="m2"), out(coef=-1.0))),
    )
    assert SAT.solve(query).lower == ORACLE.solve(query).lower == 1.0


# -- float64 semantics: the rounding path ----------------------------------------------------------


def test_values_that_do_not_scale_to_integers():
    # 0.1 + 0.2 is 0.30000000000000004 in float64, above 0.3
    model = build([(0, 0.0, 0.1, 0.0), (1, 0.0, 0.2, 0.0)], 2)
    result = solve(model, Find(), [OutputConstraint(term(out()), ">", 0.3)])
    assert result.termination == Termination.OPTIMAL
    assert model.eval(result.witnesses[0].inputs["x"])[0] == 0.1 + 0.2


def test_a_sum_float64_rounds_away():
    # 1 + 1e-16 + 1e-16 is exactly above 1, but 1.0 in float64 (each addition rounds back).
    model = build([(0, 0.0, 1e-16, 0.0), (1, 0.0, 1e-16, 0.0)], 2, base=1.0)
    assert model.eval(np.array([[-1.0, -1.0]]))[0] == 1.0
    above = solve(model, Find(), [OutputConstraint(term(out()), ">", 1.0)])
    assert above.termination == Termination.INFEASIBLE
    at_most = solve(model, Maximize(term(out())), [OutputConstraint(term(out()), "<=", 1.0)])
    assert at_most.lower == at_most.upper == 1.0
    assert at_most.stats["excluded_by_rounding"] == 0  # the relaxation admits it at once


def test_float64_ties_in_the_objective():
    # Two combinations with different exact sums round to the same float64: the exact largest
    # is not the float64 largest's only witness; the answer is the float64 maximum.
    model = build([(0, 0.0, 1e-16, 0.0), (1, 0.0, 1e-16, 3e-16), (0, 1.0, 0.0, 1e-17)], 2, base=1.0)
    result = solve(model, Maximize(term(out())))
    grid = [model.eval(np.array([[a, b]]))[0] for a in (-1.0, 0.5, 2.0) for b in (-1.0, 1.0)]
    assert result.lower == result.upper == max(grid)


@st.composite
def awkward_queries(draw):
    """Leaf values that do not scale to integers, and output levels on reachable sums."""
    values = st.sampled_from([0.1, 0.2, 0.3, -0.1, 0.7, 1 / 3, 1e-16, -1e-16, 2.5, 0.0])
    thresholds = st.sampled_from([-1.0, 0.0, 0.5, 1.0])

    def tree(depth):
        if depth == 0 or draw(st.booleans()):
            return draw(values)
        return (draw(st.integers(0, 1)), draw(thresholds), tree(depth - 1), tree(depth - 1))

    model = build([tree(2) for _ in range(draw(st.integers(1, 4)))], 2, base=draw(values))
    point = np.array([[draw(st.sampled_from([-2.0, 0.2, 0.7, 3.0])) for _ in range(2)]])
    level = float(model.eval(point)[0])  # a sum the model reaches: a tie at the threshold
    op = draw(st.sampled_from(["<", "<=", ">", ">="]))
    goal = draw(st.sampled_from([Find(), Maximize(term(out())), Minimize(term(out()))]))
    constraints = [OutputConstraint(term(out(), constant=draw(values)), op, level)]
    if draw(st.booleans()):
        constraints.append(Ball("linf", "x", Row((0.2, 0.7)), draw(st.sampled_from([0.3, 1.0]))))
    return query_of(model, goal, constraints)


@settings(max_examples=examples(2.4), deadline=None)
@given(awkward_queries())
def test_rounding_path_matches_the_oracle(query):
    result = SAT.solve(query)
    expected = ORACLE.solve(query)
    assert_agrees(query, result, expected, engine="sat")  # UNSAT is never contradicted
    assert (result.lower, result.upper) == (expected.lower, expected.upper)


# -- time limit -----------------------------------------------------------------------------------


def _forest(n_trees, seed):
    rng = np.random.default_rng(seed)

    def tree(depth):
        if depth == 0:
            return float(rng.normal())
        return (int(rng.integers(4)), float(rng.normal()), tree(depth - 1), tree(depth - 1))

    return build([tree(4) for _ in range(n_trees)], 4)


def test_time_limit_keeps_valid_bounds():
    model = _forest(30, 0)
    query = query_of(model, Maximize(term(out())))
    stopped = SAT.solve(query, Limits(timeout_s=0.0))
    assert stopped.termination == Termination.TIME_LIMIT
    assert (stopped.lower, stopped.upper) == trivial_bounds(query)  # finite: the largest leaves
    assert math.isfinite(stopped.upper)
    exact = SAT.solve(query)
    assert exact.termination == Termination.OPTIMAL
    assert exact.upper <= stopped.upper
    short = SAT.solve(query, Limits(timeout_s=0.05))
    assert short.lower <= exact.lower <= short.upper
    for witness in short.witnesses:
        validate_witness(query, witness)
        assert witness.value <= exact.lower
    for point in exact.trace:
        assert point.lower <= exact.lower <= point.upper


# -- hard voting (VoteMargin) ----------------------------------------------------------------------


def _random_forest(n_classes, seed):
    from sklearn.ensemble import RandomForestClassifier

    from veritas_dsl.model import Ensemble

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 2)).astype(np.float32)
    y = np.digitize(
        X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=300), [-0.5, 0.5][: n_classes - 1]
    )
    forest = RandomForestClassifier(n_estimators=7, max_depth=3, random_state=seed).fit(X, y)
    return forest, Ensemble.from_sklearn(forest), X


def _hard_votes(forest, points):
    """Votes per class from scikit-learn's own trees: the reference."""
    labels = np.stack([tree.predict(points) for tree in forest.estimators_], axis=1).astype(int)
    return np.stack([(labels == c).sum(axis=1) for c in range(len(forest.classes_))], axis=1)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_hard_vote_robustness_matches_every_cell(n_classes):
    forest, model, X = _random_forest(n_classes, seed=n_classes)
    outcomes = set()
    for row in X[:6]:
        for radius in (0.05, 0.4):
            counts = _hard_votes(forest, row[None, :])[0]
            assert counts.tolist() == vote_counts(model, row[None, :])[0].tolist()
            label = int(np.argmax(counts))
            flips = negate(vote_wins("m", "x", label, n_classes))
            query = query_of(model, Find(), [Ball("linf", "x", Row(tuple(row)), radius), flips])
            result = SAT.solve(query)
            bounds = [ball_interval(float(c), radius) for c in row]
            points = grid_points([model], bounds)
            expected = np.argmax(_hard_votes(forest, points), axis=1) != label
            if result.termination == Termination.OPTIMAL:
                witness = result.witnesses[0]
                validate_witness(query, witness)
                assert np.argmax(_hard_votes(forest, witness.inputs["x"][None, :])[0]) != label
                assert expected.any()
            else:
                assert result.termination == Termination.INFEASIBLE
                assert not expected.any()  # no cell of the ball changes the vote
            outcomes.add(result.termination)
    assert outcomes == {Termination.OPTIMAL, Termination.INFEASIBLE}  # both answers exercised
