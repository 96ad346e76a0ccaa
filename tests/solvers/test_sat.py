"""The SAT engine on hand-built ensembles with answers known by hand, on the float32 and float64
edge cases its encoding has to get exactly right, and against the oracle on values that do not
scale to integers (the rounding path). Every witness is validated on the model
(``validate_witness``), and every exact answer is compared with the oracle's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.ir import (
    AnyOf,
    AtMostKChanged,
    Ball,
    DomainKind,
    Feature,
    Find,
    Interval,
    Linear,
    LinearTerm,
    Maximize,
    Minimize,
    MinimizeDistance,
    OneHot,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Prove,
    Query,
    Row,
    Tie,
)
from veritas_dsl.ir.float32 import ball_interval, next_down
from veritas_dsl.result import Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.solvers.sat.engine import SatEngine
from veritas_dsl.solvers.sat.voting import negate_votes, vote_counts, wins
from veritas_dsl.validate import validate_witness

from conftest import build
from reference.grid import grid_points

SAT = SatEngine()
ORACLE = OracleEngine()


def out(instance="x", model="m", coef=1.0, output=0):
    return OutputAtom(coef, model, instance, output)


def term(*atoms, constant=0.0):
    return OutputTerm(tuple(atoms), constant)


def features(model, kinds=None, bounds=None):
    kinds = kinds or [DomainKind.REAL] * model.n_features
    bounds = bounds or [(-math.inf, math.inf)] * model.n_features
    return tuple(
        Feature(name, kind, lo, hi)
        for name, kind, (lo, hi) in zip(model.feature_names, kinds, bounds, strict=True)
    )


def query_of(model, goal, constraints=(), instances=("x",), **feature_args):
    return Query(
        "q", features(model, **feature_args), instances, {"m": model}, tuple(constraints), goal
    )


def solve(model, goal, constraints=(), instances=("x",), check=True, **feature_args):
    """SAT's answer, its witnesses validated, and (``check``) equal to the oracle's."""
    query = query_of(model, goal, constraints, instances, **feature_args)
    result = SAT.solve(query, Limits(timeout_s=30))
    for witness in result.witnesses:
        validate_witness(query, witness)
    if check:
        expected = ORACLE.solve(query)
        assert result.termination == expected.termination
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
        SAT.solve(query)
    with pytest.raises(UnsupportedQuery, match="engines that can: oracle"):
        registry.check_supports(SAT, query)


def test_l1_distance_goal_is_refused(two_trees):
    query = query_of(two_trees, MinimizeDistance("l1", "x", Row((0.0, 0.0))))
    with pytest.raises(UnsupportedQuery, match="l1"):
        SAT.solve(query)


def test_three_instances_compared_on_one_feature_are_refused(two_trees):
    chain = [Ball("linf", "x2", "x1", 0.5), Ball("linf", "x3", "x2", 0.5)]
    query = query_of(two_trees, Maximize(term(out("x3"))), chain, instances=("x1", "x2", "x3"))
    with pytest.raises(UnsupportedQuery, match="at most two instances"):
        SAT.solve(query)


# -- one instance ---------------------------------------------------------------------------------


def test_global_max_and_min(two_trees):
    best = solve(two_trees, Maximize(term(out())))
    assert (best.termination, best.lower, best.upper) == (Termination.OPTIMAL, 7.0, 7.0)
    assert best.witnesses[0].value == 7.0
    worst = solve(two_trees, Minimize(term(out())))
    assert worst.lower == worst.upper == worst.witnesses[0].value == -3.0


def test_trace_brackets_the_optimum(two_trees):
    result = solve(two_trees, Maximize(term(out(), constant=0.5)))
    assert result.trace
    for point in result.trace:
        assert point.lower <= 7.5 <= point.upper
    assert (result.trace[-1].lower, result.trace[-1].upper) == (7.5, 7.5)


def test_float32_edges_of_a_split(two_trees):
    # x0 < 1 goes left: the largest float32 below 1 stays left, 1 itself goes right.
    assert (
        solve(two_trees, Maximize(term(out())), [Interval("x", 0, -5, next_down(1.0))]).lower == 1.5
    )
    assert solve(two_trees, Maximize(term(out())), [Interval("x", 0, 1.0, 1.0)]).lower == 3.5
    # A float64 bound between two float32 values admits only the float32 values inside it.
    assert (
        solve(two_trees, Maximize(term(out())), [Interval("x", 0, 0.0, 1.0 - 1e-12)]).lower == 1.5
    )


def test_int_domain_rounds_thresholds(two_trees):
    kinds = [DomainKind.INT, DomainKind.REAL]
    result = solve(two_trees, Maximize(term(out())), kinds=kinds, bounds=[(0, 1.9), (0, 10)])
    assert result.lower == 3.5
    assert result.witnesses[0].inputs["x"][0] == 1.0
    # 0.5 <= x0 <= 0.9 holds no integer: infeasible
    empty = solve(
        two_trees, Find(), [Interval("x", 0, 0.5, 0.9)], kinds=kinds, bounds=[(-5, 5), (0, 10)]
    )
    assert empty.termination == Termination.INFEASIBLE


def test_one_hot(one_hot_trees):
    kinds = [DomainKind.BOOL] * 3
    assert solve(one_hot_trees, Maximize(term(out())), kinds=kinds).lower == 8.0
    group = [OneHot("x", (0, 1, 2))]
    best = solve(one_hot_trees, Maximize(term(out())), group, kinds=kinds)
    assert best.lower == 6.0
    assert best.witnesses[0].inputs["x"].tolist() == [1.0, 0.0, 0.0]
    assert solve(one_hot_trees, Minimize(term(out())), group, kinds=kinds).lower == 3.0


def test_at_most_k_changed(two_trees):
    row = Row((0.0, 3.0))
    assert solve(two_trees, Maximize(term(out())), [AtMostKChanged("x", row, 0)]).lower == 0.0
    one = solve(two_trees, Maximize(term(out())), [AtMostKChanged("x", row, 1)])
    assert one.lower == 1.5
    assert one.witnesses[0].inputs["x"][0] == 0.0
    assert solve(two_trees, Maximize(term(out())), [AtMostKChanged("x", row, 2)]).lower == 7.0


def test_changed_with_a_fractional_reference_of_an_int_feature(two_trees):
    # An integer can never equal 0.5, so x0 always counts as changed.
    row = Row((0.5, 3.0))
    kinds = [DomainKind.INT, DomainKind.REAL]
    bounds = [(-5, 5), (-10, 10)]
    result = solve(
        two_trees, Maximize(term(out())), [AtMostKChanged("x", row, 1)], kinds=kinds, bounds=bounds
    )
    assert result.lower == 0.0


def test_linf_ball_ends_exactly_on_a_threshold(two_trees):
    # |x0 - 0.5| <= 0.5 reaches x0 = 1 exactly, which goes right.
    center = Row((0.5, 0.0))
    assert solve(two_trees, Maximize(term(out())), [Ball("linf", "x", center, 0.5)]).lower == 3.5
    # a radius a hair short of 0.5 stops at the float32 just below 1
    short = next_down(0.5)
    assert ball_interval(0.5, short)[1] < 1.0
    assert solve(two_trees, Maximize(term(out())), [Ball("linf", "x", center, short)]).lower == 1.5


def test_prove_holds_and_fails(two_trees):
    conclusion = (
        OutputConstraint(term(out()), ">=", 1.5),
        OutputConstraint(term(out()), "<=", 1.5),
    )
    near = [Ball("linf", "x", Row((0.0, 0.0)), 0.5)]
    assert solve(two_trees, Prove(conclusion), near).termination == Termination.INFEASIBLE
    wider = [Ball("linf", "x", Row((0.0, 0.0)), 1.0)]
    result = solve(two_trees, Prove(conclusion), wider)
    assert result.termination == Termination.OPTIMAL
    assert two_trees.eval(result.witnesses[0].inputs["x"])[0] != 1.5


def test_output_constraints_at_their_thresholds(two_trees):
    above = solve(two_trees, Find(), [OutputConstraint(term(out()), ">", 7.0)])
    assert above.termination == Termination.INFEASIBLE
    # leaf values are exact in float64 here, so the encoding is exact: no model is excluded late
    assert above.stats["excluded_by_rounding"] == 0
    found = solve(two_trees, Find(), [OutputConstraint(term(out()), ">=", 7.0)])
    assert two_trees.eval(found.witnesses[0].inputs["x"])[0] == 7.0
    below = solve(two_trees, Maximize(term(out())), [OutputConstraint(term(out()), "<", 7.0)])
    assert below.lower == 3.5


def test_disjunctions(two_trees):
    either = AnyOf(((Interval("x", 0, -math.inf, 0.5),), (Interval("x", 1, 2.0, math.inf),)))
    assert solve(two_trees, Maximize(term(out())), [either]).lower == 1.5
    mixed = AnyOf(
        (
            (OutputConstraint(term(out()), "<", 0.0),),
            (Interval("x", 0, 1.0, 1.5), Interval("x", 1, 1.0, 1.5)),
        )
    )
    assert solve(two_trees, Maximize(term(out())), [mixed]).lower == 2.0
    nothing = solve(two_trees, Maximize(term(out())), [AnyOf(())])
    assert (nothing.termination, nothing.lower) == (Termination.INFEASIBLE, -math.inf)


def test_closest_example(two_trees):
    origin = Row((0.0, 0.0))
    high = [OutputConstraint(term(out()), ">", 5.0)]
    result = solve(two_trees, MinimizeDistance("linf", "x", origin), high)
    assert result.lower == result.upper == 2.0
    assert result.witnesses[0].inputs["x"].tolist() == [2.0, 0.0]
    # a threshold just off the float32 grid: the closest point is the float32 above it
    result = solve(two_trees, MinimizeDistance("linf", "x", Row((0.1, 0.0))), high)
    assert result.lower == float(np.float32(2.0)) - float(np.float32(0.1))


# -- two instances --------------------------------------------------------------------------------


def test_tie_between_instances(two_trees):
    gap = term(out("x2"), out("x1", coef=-1.0))
    result = solve(two_trees, Maximize(gap), [Tie("x1", "x2", 1)], instances=("x1", "x2"))
    assert result.lower == 5.5
    w = result.witnesses[0].inputs
    assert w["x1"][1] == w["x2"][1]


def test_tie_inside_a_disjunction(two_trees):
    gap = term(out("x2"), out("x1", coef=-1.0))
    tie_or_box = AnyOf(((Tie("x1", "x2", 0), Tie("x1", "x2", 1)), (Interval("x2", 0, 0, 0.5),)))
    result = solve(two_trees, Maximize(gap), [tie_or_box], instances=("x1", "x2"))
    assert result.lower == 4.5  # x2 in the box: 1.5 at best; x1 anywhere: -3 at worst


def test_ball_between_instances_at_float32_precision(two_trees):
    gap = term(out("x2"), out("x1", coef=-1.0))
    result = solve(
        two_trees, Maximize(gap), [Ball("linf", "x2", "x1", 0.25)], instances=("x1", "x2")
    )
    assert result.lower == 5.0  # from 2 at (2, 1) to 7 at (2, 0.75)
    # from x1 = 1 (right of the split at 1) to x2 = next_down(1) (left) is one float32 step
    step = 1.0 - next_down(1.0)
    for radius, expected in ((step, 3.0), (step / 2, 0.0)):
        gap01 = term(out("x2"), out("x1", coef=-1.0))
        close = [Ball("linf", "x2", "x1", radius), Interval("x1", 0, 1.0, 1.5)]
        assert solve(two_trees, Maximize(gap01), close, instances=("x1", "x2")).lower == expected


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


def test_distance_between_instances(two_trees):
    constraints = [
        OutputConstraint(term(out("x1")), "<=", 1.5),
        OutputConstraint(term(out("x2")), ">=", 7.0),
        Interval("x1", 1, 0.0, 0.0),
    ]
    result = solve(
        two_trees, MinimizeDistance("linf", "x2", "x1"), constraints, instances=("x1", "x2")
    )
    assert result.lower == 2.0 - next_down(1.0)


def test_changed_between_instances(two_trees):
    gap = term(out("x2"), out("x1", coef=-1.0))
    result = solve(
        two_trees, Maximize(gap), [AtMostKChanged("x2", "x1", 1)], instances=("x1", "x2")
    )
    assert result.lower == 10.0
    w = result.witnesses[0].inputs
    assert int(np.count_nonzero(w["x1"] != w["x2"])) <= 1


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


@settings(max_examples=60, deadline=None)
@given(awkward_queries())
def test_rounding_path_matches_the_oracle(query):
    result = SAT.solve(query)
    expected = ORACLE.solve(query)
    for witness in result.witnesses:
        validate_witness(query, witness)
    assert result.termination == expected.termination  # UNSAT is never contradicted
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
    assert (stopped.lower, stopped.upper) == (-math.inf, math.inf)
    exact = SAT.solve(query)
    assert exact.termination == Termination.OPTIMAL
    short = SAT.solve(query, Limits(timeout_s=0.05))
    assert short.lower <= exact.lower <= short.upper
    for witness in short.witnesses:
        validate_witness(query, witness)
        assert witness.value <= exact.lower
    for point in exact.trace:
        assert point.lower <= exact.lower <= point.upper


# -- hard voting (a construct proposed for the IR, solvers/sat/voting.py) -------------------------


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
            query = query_of(model, Find(), [Ball("linf", "x", Row(tuple(row)), radius)])
            flips = negate_votes(wins("m", "x", label, n_classes))
            result = SAT.solve(query, votes=(flips,))
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
