"""An engine stops once its bounds settle the checks it was given (``Limits.stop``), with
termination ``decided``, valid bounds that settle them, and the verdict a run to the optimum
gives.

The A* engine sizes its kernel calls by the time they take, and repairs each new best point for
a share of the time searched; here every call doubles the last (CALL_SECONDS and
LONGEST_CALL_SECONDS made huge) and nothing is repaired, so where a run stops does not depend on
the machine's speed.
"""

from __future__ import annotations

import pytest

from veritas_dsl.ir import Feature, Maximize, Minimize, OutputAtom, OutputTerm, Query
from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.decided import StopRule, settled
from veritas_dsl.ir.logic import compare
from veritas_dsl.result import Termination
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.solvers.sat.engine import SatEngine
from veritas_dsl.solvers.solve import solve
from veritas_dsl.validate import validate_witness

from conftest import random_forest, require

MODEL = random_forest(30, 4, 6, 5)


def query(goal_type=Maximize) -> Query:
    term = OutputTerm((OutputAtom(1.0, "m", "x", 0),))
    features = tuple(Feature(n) for n in MODEL.feature_names)
    return Query("q", features, ("x",), {"m": MODEL}, (), goal_type(term))


#: Where a run stops does not depend on the machine (conftest.astar_pace_fixed).
pytestmark = pytest.mark.usefixtures("astar_pace_fixed")


def optimum(goal_type=Maximize) -> float:
    result = AStarEngine().solve(query(goal_type), Limits())
    assert result.termination is Termination.OPTIMAL
    return result.lower


def stopped(checks, goal_type=Maximize):
    q = query(goal_type)
    result = solve(AStarEngine(), q, Limits(stop=StopRule.of(checks)))
    for witness in result.witnesses:
        validate_witness(q, witness)
    return result


def test_bounds_known_before_any_search_stop_it_at_once():
    _, upper = trivial_bounds(query())
    result = stopped([("<=", upper)])
    assert result.termination is Termination.DECIDED
    assert result.stats["states_expanded"] == 0
    assert settled("<=", upper, result.lower, result.upper) is True
    assert optimum() <= upper  # the verdict of a run to the optimum


@pytest.mark.parametrize("engine", [SatEngine, OracleEngine], ids=["sat", "oracle"])
def test_every_engine_stops_on_settled_bounds(engine):
    # The oracle enumerates: a model small enough for it, and the trivial bound settles it.
    # SAT settles it with the bounds it notes after its first witness.
    model = random_forest(4, 3, 3, 7)
    term = OutputTerm((OutputAtom(1.0, "m", "x", 0),))
    features = tuple(Feature(n) for n in model.feature_names)
    q = Query("q", features, ("x",), {"m": model}, (), Maximize(term))
    best = solve(engine(), q, Limits())
    assert best.termination is Termination.OPTIMAL
    _, upper = trivial_bounds(q)
    assert best.upper < upper  # so that settling on the trivial bound is stopping early
    result = solve(engine(), q, Limits(stop=StopRule.of([("<=", upper)])))
    assert result.termination is Termination.DECIDED
    assert result.lower <= best.upper <= result.upper <= upper
    for witness in result.witnesses:
        validate_witness(q, witness)


@pytest.mark.parametrize("op", ["<=", ">="])
def test_sat_stops_on_a_witness_beyond_the_value(op):
    best = optimum()
    value = best - 0.05
    result = solve(SatEngine(), query(), Limits(stop=StopRule.of([(op, value)])))
    assert result.termination is Termination.DECIDED
    assert result.lower > value and result.witnesses
    assert result.lower <= best <= result.upper
    validate_witness(query(), result.witnesses[0])


@pytest.mark.parametrize("op", ["<=", "<", ">=", ">"])
def test_a_witness_beyond_the_value_stops_it(op):
    best = optimum()
    value = best - 0.05  # a witness above it comes long before the optimum is proven
    result = stopped([(op, value)])
    assert result.termination is Termination.DECIDED
    assert result.lower > value and result.witnesses
    assert result.lower <= best <= result.upper
    verdict = settled(op, value, result.lower, result.upper)
    assert verdict is compare(best, op, value)  # the optimum's own verdict
    full = AStarEngine().solve(query(), Limits())
    assert result.stats["states_expanded"] < full.stats["states_expanded"]


def test_a_minimisation_is_stopped_in_its_own_sense():
    # The engine maximises -t; the rule reads the bounds of minimize t (route inverts them).
    best = optimum(Minimize)
    value = best + 0.05
    result = stopped([("<=", value)], Minimize)
    assert result.termination is Termination.DECIDED
    assert result.lower <= best <= result.upper <= value


def test_an_unsettled_rule_runs_to_the_optimum():
    best = optimum()
    result = stopped([("<=", best), (">=", best)])  # settled only by the optimum itself
    assert result.termination is Termination.OPTIMAL
    assert result.lower == result.upper == best


@pytest.mark.parametrize("driver", ["highs", "gurobi"])
@pytest.mark.parametrize("op", ["<=", ">="])
def test_milp_stops_on_a_witness_beyond_the_value(op, driver):
    # The solver's callbacks see its incumbent above the value before its bound proves the
    # optimum.
    engine = MilpEngine(driver, driver)
    require(engine)
    best = optimum()
    value = best - 0.05
    result = solve(engine, query(), Limits(stop=StopRule.of([(op, value)])))
    assert result.termination is Termination.DECIDED
    assert result.lower > value and result.witnesses
    assert result.lower <= best <= result.upper
    validate_witness(query(), result.witnesses[0])


@pytest.mark.parametrize(
    "engine",
    [AStarEngine, SatEngine, lambda: MilpEngine("highs", "highs")],
    ids=["astar", "sat", "highs"],
)
def test_a_gap_stops_the_engine_within_it(engine):
    best = optimum()
    result = solve(engine(), query(), Limits(stop=StopRule.of([], gap_rel=0.2)))
    assert result.termination is Termination.GAP
    assert result.lower <= best <= result.upper
    assert result.upper - result.lower <= 0.2 * max(abs(result.lower), abs(result.upper))
    for witness in result.witnesses:
        validate_witness(query(), witness)
