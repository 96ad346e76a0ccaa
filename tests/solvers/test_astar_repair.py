"""The repair of an incumbent (``kernels.repair``): hill climbing over single cells from a
solution's point. A repaired point is a witness like any other: checked exactly, never above
the optimum, and the engine's bounds still bracket the oracle's when a limit stops it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.ir import Maximize, Minimize, Query
from veritas_dsl.ir.evaluate import term_value
from veritas_dsl.ir.reductions import Chain, MergeTies, MinimizeToMaximize, StaticBounds
from veritas_dsl.result import Termination
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.astar.problem import Plan, build_problem
from veritas_dsl.solvers.astar.repair import Repairer
from veritas_dsl.solvers.astar.witness import inside, point_of
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.oracle.engine import OracleEngine

from conftest import examples
from reference.agreement import check_witnesses, model_outputs
from reference.ir import features, out, term
from reference.strategies import COORDINATES, ensembles, queries

ORACLE = OracleEngine()
ENGINE = AStarEngine()
NAMES = ("x0", "x1", "x2", "x3", "x4", "x5")


def _problem(query: Query):
    reduced, _ = Chain((MinimizeToMaximize(), MergeTies(), StaticBounds())).apply(query)
    goal = reduced.goal
    return build_problem(reduced, Plan(K.MODE_MAXIMIZE, objective=goal.term)), reduced


@settings(max_examples=examples(2.0), deadline=None)
@given(
    model=ensembles(n_features=6, max_trees=6, max_depth=3),
    start=st.lists(st.sampled_from(COORDINATES[:8]), min_size=6, max_size=6),
    maximize=st.booleans(),
)
def test_a_repaired_point_is_checked_and_never_beats_the_optimum(model, start, maximize):
    goal = (Maximize if maximize else Minimize)(term(out()))
    query = Query("q", features(list(NAMES)), ("x",), {"m": model}, (), goal)
    problem, reduced = _problem(query)
    point = {"x": np.asarray(start, dtype=np.float32)}
    objective = reduced.goal.term
    before = term_value(objective, model_outputs(reduced, point))
    better = Repairer(problem).repaired(point, 1.0)
    optimum = ORACLE.solve(reduced).lower
    if better is None:
        return
    inputs = point_of(problem, better.row)
    assert inside(problem, better.row, inputs)
    value = term_value(objective, model_outputs(reduced, inputs))
    # the units are the point's exact value, larger than the start's and at most the optimum
    units = float(better.units[0]) / problem.scale + float(problem.term_constant[0])
    assert value == pytest.approx(units, abs=1e-9)
    assert before < value <= optimum + 1e-9
    assert better.key == better.units[0]  # the key the searches cut by: the exact value


def _brackets(query, result):
    expected = ORACLE.solve(query)
    check_witnesses(query, result)
    if expected.lower is None or result.lower is None:
        return
    if result.termination is Termination.OPTIMAL:
        assert result.lower == pytest.approx(expected.lower, abs=1e-9)
    else:
        assert result.lower <= expected.lower + 1e-9, (result, expected)
        assert expected.upper <= result.upper + 1e-9, (result, expected)


@settings(max_examples=examples(3.0), deadline=None)
@given(
    model=ensembles(n_features=6, max_trees=10, max_depth=3),
    maximize=st.booleans(),
    steps=st.integers(1, 12),
)
def test_a_step_limited_search_that_repairs_brackets_the_oracle(model, maximize, steps):
    # deeper and more trees than the engine tests draw, so dives stop short of the optimum and
    # the repair has something to climb
    goal = (Maximize if maximize else Minimize)(term(out()))
    query = Query("q", features(list(NAMES)), ("x",), {"m": model}, (), goal)
    _brackets(query, ENGINE.solve(query, Limits(max_steps=steps, timeout_s=20)))


@pytest.mark.parametrize(
    "family", ["box", "one_hot", "linear", "worst_of", "two_instances", "output_constraint"]
)
def test_repairs_under_constraints_bracket_the_oracle(family):
    @settings(max_examples=examples(1.0), deadline=None)
    @given(query=queries(family), steps=st.integers(1, 8))
    def run(query, steps):
        _brackets(query, ENGINE.solve(query, Limits(max_steps=steps, timeout_s=20)))

    run()


def test_repair_climbs_out_of_a_dives_point():
    """Two trees on one feature: the point at x = 0 has 0 + 0, but x = 2 reaches 1 + 1."""
    from conftest import build

    model = build([(0, 1.0, 0.0, (0, 1.5, -1.0, 1.0)), (0, 0.5, 0.0, 1.0)], 6)
    query = Query("q", features(list(NAMES)), ("x",), {"m": model}, (), Maximize(term(out())))
    problem, _ = _problem(query)
    better = Repairer(problem).repaired({"x": np.zeros(6, dtype=np.float32)}, 1.0)
    assert better is not None
    assert point_of(problem, better.row)["x"][0] >= 1.5
    assert better.units[0] / problem.scale == 2.0
