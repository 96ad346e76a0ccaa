"""The brute-force oracle: its limits, and its answers against the threshold grid
(tests/reference/grid.py) on random small ensembles. The questions answered by hand are asked of
every engine, the oracle included, in test_hand_cases.py."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from veritas_dsl.ir import (
    Ball,
    Interval,
    Maximize,
    Minimize,
    MinimizeDistance,
    OutputConstraint,
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


def test_size_is_counted_inside_the_query_box():
    # 200 trees of 4 leaves each, but a box that every split decides: one combination.
    trees = [(0, 0.0, (1, 0.0, 1.0, 2.0), (1, 0.0, 3.0, 4.0))] * 200
    model = build(trees, 2)
    box = (Interval("x", 0, 0.5, 1.0), Interval("x", 1, -1.0, -0.5))
    query = Query("small box", features(model), ("x",), {"m": model}, box, Maximize(term(out())))
    result = OracleEngine(max_combinations=10).solve(query)
    assert result.lower == result.upper == 200 * 3.0
    with pytest.raises(UnsupportedQuery, match="tiny ensembles"):
        OracleEngine(max_combinations=10).solve(replace(query, constraints=()))


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
