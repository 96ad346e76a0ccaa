"""The ``l2`` distance: its exact root (veritas_dsl/ir/root.py), and every engine that accepts
it against the threshold grid (tests/reference/grid.py) on random small forests: the bounds, and
each witness's distance recomputed exactly. Engines that do not accept it refuse it."""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from veritas_dsl.ir import (
    Ball,
    DomainKind,
    Feature,
    Interval,
    Maximize,
    MinimizeDistance,
    OutputConstraint,
    Query,
    Row,
)
from veritas_dsl.ir.empty import emptiness
from veritas_dsl.ir.evaluate import distance, holds
from veritas_dsl.ir.root import Root
from veritas_dsl.lang.scales import weight
from veritas_dsl.result import Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.validate import validate_witness

from conftest import build, examples
from reference.grid import cells, representative
from reference.ir import features, out, term
from reference.strategies import WEIGHTS, ensembles, rows

N = 3
#: Output above 0 at x0 >= 0.5 (2.0 once x2 < 2) or at x1 >= -1 (0.0 is not above): the closest
#: such point to the origin is a gap of 0.5 in x0 alone, or weighted, maybe of x1 alone.
HAND = build([(0, 0.5, (1, -1.0, -1.0, 0.0), (2, 2.0, 2.0, 0.5))], N)
#: Above 0 at x1 >= -1 with x0 < 0 or in [0, 0.25): from (0, -1.5, -1.5), 0.5 away in x1, and
#: the cell below 0 adds 1e-45 in x0, which the square root rounds away.
NEAR_TIE = build([(0, 0.0, (1, -1.0, -1.0, 1.0), (0, 0.25, (1, -1.0, -1.0, 1.0), -1.0))], N)
#: Above 0 at x0 >= 0.3 and x1 >= 0.4 (0.5 from the origin in L2, 0.7 in L1), or at x2 >= 0.6.
TWO_FEATURES = build([(0, 0.3, (2, 0.6, -1.0, 1.0), (1, 0.4, (2, 0.6, -1.0, 1.0), 1.0))], N)
#: Above 0 at x1 < -1 only; x0 splits at -0.5, the row's own value, for nothing. A MILP once
#: moved x0 to the float32 below -0.5 too: 1e-15 of the squared distance, below its resolution,
#: and called that point's distance the optimum's lower bound.
IDLE_SPLIT = build(
    [(0, -1.0, (0, -1.0, 0.0, 0.0), (0, -0.5, 0.0, 0.0)), (1, -1.0, 0.5, 0.0)], N
)
SPACE = features([f"x{i}" for i in range(N)])


def accepting() -> list[str]:
    """The engines that list l2 (whether installed here or not)."""
    return [n for n, e in registry.ENGINES.items() if "l2" in e.capabilities.constructs]


def installed(names) -> list[str]:
    return [n for n in names if registry.get(n).available()]


#: Engines that take l2 as a distance to a row to minimise only, not as a ball or between two
#: instances (those are the oracle's).
GOAL_ONLY = ("astar", "milp", "gurobi")


# -- the exact root ---------------------------------------------------------------------------


def _decimal_sqrt(square: Fraction) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 80
        return (Decimal(square.numerator) / Decimal(square.denominator)).sqrt()


@given(
    st.fractions(min_value=0, max_value=10**40)
    | st.integers(0, 2**60).map(lambda n: Fraction(n, 2**80))
    | st.floats(0, 1e30).map(lambda v: Fraction(v) ** 2)
)
@example(Fraction(2))
@example(Fraction(0))
@example(Fraction(1, 10**300))
def test_the_root_rounds_down_up_and_to_the_nearest_float64(square):
    root = Root(square)
    down, up = root.down(), root.up()
    assert Fraction(down) ** 2 <= square <= Fraction(up) ** 2
    assert up == down or up == math.nextafter(down, math.inf)
    assert Fraction(math.nextafter(down, math.inf)) ** 2 > square or up == down
    assert float(root) == float(_decimal_sqrt(square))  # 80 digits: the nearest float64


def test_the_root_compares_exactly():
    two = Root(2)
    assert two < 1.4142135623730951 and two > 1.414213562373095  # sqrt(2) lies between
    assert Root(Fraction(9, 4)) == 1.5 == Root(Fraction(9, 4))
    assert two > -1 and not two <= -1 and two < math.inf and two >= Root(2)
    assert Root(0) == 0 and Root(0) > -0.5
    assert max(Root(3), Root(2), Fraction(1)) == Root(3)
    with pytest.raises(ValueError):
        Root(-1)


def test_a_ball_holds_on_its_exact_square():
    # 0.1 and 0.2 as float32 are not 0.1 and 0.2: the squares decide, with no tolerance
    a, b = Row((0.0, 0.0)), Row((0.3, 0.4))
    square = Fraction(float(b.values[0])) ** 2 + Fraction(float(b.values[1])) ** 2
    inputs = {"x": b.values}
    radius = float(Root(square).down())
    assert holds(Ball("l2", "x", a, float(Root(square).up())), inputs, {})
    assert holds(Ball("l2", "x", a, radius), inputs, {}) == (Fraction(radius) ** 2 >= square)
    assert not holds(Ball("l2", "x", a, -1.0), inputs, {})
    assert distance("l2", b.values, a.values) == float(Root(square))
    assert distance("l2", b.values, a.values, (2.0, 2.0)) == float(Root(4 * square))


def test_the_static_box_does_not_call_an_l2_ball_with_room_in_every_feature_decided():
    # each feature can be within 1.2 of 0 on its own, but not both: the box cannot tell
    space = tuple(Feature(f"f{i}", DomainKind.REAL) for i in range(2))
    box = (Interval("x", 0, 1.0, 2.0), Interval("x", 1, 1.0, 2.0))
    ball = Ball("l2", "x", Row((0.0, 0.0)), 1.2)
    assert emptiness(space, ("x",), (*box, ball)).empty is None
    assert emptiness(space, ("x",), (*box, Ball("l2", "x", Row((0.0, 0.0)), 0.5))).empty is True


# -- engines against the threshold grid -----------------------------------------------------


def cell_square(lo, hi, row, weights) -> Fraction:
    """The exact squared weighted L2 distance from ``row`` to the closed cell ``[lo, hi]``."""
    total = Fraction(0)
    for f, value in enumerate(row):
        gap = Fraction(0)
        if math.isfinite(lo[f]) and lo[f] > value:
            gap = Fraction(float(lo[f])) - Fraction(value)
        elif math.isfinite(hi[f]) and hi[f] < value:
            gap = Fraction(value) - Fraction(float(hi[f]))
        total += (gap * Fraction(1.0 if weights is None else weights[f])) ** 2
    return total


def witness_square(point, row, weights) -> Fraction:
    return sum(
        ((Fraction(float(p)) - Fraction(r)) * Fraction(1.0 if weights is None else w)) ** 2
        for p, r, w in zip(point, row, weights or [1.0] * len(row), strict=True)
    )


#: Engines whose l2 optimum is exact only to the solver's resolution (squares of distances a
#: float32 step apart differ by 1e-15 of them): their lower bound is the solver's, below.
TO_RESOLUTION = ("milp", "gurobi")


def agrees(name: str, result, optimum: float) -> None:
    """``result`` brackets the exact ``optimum`` (rounded as a distance is): exactly, or for an
    engine of :data:`TO_RESOLUTION` from below by its bound and from above within 1e-9."""
    if name not in TO_RESOLUTION or not math.isfinite(optimum):
        assert result.lower == result.upper == optimum, (name, result)
        return
    assert result.lower <= optimum <= result.upper <= optimum * (1 + 1e-9), (name, result)


def run(name: str, query: Query):
    result = registry.get(name).solve(query, Limits(timeout_s=60))
    assert result.termination in (Termination.OPTIMAL, Termination.INFEASIBLE), result
    for witness in result.witnesses:
        validate_witness(query, witness)
    return result


weights_ = st.none() | st.lists(st.sampled_from(WEIGHTS), min_size=N, max_size=N).map(tuple)


@settings(deadline=None, max_examples=100)
@given(
    model=ensembles(n_features=N),
    row=rows(N),
    weights=weights_,
    level=st.sampled_from([-0.5, 0.0, 1.0]),
)
@example(model=HAND, row=Row((0.0, 0.0, 0.0)), weights=None, level=0.0)
@example(model=HAND, row=Row((0.0, 0.0, 0.0)), weights=(3.0, 0.25, 1.0), level=0.0)
@example(model=TWO_FEATURES, row=Row((0.0, 0.0, 0.0)), weights=None, level=0.0)
@example(model=NEAR_TIE, row=Row((0.0, -1.5, -1.5)), weights=None, level=0.0)
@example(model=IDLE_SPLIT, row=Row((-0.5, -0.5, -1.5)), weights=None, level=0.0)
def test_closest_l2_example_matches_the_cells(model, row, weights, level):
    row_values = row.values
    best = None
    for lo, hi in cells([model], N):
        if model.eval(representative(lo, hi))[0] > level:
            square = cell_square(lo, hi, row_values, weights)
            best = square if best is None else min(best, square)
    goal = MinimizeDistance("l2", "x", row, weights)
    query = Query(
        "l2", SPACE, ("x",), {"m": model},
        (OutputConstraint(term(out()), ">", level),), goal,
    )  # fmt: skip
    for name in installed(accepting()):
        result = run(name, query)
        if best is None:
            assert result.termination is Termination.INFEASIBLE
            continue
        agrees(name, result, float(Root(best)))
        # the witness is no closer than the cells allow, and at the reported distance: exactly
        # the best, or (its gap of 1e-45 beside a threshold at 0 squared away) rounding to it
        square = witness_square(result.witnesses[0].inputs["x"], row_values, weights)
        assert square >= best and float(Root(square)) == result.upper, name


@settings(deadline=None, max_examples=100)
@given(
    model=ensembles(n_features=N),
    row=rows(N),
    weights=weights_,
    radius=st.sampled_from([0.0, 0.3, 1.0, 2.5]),
)
def test_largest_output_in_an_l2_ball_matches_the_cells(model, row, weights, radius):
    inside = [
        model.eval(representative(*clamped))[0]
        for lo, hi in cells([model], N)
        if cell_square(lo, hi, row.values, weights) <= Fraction(radius) ** 2
        for clamped in [clamp(lo, hi, row.values)]
    ]
    ball = Ball("l2", "x", row, radius, weights)
    query = Query("ball", SPACE, ("x",), {"m": model}, (ball,), Maximize(term(out())))
    for name in installed(n for n in accepting() if n not in GOAL_ONLY):
        result = run(name, query)
        assert result.lower == result.upper == max(inside), name  # the row's own cell is inside
        point = result.witnesses[0].inputs["x"]
        assert witness_square(point, row.values, weights) <= Fraction(radius) ** 2, name


def clamp(lo, hi, row):
    """The point of the cell closest to the row, as a cell of one point."""
    point = np.clip(np.asarray(row, dtype=np.float64), lo, hi).astype(np.float32)
    return point, point


def test_engines_that_do_not_list_l2_refuse_it_naming_those_that_do(two_trees):
    query = Query(
        "q", features(two_trees), ("x",), {"m": two_trees}, (),
        MinimizeDistance("l2", "x", Row((0.0,) * two_trees.n_features)),
    )  # fmt: skip
    takers = accepting()
    assert {"oracle", "milp", "astar"} <= set(takers)
    for name, engine in registry.ENGINES.items():
        if name in takers:
            continue
        with pytest.raises(UnsupportedQuery, match="does not support l2; engines that can: "):
            registry.check_supports(engine, query)


def test_the_oracle_refuses_an_l2_distance_it_would_need_a_quadratic_program_for(two_trees):
    # x measured against two rows: the closest point is no longer per feature
    n = two_trees.n_features
    ball = Ball("l2", "x", Row((1.0,) * n), 1.0)
    query = Query(
        "q", features(two_trees), ("x",), {"m": two_trees}, (ball,),
        MinimizeDistance("l2", "x", Row((0.0,) * n)),
    )  # fmt: skip
    with pytest.raises(UnsupportedQuery, match="quadratic program"):
        registry.get("oracle").solve(query)


#: Domains of the int test: x0 int in [-3, 3], x1 real in [-2, 2], x2 int unbounded.
KINDS = (DomainKind.INT, DomainKind.REAL, DomainKind.INT)
BOUNDS = ((-3.0, 3.0), (-2.0, 2.0), (-math.inf, math.inf))


def closest_in_cell(lo, hi, row):
    """The point of the cell (within BOUNDS, whole numbers where KINDS say) nearest the row per
    feature, or None when the cell holds no point."""
    point = []
    for f, value in enumerate(row):
        a, b = max(lo[f], BOUNDS[f][0]), min(hi[f], BOUNDS[f][1])
        if KINDS[f] is DomainKind.INT:
            a, b = math.ceil(a) if math.isfinite(a) else a, math.floor(b) if math.isfinite(b) else b
        if a > b:
            return None
        x = min(max(value, a), b)
        if KINDS[f] is DomainKind.INT and x != math.floor(x):
            x = min((math.floor(x), math.ceil(x)), key=lambda n: abs(n - value))
        point.append(x)
    return np.array(point, dtype=np.float32)


@settings(deadline=None, max_examples=60)
@given(
    model=ensembles(n_features=N),
    row=rows(N),
    weights=weights_,
    level=st.sampled_from([-0.5, 0.0, 1.0]),
)
def test_closest_l2_example_over_int_features_matches_the_cells(model, row, weights, level):
    best = None
    for lo, hi in cells([model], N):
        point = closest_in_cell(lo, hi, row.values)
        if point is not None and model.eval(point)[0] > level:
            square = witness_square(point, row.values, weights)
            best = square if best is None else min(best, square)
    query = Query(
        "l2 int", features([f"x{i}" for i in range(N)], list(KINDS), list(BOUNDS)), ("x",),
        {"m": model},
        (OutputConstraint(term(out()), ">", level),), MinimizeDistance("l2", "x", row, weights),
    )  # fmt: skip
    for name in installed(accepting()):
        result = run(name, query)
        if best is None:
            assert result.termination is Termination.INFEASIBLE, name
            continue
        agrees(name, result, float(Root(best)))
        square = witness_square(result.witnesses[0].inputs["x"], row.values, weights)
        assert square >= best and float(Root(square)) == result.upper, name


def l2_queries(model) -> dict[str, Query]:
    """A ball, a distance between two instances and a distance to a row, each alone."""
    space, zero = features(model), Row((0.0,) * model.n_features)
    return {
        "ball": Query(
            "ball", space, ("x",), {"m": model}, (Ball("l2", "x", zero, 1.0),),
            Maximize(term(out())),
        ),
        "pair": Query(
            "pair", space, ("x", "y"), {"m": model},
            (OutputConstraint(term(out("y")), ">", 2.0),), MinimizeDistance("l2", "x", "y"),
        ),
        "row": Query(
            "row", space, ("x",), {"m": model}, (OutputConstraint(term(out()), ">", 2.0),),
            MinimizeDistance("l2", "x", zero),
        ),
    }  # fmt: skip


@pytest.mark.parametrize("kind", ["ball", "pair", "row"])
def test_a_refusal_names_exactly_the_engines_that_answer(kind, two_trees):
    # The hint "engines that can" is what a user tries next: each engine it names answers the
    # query (installed ones are run), and each engine left out refuses it.
    query = l2_queries(two_trees)[kind]
    able = set(registry.able(query))
    assert able == ({"oracle"} if kind != "row" else set(GOAL_ONLY) | {"oracle"})
    for name, engine in registry.ENGINES.items():
        if name in able:
            if engine.available():
                result = engine.solve(query)
                assert result.termination is not Termination.ERROR, (name, result)
            continue
        hint = f"engines that can: {', '.join(registry.able(query))}$"
        with pytest.raises(UnsupportedQuery, match=hint):
            registry.check_supports(engine, query)


# -- the MILP at extreme scales (as tests/solvers/test_milp_scales.py does for l1) -------------


@pytest.mark.parametrize(
    ("seed", "scales"),
    [(1, (1e-13, 1e-13)), (1, (2.85e-25, 1e-13)), (4, (2.35e-06, 6.28e6, 4.44e-23)),
     (0, (1e13, 1e13)), (0, (1e13, 1e-13))],
)  # fmt: skip
def test_the_milp_answers_l2_at_the_fuzzers_scales_as_the_oracle(seed, scales):
    from solvers.test_milp_scales import xgboost_closest

    query = xgboost_closest(seed, len(scales), scales)
    query = replace(query, goal=replace(query.goal, norm="l2"))
    expected = registry.get("oracle").solve(query)
    for name in installed(("milp", "gurobi")):  # A* takes weights within [2**-60, 2**60]
        result = run(name, query)
        assert result.termination == expected.termination, name
        agrees(name, result, expected.upper)


def scales(decades: float):
    one = st.floats(-decades, decades).map(lambda e: 10.0**e)
    return st.lists(one, min_size=N, max_size=N) | one.map(lambda s: [s] * N)


@pytest.mark.parametrize(
    ("name", "decades"), [("milp", 30.0), ("astar", 15.0)]  # A*: weights within 2**+-60
)
@settings(deadline=None, max_examples=examples(2))
@given(data=st.data(), model=ensembles(n_features=N), row=rows(N), flip=st.sampled_from("<>"))
def test_l2_at_every_scale_is_answered_as_the_oracle(name, decades, data, model, row, flip):
    goal = MinimizeDistance("l2", "x", row, tuple(weight(s) for s in data.draw(scales(decades))))
    constraints = (OutputConstraint(term(out()), flip, 0.0),)
    query = Query("scaled", SPACE, ("x",), {"m": model}, constraints, goal)
    expected = registry.get("oracle").solve(query)
    result = run(name, query)
    assert result.termination == expected.termination
    agrees(name, result, expected.upper)
