"""The MILP engine on both drivers: hand-built cases per construct (answers known by hand, and
checked against the oracle), exact float32 witnesses, mixed random queries against the oracle,
limits and the anytime trace, and the Gurobi licence probe."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from veritas_dsl.float32 import as_float32, next_down
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
    change_units,
)
from veritas_dsl.ir.evaluate import distance, holds
from veritas_dsl.model import Ensemble
from veritas_dsl.result import Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Availability, Limits, UnsupportedQuery
from veritas_dsl.solvers.milp import gurobi
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.solvers.milp.formulation import _Builder, formulate
from veritas_dsl.solvers.milp.predicates import Var
from veritas_dsl.solvers.milp.program import ONE, Infeasible, ProgramBuilder
from veritas_dsl.solvers.milp.trees import lowest_bit
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.validate import validate_witness

from conftest import build, examples
from reference.agreement import assert_agrees
from reference.strategies import COORDINATES, FAMILIES, ensembles, queries

ORACLE = OracleEngine()
LICENCE = gurobi.licence()
needs_gurobi = pytest.mark.skipif(
    not LICENCE, reason=f"gurobi is not usable here ({LICENCE.value})"
)
needs_limited_licence = pytest.mark.skipif(
    LICENCE is not Availability.LIMITED_LICENCE,
    reason=f"needs gurobi's size-limited pip licence (here: {LICENCE.value})",
)
needs_full_licence = pytest.mark.skipif(
    LICENCE is not Availability.AVAILABLE,
    reason=f"needs a full gurobi licence (here: {LICENCE.value})",
)
DRIVERS = ["highs", pytest.param("gurobi", marks=needs_gurobi)]


@pytest.fixture(params=DRIVERS)
def engine(request) -> MilpEngine:
    return MilpEngine(request.param, request.param)


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


def solve(engine, model, goal, constraints=(), instances=("x",), models=None, **feature_args):
    """Solve with ``engine``; every witness must reproduce, and the answer equal the oracle's."""
    query = Query(
        "q",
        features(model, **feature_args),
        instances,
        models or {"m": model},
        tuple(constraints),
        goal,
    )
    result = engine.solve(query)
    for witness in result.witnesses:
        validate_witness(query, witness)
    expected = ORACLE.solve(query)
    assert result.termination == expected.termination, (result, expected)
    if expected.lower is not None:
        assert (result.lower, result.upper) == (expected.lower, expected.upper)
    return result


BELOW_ONE = next_down(1.0)


# -- optimisation over boxes ---------------------------------------------------------------------


def test_witness_sits_one_float32_step_left_of_a_threshold(engine, two_trees):
    # From (1, 0.5), output 3.5, the closest point with output below 2 is x0 = next_down(1).
    result = solve(
        engine,
        two_trees,
        MinimizeDistance("linf", "x", Row((1.0, 0.5))),
        [OutputConstraint(term(out()), "<", 2.0)],
    )
    assert result.witnesses[0].inputs["x"].tolist() == [BELOW_ONE, 0.5]
    assert result.lower == float(Fraction(1) - Fraction(BELOW_ONE))


def test_int_distance_to_a_fractional_centre(engine):
    model = build([(0, 1.5, 0.0, 1.0)], 1)  # int x < 1.5 means x <= 1
    kinds, bounds = [DomainKind.INT], [(-5, 5)]
    nearest = solve(
        engine, model, MinimizeDistance("l1", "x", Row((0.3,))), kinds=kinds, bounds=bounds
    )
    assert nearest.lower == float(Fraction(float(np.float32(0.3))))
    assert nearest.witnesses[0].inputs["x"].tolist() == [0.0]
    high = solve(
        engine,
        model,
        MinimizeDistance("linf", "x", Row((0.3,))),
        [OutputConstraint(term(out()), ">", 0.5)],
        kinds=kinds,
        bounds=bounds,
    )
    assert high.witnesses[0].inputs["x"].tolist() == [2.0]


# -- output constraints: strict comparisons are exact --------------------------------------------


@pytest.mark.parametrize(("op", "expected"), [("<", 0.2), ("<=", 0.1 + 0.2)])
def test_strict_comparison_decided_in_float64(engine, op, expected):
    """0.1 + 0.2 is 0.30000000000000004 in float64 but a hair less in reals: the program sees the
    real sum, the semantics the float64 one, so the witness check must cut that combination."""
    model = build([(0, 0.0, 0.1, 0.0), (1, 0.0, 0.2, 0.0)], 2)
    constraint = OutputConstraint(term(out()), op, 0.1 + 0.2)
    result = solve(engine, model, Maximize(term(out())), [constraint])
    assert result.lower == expected
    assert result.stats["repairs"] == (1 if op == "<" else 0)


def test_grid_margin_of_output_rows():
    assert lowest_bit([0.5, 1.5, -3.0]) == -1
    assert lowest_bit([0.0, 3 * 2.0**-40]) == -40
    assert lowest_bit([0.0]) is None


# -- disjunctions --------------------------------------------------------------------------------


def test_nested_disjunction_with_a_tie_and_a_ball(engine, two_trees):
    gap = term(out("x2"), out("x1", coef=-1.0))
    inner = AnyOf(((Tie("x1", "x2", 0),), (Ball("linf", "x2", "x1", 0.5),)))
    outer = AnyOf(((inner, Tie("x1", "x2", 1)), (Interval("x2", 0, 5.0, 6.0),)))
    both = ("x1", "x2")
    result = solve(engine, two_trees, Maximize(gap), [outer], instances=both)
    assert result.lower == 10.0  # x2 free in feature 1 via x2.x0 in [5, 6]: 7 - (-3)
    pinned = [outer, Interval("x2", 0, -1.0, 1.0)]
    assert solve(engine, two_trees, Maximize(gap), pinned, instances=both).lower == 3.0


def test_changed_and_one_hot_inside_a_disjunction(engine, one_hot_trees):
    kinds = [DomainKind.BOOL] * 3
    row = Row((0.0, 0.0, 1.0))
    group = (OneHot("x", (0, 1, 2)), Interval("x", 2, 0, 0))
    either = AnyOf(((AtMostKChanged("x", row, 1, change_units(3)),), group))
    result = solve(engine, one_hot_trees, Maximize(term(out())), [either], kinds=kinds)
    assert result.lower == 8.0  # b0 = 1 with b2 = 1 kept: one change


# -- one-hot, changed, linear --------------------------------------------------------------------


def test_linear_constraint_is_exact_on_float32(engine):
    """3 x <= 1 allows x <= 1/3, and float32(1/3) is above 1/3: the right side of a split at
    float32(1/3) is out of reach, although a solver's tolerance would let it in."""
    third = float(np.float32(1 / 3))
    assert third > 1 / 3
    model = build([(0, third, 0.0, 1.0)], 1)
    at_most_a_third = Linear((LinearTerm(3.0, "x", 0),), "<=", 1.0)
    result = solve(engine, model, Maximize(term(out())), [at_most_a_third])
    assert result.lower == 0.0
    reach = Linear((LinearTerm(3.0, "x", 0),), ">=", 1.0)
    x = solve(engine, model, Minimize(term(out())), [reach]).witnesses[0].inputs["x"][0]
    assert 3 * Fraction(float(x)) >= 1


def test_linear_constraint_over_an_unbounded_feature_is_noted(engine, two_trees):
    budget = Linear((LinearTerm(1.0, "x", 0),), ">=", 100.0)
    result = solve(engine, two_trees, Maximize(term(out())), [budget])
    assert "|x| <=" in result.message


def test_domain_beyond_the_float32_range_is_no_bound(engine, two_trees):
    """``int in [-1e308, 1e308]`` made the hull 2**1026: OverflowError (issue 13)."""
    result = solve(
        engine,
        two_trees,
        Maximize(term(out())),
        kinds=[DomainKind.INT, DomainKind.REAL],
        bounds=[(-1e308, 1e308), (-math.inf, math.inf)],
    )
    assert result.upper == 7.0


def test_a_constant_beyond_what_the_program_holds_is_refused(engine, two_trees):
    far = Linear((LinearTerm(1.0, "x", 0), LinearTerm(1.0, "x", 1)), ">=", 1e30)
    query = Query("q", features(two_trees), ("x",), {"m": two_trees}, (far,), Maximize(term(out())))
    with pytest.raises(UnsupportedQuery, match="cannot hold a constant"):
        engine.solve(query)


# -- distances -----------------------------------------------------------------------------------


#: Found by the HiGHS family test, one run in many: tree 0 gives -0.5 iff x2 < 1 and x1 < t,
#: tree 1 gives -0.5 iff x1 < 1 and x0 >= -1; within L1 distance 2 of (1, 1, -0.5) both fire
#: (x1 just below t, 1 + a subnormal away), so the minimum is -1. HiGHS 1.16's Fourier-Motzkin
#: presolve reported -0.5 as optimal for t = 0 and t = -1e-30.
def l1_across_a_threshold(t: float, center_x1: float = 1.0, radius: float = 2.0) -> Query:
    model = build([(2, 1.0, (1, t, -0.5, 0.0), 0.0), (1, 1.0, (0, -1.0, 0.0, -0.5), 0.0)], 3)
    ball = Ball("l1", "x", Row((1.0, center_x1, -0.5)), radius)
    return Query("q", features(model), ("x",), {"m": model}, (ball,), Minimize(term(out())))


@pytest.mark.parametrize("t", [0.0, as_float32(-1e-30), as_float32(1e-30), -1e-45, -0.25, 0.5])
@pytest.mark.parametrize("radius", [2.0, 3.0])
def test_highs_l1_across_a_threshold_at_zero(t, radius):
    query = l1_across_a_threshold(t, radius=radius)
    result = MilpEngine("highs", "highs").solve(query)
    for witness in result.witnesses:
        validate_witness(query, witness)
    assert (result.termination, result.lower, result.upper) == (Termination.OPTIMAL, -1.0, -1.0)
    assert ORACLE.solve(query).lower == -1.0


def test_milp_of_a_plain_install_solves_on_highs():
    """Without gurobipy (a plain ``pip install .``), ``milp`` runs HiGHS and gets it right.
    .ci/run also runs the engine tests that way (``VER_TEST_WITHOUT_GUROBIPY=1``)."""
    code = (
        "import sys; sys.modules['gurobipy'] = None\n"
        "from test_milp import l1_across_a_threshold\n"
        "from veritas_dsl.solvers import registry\n"
        "r = registry.get('milp').solve(l1_across_a_threshold(0.0))\n"
        "print(registry.get('gurobi').available().value, r.stats['driver'], r.lower)\n"
    )
    here = Path(__file__).parent
    path = os.pathsep.join([str(here), str(here.parent)])
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # HiGHS itself writes nothing: the one line is the test's own.
    assert done.stdout.split() == ["not_installed", "highs", "-1.0"], done.stdout


@pytest.mark.parametrize("t", [0.0, as_float32(-1e-30), -1e-45])
def test_a_ball_missed_by_a_subnormal_is_cut_not_undecided(engine, t):
    """From a centre at 2, the segment x1 < t is 2 + a subnormal away: outside radius 2, though
    a float64 program sees exactly 2. The segment is cut off and the optimum is -0.5."""
    query = l1_across_a_threshold(t, center_x1=2.0)
    result = engine.solve(query)
    for witness in result.witnesses:
        validate_witness(query, witness)
    assert (result.termination, result.lower, result.upper) == (Termination.OPTIMAL, -0.5, -0.5)
    assert ORACLE.solve(query).lower == -0.5


def test_closest_distance_is_not_one_float32_step_long(engine):
    """HiGHS 1.15 answered 0.50000012 here (x1 = next_down(-1)) where 0.5 is feasible; the engine
    confirms closest distances with one more solve."""
    model = build(
        [
            (0, -1.0, 0.0, (1, -1.0, -2.0, 0.5)),
            (1, -1.0, 1.0, 0.0),
            (0, -1.0, 0.0, (0, -1.0, 0.0, 1.0)),
        ],
        3,
    )
    query = Query(
        "q",
        features(model),
        ("x",),
        {"m": model},
        (OutputConstraint(term(out()), ">", 0.0),),
        MinimizeDistance("l1", "x", Row((-1.5, -0.5, -1.5))),
    )
    whole = engine._solve_program(query, Limits())  # no growing boxes
    assert whole.lower == whole.upper == 0.5
    assert engine.solve(query).lower == 0.5


def test_distance_shared_by_two_partners(engine, two_trees):
    """x2 is measured against x1 and against a row: its value column is solved exactly."""
    both = ("x1", "x2")
    constraints = [
        Ball("l1", "x2", "x1", 1.0),
        Ball("l1", "x2", Row((2.5, 0.0)), 1.0),
        OutputConstraint(term(out("x1")), "<=", 1.5),
    ]
    result = solve(engine, two_trees, Maximize(term(out("x2"))), constraints, both)
    assert result.lower == 3.5  # 7 at (2, 0) is too far from any x1 with output <= 1.5


# -- two instances, several models, several outputs -----------------------------------------------


def test_trees_not_testing_the_untied_feature_share_their_leaves(engine, two_trees):
    """With x1 tied, a tree testing only x1 reaches the same leaf for both instances, so they
    share its columns (and its terms cancel); a tree testing x0 as well keeps one copy each."""
    only_x1 = build([(1, 1.5, 4.0, -4.0)], 2)
    gap = term(out("x2"), out("x1", coef=-1.0), out("x2", "v"), out("x1", "v", coef=-1.0))
    models = {"m": two_trees, "v": only_x1}
    query = Query(
        "q",
        features(two_trees),
        ("x1", "x2"),
        models,
        (Tie("x1", "x2", 1),),
        Maximize(gap),
    )
    leaves = formulate(query).leaves
    assert leaves["v", "x1"][0] is leaves["v", "x2"][0]
    assert leaves["m", "x1"][0] is not leaves["m", "x2"][0]
    result = solve(engine, two_trees, Maximize(gap), [Tie("x1", "x2", 1)], ("x1", "x2"), models)
    assert result.lower == 5.5


# -- the segment formulas, against every pair of segments ------------------------------------------

GRID = sorted({float(np.float32(v)) for v in (-2, -1, -0.5, -1e-45, 0, 0.1, 0.25, 0.5, 1, 2, 3)})


@st.composite
def segment_pairs(draw):
    """Two variables with random bounds and cuts, as the formulation holds them."""
    builder = _Builder.__new__(_Builder)
    builder.p = ProgramBuilder()
    builder.vars = []
    integral = draw(st.booleans())
    for _ in range(2):
        if integral:
            lo = float(draw(st.integers(-4, 1)))
            hi = float(draw(st.integers(int(lo), 4)))
            options = [float(c) for c in range(int(lo) + 1, int(hi) + 1)]
        else:
            lo, hi = sorted(
                draw(
                    st.lists(
                        st.sampled_from([-32.0, -1.0, 0.0, 1e-45, 2.0, 32.0]),
                        min_size=2,
                        max_size=2,
                    )
                )
            )
            options = [v for v in GRID if lo < v <= hi]
        cuts = sorted(draw(st.sets(st.sampled_from(options)))) if options else []
        var = Var(feature=0, integral=integral, lo=lo, hi=hi, cuts=cuts)
        var.cols = [builder.p.binary() for _ in cuts]
        builder.vars.append(var)
    builder.cut_index = [{t: i for i, t in enumerate(v.cuts)} for v in builder.vars]
    return builder


def patterns(builder):
    """Every pair of segments: the 0/1 predicates picking them, and their exact ends."""
    u, w = builder.vars
    for ju in range(len(u.cuts) + 1):
        for jw in range(len(w.cuts) + 1):
            x = np.zeros(builder.p.n_cols)
            ends = []
            for var, j in ((u, ju), (w, jw)):
                for i, col in enumerate(var.cols):
                    x[col] = 0.0 if i < j else 1.0
                low = var.lo if j == 0 else var.cuts[j - 1]
                high = var.hi if j == len(var.cuts) else var.below(var.cuts[j])
                ends.append((Fraction(low), Fraction(high)))
            (au, bu), (aw, bw) = ends
            yield x, max(Fraction(0), aw - bu, au - bw)


@settings(max_examples=examples(6), deadline=None)
@given(builder=segment_pairs())
def test_pair_gaps_are_the_exact_distance_between_segments(builder):
    pieces = [builder.pair_gap(0, 1), builder.pair_gap(1, 0)]
    for x, exact in patterns(builder):
        assert max([0.0] + [piece.value(x) for piece in pieces]) == pytest.approx(float(exact))


@settings(max_examples=examples(6), deadline=None)
@given(builder=segment_pairs(), radius=st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 0.5000001]))
def test_ball_between_excludes_exactly_the_far_segments(builder, radius):
    try:
        builder.ball_between(0, 1, radius, ONE)
        empty = False
    except Infeasible:
        empty = True
    program = builder.p.freeze()
    for x, exact in patterns(builder):
        allowed = not empty and all(lo <= float(v @ x[i]) <= hi for i, v, lo, hi in program.rows())
        assert allowed == (exact <= Fraction(radius))


# -- mixed random queries against the oracle -------------------------------------------------------


@st.composite
def mixed_queries(draw) -> Query:
    """Random combinations of every construct, over one or two instances and one or two models."""
    n = 3
    kinds = draw(st.lists(st.sampled_from(list(DomainKind)), min_size=n, max_size=n))
    bounds = {
        DomainKind.REAL: draw(st.sampled_from([(-math.inf, math.inf), (-1.0, 2.0)])),
        DomainKind.INT: (-2.0, 3.0),
        DomainKind.BOOL: (0.0, 1.0),
    }
    feats = tuple(Feature(f"x{i}", kind, *bounds[kind]) for i, kind in enumerate(kinds))
    models = {"m": draw(ensembles(n_features=n, max_trees=2))}
    if draw(st.booleans()):
        models["m2"] = draw(ensembles(n_features=n, max_trees=1))
    instances = ("x1", "x2") if draw(st.booleans()) else ("x",)
    inst = st.sampled_from(instances)
    row = st.lists(st.sampled_from(COORDINATES), min_size=n, max_size=n).map(
        lambda v: Row(tuple(v))
    )
    level = st.sampled_from([-1.0, 0.0, 0.5, 1.5])
    bools = [f for f in range(n) if kinds[f] is DomainKind.BOOL]

    def reference(instance):
        others = [i for i in instances if i != instance]
        return draw(st.sampled_from(others)) if others and draw(st.booleans()) else draw(row)

    def output_term():
        coef = draw(st.sampled_from([1.0, -1.0]))
        atoms = [OutputAtom(coef, draw(st.sampled_from(sorted(models))), draw(inst))]
        if draw(st.booleans()):
            atoms.append(OutputAtom(-atoms[0].coef, "m", draw(inst)))
        return OutputTerm(tuple(atoms))

    def constraint(depth):
        kind = draw(
            st.sampled_from(
                ["interval", "tie", "ball", "changed", "linear", "output", "onehot", "anyof"]
            )
        )
        instance = draw(inst)
        if kind == "interval":
            lo = draw(st.sampled_from([-math.inf, -1.0, 0.0, 0.3]))
            hi = draw(st.sampled_from([0.3, 1.5, math.inf])) if math.isinf(lo) else lo + 1.5
            return Interval(instance, draw(st.integers(0, n - 1)), lo, hi)
        if kind == "tie" and len(instances) == 2:
            return Tie("x1", "x2", draw(st.integers(0, n - 1)))
        if kind == "ball":
            norm = draw(st.sampled_from(["linf", "l1"]))
            radius = draw(st.sampled_from([0.0, 0.3, 1.0, 2.0]))
            return Ball(norm, instance, reference(instance), radius)
        if kind == "changed":
            groups = [tuple(bools)] if len(bools) >= 2 and draw(st.booleans()) else []
            units = change_units(n, groups)
            return AtMostKChanged(instance, reference(instance), draw(st.integers(0, 2)), units)
        if kind == "linear":
            terms = tuple(
                LinearTerm(draw(st.sampled_from([-1.0, 1.0, 2.0])), draw(inst), f)
                for f in draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=2))
            )
            return Linear(terms, draw(st.sampled_from(["<=", ">=", "=="])), draw(level))
        if kind == "onehot" and len(bools) >= 2:
            return OneHot(instance, tuple(bools))
        if kind == "anyof" and depth == 0:
            return AnyOf(
                tuple(
                    tuple(constraint(1) for _ in range(draw(st.integers(1, 2)))) for _ in range(2)
                )
            )
        ops = ["<", "<=", ">", ">="]
        return OutputConstraint(output_term(), draw(st.sampled_from(ops)), draw(level))

    constraints = tuple(constraint(0) for _ in range(draw(st.integers(0, 3))))
    goal_kind = draw(st.sampled_from(["max", "min", "distance", "find", "prove"]))
    if goal_kind == "max":
        goal = Maximize(output_term())
    elif goal_kind == "min":
        goal = Minimize(output_term())
    elif goal_kind == "distance":
        instance = draw(inst)
        goal = MinimizeDistance(
            draw(st.sampled_from(["linf", "l1"])), instance, reference(instance)
        )
    elif goal_kind == "find":
        goal = Find()
    else:
        op = draw(st.sampled_from(["<", ">="]))
        goal = Prove((OutputConstraint(output_term(), op, draw(level)),))
    return Query("mixed", feats, instances, models, constraints, goal)


def check_against_oracle(query, engine=None):
    engine = engine or MilpEngine("highs", "highs")
    result = engine.solve(query)
    assert_agrees(query, result, ORACLE.solve(query), engine=engine.name)


@settings(max_examples=examples(2.4), deadline=None)
@given(query=mixed_queries())
def test_mixed_queries_match_the_oracle(query):
    check_against_oracle(query)


def test_tied_pair_at_distance_zero():
    """Found by the mixed queries: x1 == x2 is feasible (the MILP's witness reproduces); the
    oracle's point search used to round x1.x1 and x2.x1 to neighbouring float32 values
    (-23.199999 and -23.2) and report 1.9e-6."""
    model = build([(0, -1.0, (0, -1.0, 0.0, 0.0), 1.5)], 3)
    row = Row((-1.5, -1.5, -1.5))
    out_x1 = OutputTerm((OutputAtom(-1.0, "m", "x1"),))
    constraints = (
        AnyOf(
            (
                (AtMostKChanged("x1", row, 0, change_units(3)),),
                (Interval("x1", 0, 0.3, 1.8), Interval("x1", 1, -math.inf, 0.3)),
            )
        ),
        Tie("x1", "x2", 0),
        AnyOf(
            (
                (
                    OutputConstraint(out_x1, "<", -1.0),
                    AtMostKChanged("x1", row, 2, change_units(3)),
                ),
                (Interval("x1", 0, -math.inf, 0.3), Interval("x1", 0, -1.0, 0.5)),
            )
        ),
    )
    goal = MinimizeDistance("linf", "x1", "x2")
    query = Query("q", features(model), ("x1", "x2"), {"m": model}, constraints, goal)
    result = MilpEngine("highs", "highs").solve(query)
    validate_witness(query, result.witnesses[0])
    assert result.lower == result.upper == 0.0
    assert ORACLE.solve(query).lower == 0.0


#: Examples a family test once failed on, asked again on every run.
PINNED = {"l1": [l1_across_a_threshold(0.0), l1_across_a_threshold(as_float32(-1e-30))]}


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "hard_vote"])  # not declared
def test_highs_matches_the_oracle_on_every_family(family):
    """``milp`` runs Gurobi where its licence allows; this keeps HiGHS under the same test."""

    @settings(max_examples=examples(1.2), deadline=None)
    @given(query=queries(family))
    def run(query):
        check_against_oracle(query)

    for query in PINNED.get(family, []):
        run = example(query=query)(run)
    run()


# -- limits and the anytime trace ------------------------------------------------------------------


@pytest.fixture(scope="module")
def forest():
    """Twelve random depth-3 trees over four features: a few seconds of branch and bound."""
    rng = np.random.default_rng(7)

    def tree(depth):
        if depth == 0:
            return float(rng.normal())
        return (int(rng.integers(4)), float(rng.normal()), tree(depth - 1), tree(depth - 1))

    return build([tree(3) for _ in range(12)], 4)


def test_time_limit_brackets_the_optimum(engine, forest):
    gap = term(out("x2"), out("x1", coef=-1.0))
    query = Query(
        "gap",
        features(forest),
        ("x1", "x2"),
        {"m": forest},
        (Ball("linf", "x2", "x1", 0.5),),
        Maximize(gap),
    )
    exact = engine.solve(query)
    assert exact.termination == Termination.OPTIMAL
    limited = engine.solve(query, Limits(timeout_s=0.05))
    assert limited.termination in (Termination.TIME_LIMIT, Termination.OPTIMAL)
    assert limited.lower <= exact.lower <= limited.upper
    for witness in limited.witnesses:
        validate_witness(query, witness)
        assert witness.value == limited.lower


def test_trace_streams_bounds(engine, forest):
    query = Query("max", features(forest), ("x",), {"m": forest}, (), Maximize(term(out())))
    result = engine.solve(query)
    assert result.trace
    assert result.trace[-1].lower == result.trace[-1].upper == result.lower
    times = [p.time_s for p in result.trace]
    assert times == sorted(times)
    for before, after in zip(result.trace, result.trace[1:], strict=False):
        assert before.lower <= after.lower and after.upper <= before.upper
    assert all(p.lower <= p.upper for p in result.trace)


def test_live_progress_brackets_the_optimum(engine, forest):
    gap = term(out("x2"), out("x1", coef=-1.0))
    close = (Ball("linf", "x2", "x1", 0.5),)
    query = Query("gap", features(forest), ("x1", "x2"), {"m": forest}, close, Maximize(gap))
    seen = []
    result = engine.solve(query, progress=seen.append)
    assert result.termination == Termination.OPTIMAL
    assert seen, "a branch and bound of a few seconds reports while it runs"
    for point in seen:  # the solver's own values: within its tolerance of valid bounds
        assert point.lower <= result.lower + 1e-6 and result.upper <= point.upper + 1e-6


@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_growing_boxes_find_the_closest_example_of_the_whole_space(engine, forest, norm):
    row = Row((0.3, -0.2, 0.1, 0.4))
    level = float(forest.eval(np.float32([row.values]))[0])
    query = Query(
        "closest",
        features(forest),
        ("x",),
        {"m": forest},
        (OutputConstraint(term(out()), ">", level + 1.0),),
        MinimizeDistance(norm, "x", row),
    )
    boxed = engine.solve(query)
    whole = engine._solve_program(query, Limits())
    assert boxed.stats["radius_phases"] > 1
    assert boxed.lower == boxed.upper == whole.lower == whole.upper
    validate_witness(query, boxed.witnesses[0])
    assert all(p.lower <= boxed.lower <= p.upper for p in boxed.trace)


def test_node_limit(forest):
    query = Query("max", features(forest), ("x",), {"m": forest}, (), Maximize(term(out())))
    result = MilpEngine("highs", "highs").solve(query, Limits(max_steps=1))
    assert result.termination in (Termination.STEP_LIMIT, Termination.OPTIMAL)
    assert result.lower <= result.upper


# -- the Gurobi licence ----------------------------------------------------------------------------


def big_query():
    """A query whose program is beyond 2000 variables."""
    rng = np.random.default_rng(3)

    def tree(depth):
        if depth == 0:
            return float(rng.normal())
        return (int(rng.integers(6)), float(rng.normal()), tree(depth - 1), tree(depth - 1))

    model = build([tree(5) for _ in range(70)], 6)
    anything = OutputConstraint(term(out()), ">", -1000.0)
    return Query("big", features(model), ("x",), {"m": model}, (anything,), Find())


def test_size_limit_of_the_pip_licence():
    program = formulate(big_query()).program
    assert not gurobi.fits_limited_licence(program)
    assert "variables" in gurobi.size_message(program)
    small = formulate(Query("s", (Feature("a"),), ("x",), {}, (), Find())).program
    assert gurobi.fits_limited_licence(small)


@needs_limited_licence
def test_milp_falls_back_to_highs_beyond_the_licence():
    result = registry.get("milp").solve(big_query())
    assert result.termination == Termination.OPTIMAL
    assert result.stats["driver"] == "highs"
    assert "solved with HiGHS" in result.message and "size-limited licence" in result.message


@needs_limited_licence
def test_gurobi_refuses_a_model_beyond_the_licence():
    result = registry.get("gurobi").solve(big_query())
    assert result.termination == Termination.LICENCE_LIMIT
    assert "variables" in result.message and "2000" in result.message


@needs_limited_licence
def test_milp_uses_gurobi_when_the_model_fits(two_trees):
    query = Query("q", features(two_trees), ("x",), {"m": two_trees}, (), Maximize(term(out())))
    result = registry.get("milp").solve(query)
    assert (result.lower, result.stats["driver"], result.message) == (7.0, "gurobi", "")


@needs_full_licence
def test_gurobi_solves_beyond_the_pip_licence():
    result = registry.get("gurobi").solve(big_query())
    assert result.termination == Termination.OPTIMAL


def test_engines_are_registered_after_the_oracle():
    names = list(registry.ENGINES)
    assert names[0] == "oracle"
    assert {"milp", "gurobi"} <= set(names)
    assert registry.get("milp").available()
    assert registry.get("gurobi").available() is LICENCE


# -- float32 points that rounding can miss (found by a review of the engine) -----------------------


def _sound_against_the_oracle(query):
    """The MILP's answer is the oracle's, or it is not exact and its bounds bracket the oracle's:
    failing to round onto float32 must never turn into a proof."""
    result = MilpEngine("highs", "highs").solve(query)
    expected = ORACLE.solve(query)
    assert_agrees(query, result, expected, engine="highs")  # undecided only as in KNOWN
    return result, expected


def test_a_missed_float32_point_is_not_a_proof():
    model = build([0.0], 3, names=("a", "b", "k"))  # the constant 0
    space = (
        Feature("a", lo=0.5, hi=2.0),
        Feature("b", lo=0.25, hi=2.3),
        Feature("k", DomainKind.INT, -2.0, 0.0),
    )
    constraints = (
        Ball("l1", "x", Row((0.0, 0.5, 0.0)), 0.7),
        AnyOf(
            (
                (Ball("l1", "x", Row((2.5, -1.5, -1.5)), 0.3),),
                (Linear((LinearTerm(2.0, "x", 2),), ">=", 0.0),),
            )
        ),
    )
    never_positive = Prove((OutputConstraint(term(out()), ">", 0.0),))
    query = Query("q", space, ("x",), {"m": model}, constraints, never_positive)
    _, expected = _sound_against_the_oracle(query)
    assert expected.termination is Termination.OPTIMAL  # a counterexample exists


def test_equal_instances_rounded_apart_are_not_infeasible():
    space = (Feature("a", lo=0.1, hi=2.3),)
    constraints = (
        AtMostKChanged("x2", "x1", 0, ((0,),)),
        Linear((LinearTerm(1.0, "x2", 0),), ">=", 0.3),
    )
    query = Query(
        "q", space, ("x1", "x2"), {}, constraints, MinimizeDistance("l1", "x2", Row((0.0,)))
    )
    result, _ = _sound_against_the_oracle(query)
    assert result.termination is not Termination.INFEASIBLE


def test_a_rounded_distance_is_not_called_optimal():
    space = tuple(Feature(f"x{i}", lo=0.1, hi=2.3) for i in range(3))
    ball = (Ball("l1", "x", Row((0.0, 1.2, 0.1)), 2.0),)
    query = Query("q", space, ("x",), {}, ball, MinimizeDistance("l1", "x", Row((0.7, 3.3, 0.7))))
    result = MilpEngine("highs", "highs").solve(query)
    validate_witness(query, result.witnesses[0])
    # This float32 point is feasible and closer than what rounding the solver's point gives (the
    # oracle, which rounds too, misses it as well): no answer above it may be called optimal.
    better = np.array([0.7, 2.3, 0.3000001013278961], dtype=np.float32)
    assert holds(ball[0], {"x": better}, {})
    closest = distance("l1", better, np.float32(query.goal.center.values))
    assert result.lower <= closest
    if result.exact:
        assert result.upper <= closest


# -- float32 corners where MILP on HiGHS fails; found by the oracle's corner queries ---------------
# (tests/reference/strategies.py corner_queries; the oracle's answers are checked against the
# threshold grid in test_oracle.py). Pinned for the MILP fix: remove each mark once it passes.

INT = DomainKind.INT
UNBOUNDED_INTS = tuple(Feature(f"x{i}", INT) for i in range(3))


def test_int_point_below_a_huge_negative_threshold_is_refused(engine):
    """0.5 at x0 < -1e30 (x0 = -1.0000001e30 is a whole float32): both solvers answered optimal 0,
    their bounds read as infinite from 1e20. The engine refuses such constants up front."""
    model = build([(0, -1e30, 0.5, 0.0)], 3)
    query = Query("q", UNBOUNDED_INTS, ("x",), {"m": model}, (), Maximize(term(out())))
    with pytest.raises(UnsupportedQuery, match="cannot hold a constant"):
        engine.solve(query)


def test_int_range_without_a_float32(engine):
    """[-1e30, -1e30] holds no float32 (-1e30 is not one): infeasible (the witness used to leave
    the domain)."""
    space = (*UNBOUNDED_INTS[:2], Feature("x2", INT, -1e30, -1e30))
    model = build([(0, -1e30, (0, -1e30, 0.0, 1.0), 2.0)], 3)
    query = Query("q", space, ("x",), {"m": model}, (), Maximize(term(out())))
    check_against_oracle(query, engine)


def test_int_distance_to_a_huge_row_is_refused(engine):
    """HiGHS answered 'Empty' and Gurobi 'infeasible' (the optimum is 1.0000000150474662e30)."""
    space = (*UNBOUNDED_INTS[:2], Feature("x2", INT, 8.000000000000002, math.inf))
    model = build([(0, -1e30, 0.0, 0.0)], 3)
    goal = MinimizeDistance("linf", "x", Row((-1e30, -1e30, -1e30)))
    with pytest.raises(UnsupportedQuery, match="cannot hold a constant"):
        engine.solve(Query("q", space, ("x",), {"m": model}, (), goal))


@pytest.mark.parametrize("t", [2.0**24 + 3, 2.0**25 + 5, -(2.0**26) + 7])
def test_int_split_beyond_two_to_the_24(engine, t):
    """Beyond 2**24 float32 skips integers: the cut of ``x < t`` and the ends of segments are
    whole float32 values, not ``t - 1``."""
    model = build([(0, t, 1.0, (0, t + 40.0, 3.0, 2.0))], 1)
    space = (Feature("x0", INT, -(2.0**27), 2.0**27),)
    for goal in (Maximize(term(out())), Minimize(term(out()))):
        query = Query("q", space, ("x",), {"m": model}, (), goal)
        check_against_oracle(query, engine)


def test_a_closest_pair_a_float32_step_apart_is_not_claimed_optimal_below_the_resolution():
    """Two instances, a weighted L-inf distance: the MILP's optimum 0 rounds to a pair one
    float32 step apart across the threshold 0.25 (distance 1.5e-9, below what the solver
    resolves); the engine answered `optimal` at 1.5e-9, a lower bound above the true optimum 0
    (found by hypothesis in CI). Now the bounds hold and the answer says it is unknown."""
    n = 15
    model = Ensemble(
        feature=np.array([1, 0, -1, -1, -1, 0, 0, -1, -1, -1, 1, -1, 0, -1, -1], dtype=np.int32),
        threshold=np.array([0.25, -1, 0, 0, 0, -1, 1, 0, 0, 0, -1, 0, -1, 0, 0], dtype=np.float32),
        left=np.array([1, 2, -1, -1, -1, 6, 7, -1, -1, -1, 11, -1, 13, -1, -1], dtype=np.int32),
        right=np.array([4, 3, -1, -1, -1, 9, 8, -1, -1, -1, 12, -1, 14, -1, -1], dtype=np.int32),
        value=np.zeros((n, 1)),
        tree_offsets=np.array([0, 5, 10, 15]),
        base_score=np.array([0.0]),
        feature_names=("x0", "x1", "x2"),
        task="regression",
    )
    features = tuple(Feature(f"x{i}", DomainKind.REAL, -math.inf, math.inf) for i in range(3))
    gap = OutputTerm((OutputAtom(1.0, "m", "x2", 0), OutputAtom(-1.0, "m", "x1", 0)), 0.0)
    query = Query(
        "weighted_distance",
        features,
        ("x1", "x2"),
        {"m": model},
        (Tie("x1", "x2", 2), OutputConstraint(gap, "<", 0.5)),
        MinimizeDistance("linf", "x2", "x1", (2.0, 0.1, 0.1)),
    )
    optimum = registry.get("oracle").solve(query).lower
    assert optimum == 0.0
    for engine in (MilpEngine("highs", "highs"), registry.get("milp")):
        result = engine.solve(query, Limits(timeout_s=20))
        assert result.termination in (Termination.OPTIMAL, Termination.ERROR), result
        assert result.lower <= optimum <= result.upper, result
        if result.termination is Termination.OPTIMAL:
            assert result.lower == optimum, result
