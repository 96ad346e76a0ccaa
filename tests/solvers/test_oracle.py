"""The brute-force oracle on hand-built ensembles whose answers are known by hand, and against the
threshold grid (tests/reference/grid.py) on random small ensembles."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from veritas_dsl.ir import (
    AnyOf,
    AtMostKChanged,
    Ball,
    DomainKind,
    Find,
    Interval,
    Linear,
    LinearTerm,
    Maximize,
    Minimize,
    MinimizeDistance,
    OneHot,
    OutputConstraint,
    Prove,
    Query,
    Row,
    Tie,
)
from veritas_dsl.result import Termination
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.validate import validate_witness

from conftest import build
from reference.grid import cells, grid_points, representative
from reference.ir import features, out, term

ORACLE = OracleEngine()


def solve(model, goal, constraints=(), instances=("x",), **feature_args):
    query = Query(
        "q", features(model, **feature_args), instances, {"m": model}, tuple(constraints), goal
    )
    result = ORACLE.solve(query)
    for witness in result.witnesses:
        validate_witness(query, witness)  # every witness satisfies the query, exactly
    return result


# -- single instance: optimisation over boxes ----------------------------------------------------


def test_global_max_and_min(two_trees):
    best = solve(two_trees, Maximize(term(out())))
    assert (best.termination, best.lower, best.upper) == (Termination.OPTIMAL, 7.0, 7.0)
    x = best.witnesses[0].inputs["x"]
    assert x[0] >= 2 and x[1] < 1
    worst = solve(two_trees, Minimize(term(out())))
    assert worst.lower == worst.upper == -3.0


def test_box_constraint_restricts_the_optimum(two_trees):
    result = solve(two_trees, Maximize(term(out())), [Interval("x", 0, 0.0, 1.5)])
    assert result.lower == 3.5


def test_strict_threshold_edges(two_trees):
    # x0 <= next_down(1) stays left of the split x0 < 1: only 1.5 is reachable with x1 < 1.
    below_one = float(np.nextafter(np.float32(1), np.float32(0)))
    result = solve(two_trees, Maximize(term(out())), [Interval("x", 0, -5, below_one)])
    assert result.lower == 1.5
    result = solve(two_trees, Maximize(term(out())), [Interval("x", 0, 1.0, 1.0)])
    assert result.lower == 3.5


def test_affine_term_with_constant(two_trees):
    result = solve(two_trees, Minimize(term(out(coef=-2.0), constant=1.0)))
    assert result.lower == 1.0 - 2.0 * 7.0


def test_int_domain(two_trees):
    bounds = [(0, 1.9), (0, 10)]
    result = solve(
        two_trees, Maximize(term(out())), kinds=[DomainKind.INT, DomainKind.REAL], bounds=bounds
    )
    assert result.lower == 3.5
    assert result.witnesses[0].inputs["x"][0] == 1.0


def test_infeasible_find_and_its_bounds(two_trees):
    constraints = [Interval("x", 0, 0.0, 0.5), OutputConstraint(term(out()), ">", 2.0)]
    assert solve(two_trees, Find(), constraints).termination == Termination.INFEASIBLE
    result = solve(two_trees, Maximize(term(out())), constraints)
    assert (result.termination, result.lower, result.upper) == (
        Termination.INFEASIBLE,
        -math.inf,
        -math.inf,
    )
    result = solve(two_trees, Minimize(term(out())), constraints)
    assert result.lower == result.upper == math.inf


def test_output_constraint_with_strictness(two_trees):
    assert (
        solve(two_trees, Find(), [OutputConstraint(term(out()), ">", 7.0)]).termination
        == Termination.INFEASIBLE
    )
    found = solve(two_trees, Find(), [OutputConstraint(term(out()), ">=", 7.0)])
    assert found.termination == Termination.OPTIMAL
    assert two_trees.eval(found.witnesses[0].inputs["x"])[0] == 7.0


# -- prove and disjunctions ----------------------------------------------------------------------


def test_prove_holds_and_fails(two_trees):
    conclusion = (
        OutputConstraint(term(out()), ">=", 1.5),
        OutputConstraint(term(out()), "<=", 1.5),
    )
    near_origin = [Ball("linf", "x", Row((0.0, 0.0)), 0.5)]
    assert solve(two_trees, Prove(conclusion), near_origin).termination == Termination.INFEASIBLE
    wider = [Ball("linf", "x", Row((0.0, 0.0)), 1.0)]
    result = solve(two_trees, Prove(conclusion), wider)
    assert result.termination == Termination.OPTIMAL
    assert two_trees.eval(result.witnesses[0].inputs["x"])[0] != 1.5


def test_disjunction_of_inputs(two_trees):
    either = AnyOf(((Interval("x", 0, -math.inf, 0.5),), (Interval("x", 1, 2.0, math.inf),)))
    assert solve(two_trees, Maximize(term(out())), [either]).lower == 1.5


def test_disjunction_mixing_outputs_and_inputs(two_trees):
    either = AnyOf(
        (
            (OutputConstraint(term(out()), "<", 0.0),),
            (Interval("x", 0, 1.0, 1.5), Interval("x", 1, 1.0, 1.5)),
        )
    )
    assert solve(two_trees, Maximize(term(out())), [either]).lower == 2.0


# -- one-hot, changed, linear --------------------------------------------------------------------


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


def test_linear_constraint(two_trees):
    budget = Linear((LinearTerm(1.0, "x", 0), LinearTerm(1.0, "x", 1)), "<=", 1.5)
    assert solve(two_trees, Maximize(term(out())), [budget]).lower == 7.0  # x1 may go negative
    nonnegative = Interval("x", 1, 0.0, math.inf)
    assert solve(two_trees, Maximize(term(out())), [budget, nonnegative]).lower == 3.5


# -- distances -----------------------------------------------------------------------------------


@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_closest_example_with_high_output(two_trees, norm):
    origin = Row((0.0, 0.0))
    result = solve(
        two_trees, MinimizeDistance(norm, "x", origin), [OutputConstraint(term(out()), ">", 5.0)]
    )
    assert result.lower == result.upper == 2.0
    assert result.witnesses[0].inputs["x"].tolist() == [2.0, 0.0]
    result = solve(
        two_trees, MinimizeDistance(norm, "x", origin), [OutputConstraint(term(out()), ">=", 2.0)]
    )
    assert result.lower == 1.0


def test_l1_ball_constraint(two_trees):
    ball = Ball("l1", "x", Row((0.5, 0.5)), 1.0)
    assert solve(two_trees, Maximize(term(out())), [ball]).lower == 3.5  # x0 = 1.5 is at distance 1
    small = Ball("l1", "x", Row((0.5, 0.5)), 0.49)
    assert solve(two_trees, Maximize(term(out())), [small]).lower == 1.5


def test_l1_distance_with_changed_limit(two_trees):
    row = Row((0.0, 3.0))
    result = solve(
        two_trees,
        MinimizeDistance("l1", "x", row),
        [OutputConstraint(term(out()), ">", 1.0), AtMostKChanged("x", row, 1)],
    )
    assert result.lower == float(np.float32(3.0)) - float(
        np.nextafter(np.float32(1), np.float32(0))
    )


# -- two instances -------------------------------------------------------------------------------


def test_two_instances_with_a_tie(two_trees):
    gap = term(out("x2"), out("x1", coef=-1.0))
    result = solve(two_trees, Maximize(gap), [Tie("x1", "x2", 1)], instances=("x1", "x2"))
    assert result.lower == 5.5
    w = result.witnesses[0].inputs
    assert w["x1"][1] == w["x2"][1]


def test_two_instances_with_ball_between_them(two_trees):
    gap = term(out("x2"), out("x1", coef=-1.0))
    close = [Ball("linf", "x2", "x1", 0.25)]
    result = solve(two_trees, Maximize(gap), close, instances=("x1", "x2"))
    assert result.lower == 5.0  # from 2 at (2, 1) to 7 at (2, 0.75)
    result = solve(two_trees, Maximize(gap), [Ball("l1", "x2", "x1", 0.25)], instances=("x1", "x2"))
    assert result.lower == 5.0


def test_distance_between_instances(two_trees):
    constraints = [
        OutputConstraint(term(out("x1")), "<=", 1.5),
        OutputConstraint(term(out("x2")), ">=", 7.0),
        Interval("x1", 1, 0.0, 0.0),
    ]
    result = solve(
        two_trees, MinimizeDistance("linf", "x2", "x1"), constraints, instances=("x1", "x2")
    )
    assert result.lower == pytest.approx(2.0 - float(np.nextafter(np.float32(1), np.float32(0))))


def test_changed_between_instances(two_trees):
    gap = term(out("x2"), out("x1", coef=-1.0))
    result = solve(
        two_trees, Maximize(gap), [AtMostKChanged("x2", "x1", 1)], instances=("x1", "x2")
    )
    # only x1 may differ: from -3 at (x0 >= 2, x1 >= 2) to 7 at (x0 >= 2, x1 < 1)
    assert result.lower == 10.0
    w = result.witnesses[0].inputs
    assert int(np.count_nonzero(w["x1"] != w["x2"])) <= 1


# -- multiclass ----------------------------------------------------------------------------------


def test_multiclass_margin_between_classes():
    model = build(
        [(0, 0.0, [1.0, 0.0, 0.0], [0.0, 1.0, 3.0]), (1, 0.0, [0.0, 2.0, 0.0], [0.5, 0.0, 0.0])],
        2,
        task="multiclass",
    )
    diff = term(out(output=2), out(output=0, coef=-1.0))
    assert solve(model, Maximize(diff)).lower == 3.0
    assert solve(model, Minimize(diff)).lower == -1.5


# -- limits --------------------------------------------------------------------------------------


def test_too_large_is_refused():
    rng = np.random.default_rng(0)
    trees = [
        (0, float(rng.normal()), (1, float(rng.normal()), 1.0, 2.0), (1, 0.5, 3.0, 4.0))
        for _ in range(12)
    ]
    model = build(trees, 2)
    query = Query("big", features(model), ("x",), {"m": model}, (), Maximize(term(out())))
    with pytest.raises(UnsupportedQuery, match="tiny ensembles"):
        OracleEngine(max_combinations=100).solve(query)


def test_time_limit_gives_valid_trivial_bounds(two_trees):
    query = Query("q", features(two_trees), ("x",), {"m": two_trees}, (), Maximize(term(out())))
    result = ORACLE.solve(query, Limits(timeout_s=0.0))
    assert result.termination in (Termination.TIME_LIMIT, Termination.OPTIMAL)
    assert result.lower <= 7.0 <= result.upper


# -- random small ensembles against the threshold grid -------------------------------------------


@st.composite
def small_ensembles(draw, n_features=2, max_trees=3):
    thresholds = st.sampled_from([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0])
    values = st.integers(-4, 4).map(float)

    def tree(depth):
        if depth == 0 or (draw(st.booleans()) and depth < 2):
            return draw(values)
        return (
            draw(st.integers(0, n_features - 1)),
            draw(thresholds),
            tree(depth - 1),
            tree(depth - 1),
        )

    n_trees = draw(st.integers(1, max_trees))
    return build([tree(2) for _ in range(n_trees)], n_features, base=draw(values) / 2)


@given(
    model=small_ensembles(),
    lo=st.sampled_from([-2.0, -0.5, 0.0]),
    hi=st.sampled_from([0.0, 0.6, 3.0]),
)
def test_box_optima_match_the_grid(model, lo, hi):
    bounds = [(lo, hi), (-math.inf, math.inf)]
    values = model.eval(grid_points([model], bounds))
    for goal, expected in (
        (Maximize(term(out())), values.max()),
        (Minimize(term(out())), values.min()),
    ):
        result = solve(model, goal, bounds=bounds)
        assert result.termination == Termination.OPTIMAL
        assert result.lower == result.upper == expected


@given(model=small_ensembles(), radius=st.sampled_from([0.1, 0.5, 1.0, 3.0]))
def test_fairness_gap_matches_the_grid(model, radius):
    gap = term(out("x2"), out("x1", coef=-1.0))
    result = solve(
        model,
        Maximize(gap),
        [Tie("x1", "x2", 1), Ball("linf", "x2", "x1", radius)],
        instances=("x1", "x2"),
    )
    points = grid_points([model], [(-5, 5), (-5, 5)])
    # x1 and x2 share feature 1 and differ by at most radius in feature 0: try every pair of points
    best = -math.inf
    for p in points:
        for q in points:
            if p[1] == q[1] and abs(Fraction(float(p[0])) - Fraction(float(q[0]))) <= Fraction(
                radius
            ):
                best = max(best, float(model.eval(q)[0] - model.eval(p)[0]))
    assert result.lower >= best  # the grid misses in-between points, so it can only fall short
    w = result.witnesses[0].inputs
    assert result.lower == model.eval(w["x2"])[0] - model.eval(w["x1"])[0]


def gap(a: float, b: float) -> Fraction:
    """max(0, a - b), exactly; nothing lies beyond an infinite end."""
    if not (math.isfinite(a) and math.isfinite(b)) or a <= b:
        return Fraction(0)
    return Fraction(float(a)) - Fraction(float(b))


@given(
    model=small_ensembles(),
    row=st.tuples(st.sampled_from([-1.0, 0.1, 0.5, 1.5]), st.sampled_from([-0.7, 0.0, 2.5])),
    norm=st.sampled_from(["linf", "l1"]),
    level=st.sampled_from([0.0, 1.0, 2.5]),
)
def test_closest_example_matches_the_cells(model, row, norm, level):
    """The exact distance from the row to the nearest grid cell whose output exceeds ``level``."""
    row = Row(row).values
    expected = math.inf
    for lo, hi in cells([model], 2):
        if model.eval(representative(lo, hi))[0] > level:
            gaps = [max(gap(lo[f], row[f]), gap(row[f], hi[f])) for f in range(2)]
            expected = min(expected, float(max(gaps) if norm == "linf" else sum(gaps)))
    result = solve(
        model, MinimizeDistance(norm, "x", Row(row)), [OutputConstraint(term(out()), ">", level)]
    )
    assert result.lower == result.upper == expected
