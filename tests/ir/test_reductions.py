"""The reductions of ``ir/reductions`` against the reference semantics: each rewritten query has
the same answer as the original (the brute-force oracle and ``ir/evaluate.py`` decide), and
``invert`` maps answers back exactly."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from veritas_dsl.float32 import nearest, next_down, next_up
from veritas_dsl.ir import (
    AnyOf,
    Ball,
    DomainKind,
    Find,
    Interval,
    Maximize,
    Minimize,
    OutputConstraint,
    Prove,
    Query,
    Row,
    Tie,
)
from veritas_dsl.ir.constructs import constructs
from veritas_dsl.ir.evaluate import domain_violations, holds, model_outputs, model_votes
from veritas_dsl.ir.reductions import (
    Chain,
    MergeTies,
    MinimizeToMaximize,
    ProveToFind,
    ReductionRefused,
    StaticBounds,
    ToDNF,
    branches,
    variables_of,
)
from veritas_dsl.result import Result, Termination, TracePoint, Witness
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.solvers.milp.formulation import formulate
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.solvers.sat.engine import SatEngine
from veritas_dsl.validate import validate_witness

from conftest import build
from reference.ir import features, out, term
from reference.strategies import COORDINATES, FAMILIES, queries

ORACLE = OracleEngine()
CHAINS = {
    "astar": AStarEngine.chain,
    "milp": MilpEngine.chain,
    "sat": SatEngine.chain,
}
STEPS = {
    "prove_to_find": ProveToFind(),
    "minimize_to_maximize": MinimizeToMaximize(),
    "dnf": ToDNF(),
    "variables": Chain((MergeTies(), StaticBounds())),
    **CHAINS,
}


def oracle(query: Query):
    try:
        return ORACLE.solve(query)
    except UnsupportedQuery:  # beyond the oracle's size: no reference to compare with
        return None


def same_answer(query: Query, reduction) -> None:
    """The rewritten query, answered by the oracle and inverted, is the original's answer."""
    expected = oracle(query)
    if expected is None:
        return
    reduced, inverse = reduction.apply(query)
    got = reduction.invert(ORACLE.solve(reduced), inverse)
    assert got.termination is expected.termination
    assert (got.lower, got.upper) == (expected.lower, expected.upper)
    assert len(got.witnesses) == len(expected.witnesses)
    for witness in got.witnesses:
        validate_witness(query, witness)  # every constraint, and a prove's negated conclusion
        if isinstance(query.goal, Maximize | Minimize):
            assert witness.value == expected.lower


@pytest.mark.parametrize("step", list(STEPS))
@pytest.mark.parametrize("family", FAMILIES)
@given(data=st.data())
def test_a_reduced_query_has_the_same_answer(step, family, data):
    same_answer(data.draw(queries(family)), STEPS[step])


# -- the variable table ---------------------------------------------------------------------------


def near(values):
    """Each value, and the float32 values right beside it."""
    return sorted({w for v in values for w in (v, next_up(v), next_down(v)) if math.isfinite(w)})


@st.composite
def points(draw, query: Query):
    """Inputs on or beside every constant of the query's input constraints."""
    constants = set(COORDINATES) | {0.0, 1.0}
    for c in query.constraints:
        if isinstance(c, Interval):
            constants |= {c.lo, c.hi}
        elif isinstance(c, Ball) and isinstance(c.center, Row):
            constants |= {v + s * c.radius for v in c.center.values for s in (-1, 0, 1)}
    for feature in query.features:
        constants |= {feature.lo, feature.hi}
    values = st.sampled_from(near(float(np.float32(v)) for v in constants if math.isfinite(v)))
    inputs = {
        name: np.array([draw(values) for _ in query.features], dtype=np.float32)
        for name in query.instances
    }
    if draw(st.booleans()):  # honour the ties, so that points inside tied boxes are common
        for c in query.constraints:
            if isinstance(c, Tie):
                inputs[c.second][c.feature] = inputs[c.first][c.feature]
    return inputs


def meets(query: Query, inputs, constraints) -> bool:
    if domain_violations(query, inputs):
        return False
    margins = model_outputs(query, inputs)
    votes = model_votes(query, inputs) if "hard_vote" in constructs(query) else None
    return all(holds(c, inputs, margins, votes) for c in constraints)


@pytest.mark.parametrize("family", FAMILIES)
@given(data=st.data())
def test_every_input_meeting_the_query_lies_in_the_static_box(family, data):
    query = data.draw(queries(family))
    table = variables_of(query)
    inputs = data.draw(points(query))
    if not meets(query, inputs, query.constraints):
        return
    assert not table.empty
    for i, name in enumerate(query.instances):
        v = table.var[i]
        assert np.all(table.lo[v] <= inputs[name]) and np.all(inputs[name] <= table.hi[v])
    # tied pairs share a variable, and so a value
    for (i, f), v in np.ndenumerate(table.var):
        for (j, g), w in np.ndenumerate(table.var):
            if v == w:
                assert f == g
                assert inputs[query.instances[i]][f] == inputs[query.instances[j]][g]


@pytest.mark.parametrize("family", FAMILIES)
@given(data=st.data())
def test_an_empty_static_box_has_no_answer(family, data):
    query = data.draw(queries(family))
    if not variables_of(query).empty:
        return
    result = oracle(replace(query, goal=Find()))
    assert result is None or result.termination is Termination.INFEASIBLE


def two_features(kinds=None, bounds=None):
    return features(["x0", "x1"], kinds, bounds)


def test_an_l1_ball_around_a_row_bounds_every_coordinate():
    # Before the one rule only A* narrowed on L1 balls; the MILP's columns now carry it too.
    model = build([(0, 0.5, 0.0, 1.0)], 2)
    ball = Ball("l1", "x", Row((1.0, -2.0)), 0.5)
    query = Query("q", two_features(), ("x",), {"m": model}, (ball,), Maximize(term(out())))
    table = variables_of(query)
    assert table.lo.tolist() == [0.5, -2.5]
    assert table.hi.tolist() == [1.5, -1.5]
    form = formulate(query)
    assert [(v.lo, v.hi) for v in form.vars] == [(0.5, 1.5), (-2.5, -1.5)]


def test_ties_merge_variables_and_intersect_their_boxes():
    model = build([(0, 0.5, 0.0, 1.0)], 2)
    constraints = (
        Tie("x", "y", 0),
        Interval("x", 0, 0.0, 2.0),
        Interval("y", 0, 1.0, 3.0),
    )
    query = Query("q", two_features(), ("x", "y"), {"m": model}, constraints)
    table = variables_of(query)
    assert table.n_vars == 3
    assert table.var[0, 0] == table.var[1, 0]
    v = table.var[0, 0]
    assert (table.lo[v], table.hi[v]) == (1.0, 2.0)


def test_a_table_never_describes_other_constraints_than_its_query():
    # dataclasses.replace keeps the attached table; a query rewritten after the reductions (the
    # MILP's growing boxes around a centre) must not read the old one.
    model = build([(0, 0.5, 0.0, 1.0)], 2)
    query = Query("q", two_features(), ("x",), {"m": model}, (), Maximize(term(out())))
    reduced, _ = MilpEngine.chain.apply(query)
    assert variables_of(reduced) is reduced.variables
    boxed = replace(reduced, constraints=(Ball("linf", "x", Row((0.0, 0.0)), 1.0),))
    table = variables_of(boxed)
    assert table.lo.tolist() == [-1.0, -1.0] and table.hi.tolist() == [1.0, 1.0]


def test_integral_bounds_round_inward():
    kinds = [DomainKind.INT, DomainKind.BOOL]
    space = two_features(kinds, [(-2.5, 3.7), (-1.0, 5.0)])
    model = build([(0, 0.5, 0.0, 1.0)], 2)
    query = Query("q", space, ("x",), {"m": model}, (Interval("x", 0, -0.5, 2.9),))
    table = variables_of(query)
    assert table.lo.tolist() == [0.0, 0.0] and table.hi.tolist() == [2.0, 1.0]
    assert table.integral.tolist() == [True, True]


# -- disjunctions ------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["disjunction", "prove", "two_instances", "hard_vote"])
@given(data=st.data())
def test_the_branches_of_a_dnf_cover_exactly_the_original(family, data):
    query = data.draw(queries(family))
    query, _ = ProveToFind().apply(query)
    inputs = data.draw(points(query))
    reduced, _ = ToDNF().apply(query)
    either = any(meets(query, inputs, branch) for branch in branches(reduced))
    assert either == meets(query, inputs, query.constraints)
    for branch in branches(reduced):
        assert not any(isinstance(c, AnyOf) for c in branch)


def test_too_many_branches_are_refused_with_the_engine_named():
    model = build([(0, 0.5, 0.0, 1.0)], 2)
    pick = AnyOf(((Interval("x", 0, hi=0.0),), (Interval("x", 0, lo=1.0),)))
    query = Query("q", two_features(), ("x",), {"m": model}, (pick,) * 9, Find())
    assert not ToDNF().accepts(query)
    assert ToDNF(max_branches=512).accepts(query)
    with pytest.raises(ReductionRefused, match="more than 256 conjunctions"):
        ToDNF().apply(query)
    with pytest.raises(UnsupportedQuery, match=r"more than 256 conjunctions.*astar"):
        AStarEngine().solve(query)


# -- goals -------------------------------------------------------------------------------------


def test_minimize_is_reported_in_its_own_sense_by_every_engine_and_its_progress():
    model = build([(0, 0.5, -1.0, 3.0), (1, 0.0, 2.0, -0.5)], 2)
    query = Query("q", two_features(), ("x",), {"m": model}, (), Minimize(term(out())))
    for engine in (AStarEngine(), MilpEngine("milp", "highs"), SatEngine()):
        reports = []
        result = engine.solve(query, Limits(timeout_s=30), progress=reports.append)
        assert result.termination is Termination.OPTIMAL
        assert result.lower == result.upper == -1.5
        assert result.witnesses[0].value == -1.5
        assert all(p.lower <= p.upper for p in result.trace)
        assert all(p.lower <= -1.5 <= p.upper for p in result.trace)
        assert all(r.lower is None or r.lower <= -1.5 + 1e-9 for r in reports), engine.name


def test_prove_reaches_the_engines_as_a_search_for_a_counterexample():
    model = build([(0, 0.5, -1.0, 3.0)], 2)
    holds_ = OutputConstraint(term(out()), "<=", 3.0)
    fails = OutputConstraint(term(out()), "<=", 0.0)
    for conclusion, termination in ((holds_, Termination.INFEASIBLE), (fails, Termination.OPTIMAL)):
        query = Query("q", two_features(), ("x",), {"m": model}, (), Prove((conclusion,)))
        reduced, _ = ProveToFind().apply(query)
        assert isinstance(reduced.goal, Find)
        negated = OutputConstraint(conclusion.term, ">", conclusion.rhs)
        assert reduced.constraints[-1] == AnyOf(((negated,),))
        for engine in (AStarEngine(), MilpEngine("milp", "highs"), SatEngine(), ORACLE):
            assert engine.solve(query).termination is termination, engine.name


# -- the float32 nearest value -----------------------------------------------------------------


@given(
    st.sampled_from([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7, 7.0]),
    st.sampled_from([-math.inf, -3.0, -1.0, 0.0, 1.0]),
    st.sampled_from([math.inf, 3.0, 1.0, 0.0, 2.0]),
    st.booleans(),
)
@example(0.5, -math.inf, math.inf, True)
def test_nearest_is_the_closest_value_and_the_lower_of_a_tie(target, lo, hi, integral):
    if lo > hi:
        return
    value = nearest(target, lo, hi, integral)
    assert lo <= value <= hi
    if integral:
        assert value == math.floor(value)
    candidates = [lo, hi, math.floor(target), math.ceil(target)]
    if not integral:
        candidates.append(target)
    inside = [c for c in candidates if math.isfinite(c) and lo <= c <= hi]
    best = min(abs(c - target) for c in inside) if inside else abs(value - target)
    assert abs(value - target) == best
    assert not any(abs(c - target) == best and c < value for c in inside)


def test_minimize_to_maximize_inverts_bounds_that_have_not_met():
    # An exact answer has lower == upper, so only a stopped search shows the swap.
    model = build([(0, 0.5, -1.0, 3.0)], 2)
    query = Query("q", two_features(), ("x",), {"m": model}, (), Minimize(term(out())))
    step = MinimizeToMaximize()
    reduced, inverse = step.apply(query)
    assert reduced.goal == Maximize(term(out(coef=-1.0), constant=-0.0))
    stopped = Result("q", "e", Termination.TIME_LIMIT, -3.0, 1.0)
    stopped.trace = [TracePoint(0.5, -3.0, 1.0)]
    stopped.witnesses = [Witness({"x": np.zeros(2, np.float32)}, -3.0)]
    back = step.invert(stopped, inverse)
    assert (back.lower, back.upper) == (-1.0, 3.0)
    assert back.trace == [TracePoint(0.5, -1.0, 3.0)]
    assert back.witnesses[0].value == 3.0
    assert step.invert_bounds(-3.0, 1.0, inverse) == (-1.0, 3.0)
    assert step.invert_bounds(None, None, inverse) == (None, None)
