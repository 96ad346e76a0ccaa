"""The brute-force oracle: its limits, and its answers against the threshold grid
(tests/reference/grid.py) on random small ensembles. The questions answered by hand are asked of
every engine, the oracle included, in test_hand_cases.py."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from veritas_dsl import parse
from veritas_dsl.cli import ExitCode, main
from veritas_dsl.float32 import next_down
from veritas_dsl.ir import (
    AtMostKChanged,
    Ball,
    DomainKind,
    Interval,
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
from veritas_dsl.ir.constructs import constructs
from veritas_dsl.ir.evaluate import holds
from veritas_dsl.ir.query import change_units
from veritas_dsl.result import Termination
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.solvers.oracle.rational import Program
from veritas_dsl.solvers.sat.engine import SatEngine
from veritas_dsl.validate import validate_witness

from conftest import build
from reference.grid import cells, grid_points, representative
from reference.ir import features, out, term
from reference.strategies import (
    CORNER_BOUNDS,
    CORNER_THRESHOLDS,
    CORNER_VALUES,
    corner_queries,
    ensembles,
)

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


def test_too_many_ways_to_change_is_refused():
    """A change count against one row and a distance to another make every feature contested:
    choosing which 4 of 30 move is 31,930 ways per leaf combination, refused before searching."""
    model = build([(0, 0.5, 0.0, 1.0)], 30)
    constraints = (AtMostKChanged("x", Row((0.0,) * 30), 4, change_units(30)),)
    query = Query(
        "q",
        features(model),
        ("x",),
        {"m": model},
        constraints,
        MinimizeDistance("l1", "x", Row((1.0,) * 30)),
    )
    with pytest.raises(UnsupportedQuery, match="31931 ways"):
        ORACLE.solve(query)
    # against the same row, keeping every feature is free: nothing to enumerate
    same = replace(query, goal=MinimizeDistance("l1", "x", Row((0.0,) * 30)))
    assert ORACLE.solve(same).lower == 0.0


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


# -- the float32 corners: huge and tiny magnitudes, -0.0, int bounds between whole numbers ------

#: Thresholds at the corners: 1e30 (beyond what a float64 solver with tolerances separates from
#: infinity), 1e-30 and the smallest subnormal (below any tolerance), and 0.
CORNER_MODEL = build(
    [
        (0, 1e-30, -1.0, (1, 0.0, 0.5, 2.0)),
        (1, 1e30, 0.0, 1.0),
        (2, -1e-30, (0, 1e30, 1.5, -2.0), (2, 1e-45, 0.25, 0.0)),
    ],
    3,
)


def grid_optimum(model, kinds, bounds, row, k):
    """The maximum and minimum of ``model`` over the box with at most ``k`` features away from
    ``row``, by the threshold grid with the row's values added (see reference/grid.py); None
    when no point qualifies."""
    integral = [kind is DomainKind.INT for kind in kinds]
    points = grid_points([model], bounds, integral, [(v,) for v in row])
    changed = (points != np.asarray(row, dtype=np.float32)).sum(axis=1)
    values = model.eval(points[changed <= k])
    return (float(values.max()), float(values.min())) if len(values) else None


@pytest.mark.parametrize(
    "row",
    [
        (1e-30, 0.0, -1e-30),  # every value on a threshold
        (-0.0, -0.0, -0.0),
        (1e30, 1e30, 1e-45),
        (next_down(1e-30), next_down(0.0), 1e-40),  # just below thresholds; a subnormal
        (-1e30, 3.0, 1e30),
    ],
)
@pytest.mark.parametrize("k", [0, 1, 2])
def test_change_counts_at_float32_corners(row, k):
    """The oracle used to fail with "rounding to float32 broke AtMostKChanged" and "HiGHS stopped
    with status Empty" on these: its big-M program could not tell 1e30 from infinity nor 1e-30
    from 0. Change counts are now chosen exactly."""
    kinds = [DomainKind.REAL] * 3
    bounds = [(-math.inf, math.inf)] * 3
    best, worst = grid_optimum(CORNER_MODEL, kinds, bounds, row, k)
    constraints = [AtMostKChanged("x", Row(row), k, change_units(3))]
    for goal, expected in ((Maximize(term(out())), best), (Minimize(term(out())), worst)):
        result = solve(CORNER_MODEL, goal, constraints)
        assert (result.termination, result.lower, result.upper) == (
            Termination.OPTIMAL,
            expected,
            expected,
        )
    # the closest point to another row under the change count: the row's own values where kept
    result = solve(CORNER_MODEL, MinimizeDistance("linf", "x", Row((0.5, 0.5, 0.5))), constraints)
    assert result.termination == Termination.OPTIMAL
    assert result.lower == result.upper


INT = DomainKind.INT
BETWEEN = (8.000000000000002, 16.999999999999996)  # holds the whole numbers 9 to 16


@pytest.mark.parametrize(
    "constraint",
    [
        AtMostKChanged("x", Row((12.0, 1e30, 0.0)), 1, change_units(3)),
        Ball("l1", "x", Row((12.5, 0.0, 1e-30)), 1.0),
        Linear((LinearTerm(1.0, "x", 0), LinearTerm(1.0, "x", 1)), "<=", 12.0),
    ],
)
def test_int_bounds_between_whole_numbers(constraint):
    """An int feature bounded by non-integral floats holds the whole numbers between them; the
    oracle used to stop with "HiGHS stopped with status Empty" next to thresholds at 1e30."""
    model = build([(0, 10.5, (1, 1e30, 1.0, -1.0), 2.0), (2, 1e-30, (0, 12.5, 0.5, 0.0), 1.0)], 3)
    kinds = [INT, DomainKind.REAL, DomainKind.REAL]
    bounds = [BETWEEN, (-math.inf, math.inf), (-math.inf, math.inf)]
    for goal in (Maximize(term(out())), Minimize(term(out()))):
        result = solve(model, goal, [constraint], kinds=kinds, bounds=bounds)
        assert result.termination == Termination.OPTIMAL
        w = result.witnesses[0].inputs["x"]
        assert 9 <= w[0] <= 16 and w[0] == round(w[0])
    # the same bounds as an interval over unbounded int features (math.ceil(-inf) used to raise)
    kinds[1] = INT
    interval = Interval("x", 0, *BETWEEN)
    unbounded = [(-math.inf, math.inf)] * 3
    for goal in (Maximize(term(out())), Minimize(term(out()))):
        narrowed = solve(model, goal, [interval, constraint], kinds=kinds, bounds=unbounded)
        direct = solve(model, goal, [constraint], kinds=kinds, bounds=bounds)
        assert (narrowed.termination, narrowed.lower) == (direct.termination, direct.lower)


@pytest.mark.parametrize(
    "row", [(12.0, 1e30, -0.0), (12.0, 1e-30, 1e-45), (9.5, next_down(1e30), 1e-30)]
)
@pytest.mark.parametrize("k", [0, 1, 2])
def test_corners_in_a_spec(tmp_path, row, k):
    """The same corners written in .ver: int features without bounds narrowed between whole
    numbers, and a change count against a data row with -0.0, 1e30, 1e-30 and a subnormal."""
    model = build([(0, 10.5, (1, 1e30, 1.0, -1.0), 2.0), (2, 1e-30, (0, 12.5, 0.5, 0.0), 1.0)], 3)
    model.save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1,x2\n" + ",".join(repr(v) for v in row) + "\n")
    text = (
        'model m = ensemble "m.json"\ndata rows = csv "rows.csv"\n'
        "features {\n  x0 : int in [-inf, inf]\n  x1 : int in [-inf, inf]\n}\n"
        "query q {\n  input x\n"
        "  where x.x0 >= 8.000000000000002 and x.x0 <= 16.999999999999996\n"
        f"  where changed(x, rows[0]) <= {k}\n  minimize m(x)\n}}\n"
    )
    (lowered,) = parse(text, str(tmp_path / "q.ver")).lowered()
    result = ORACLE.solve(lowered.query)
    kinds = [INT, INT, DomainKind.REAL]
    bounds = [BETWEEN, (-math.inf, math.inf), (-math.inf, math.inf)]
    expected = grid_optimum(model, kinds, bounds, row, k)
    if expected is None:
        assert result.termination == Termination.INFEASIBLE
    else:
        assert (result.termination, result.lower, result.upper) == (
            Termination.OPTIMAL,
            expected[1],
            expected[1],
        )
    for witness in result.witnesses:
        validate_witness(lowered.query, witness)


@pytest.mark.parametrize(
    "constraints",
    [
        (),
        (Ball("l1", "x2", "x1", 1.0),),
        (Ball("linf", "x2", "x1", 1.0), AtMostKChanged("x2", "x1", 1, change_units(2))),
        (Tie("x1", "x2", 1),),
    ],
)
def test_two_instances_over_unbounded_ints(constraints):
    """Unbounded int features used to raise OverflowError (math.ceil of an infinite bound)."""
    model = build([(0, 10.5, (1, 0.0, -1.0, 0.5), 1.0), (1, 2.5, 0.0, 2.0)], 2)
    goal = Maximize(term(out("x2"), out("x1", coef=-1.0)))
    result = solve(model, goal, constraints, ("x1", "x2"), kinds=[INT, INT])
    # Every threshold lies in [-1, 11]: whole numbers there meet every cell.
    window = np.array(list(itertools.product(range(-1, 12), repeat=2)), dtype=np.float32)
    values = model.eval(window)
    query = Query("q", features(model, [INT, INT]), ("x1", "x2"), {"m": model}, constraints, goal)
    best = max(
        values[j] - values[i]
        for i, j in itertools.product(range(len(window)), repeat=2)
        if all(holds(c, {"x1": window[i], "x2": window[j]}, {}) for c in query.constraints)
    )
    assert (result.termination, result.lower, result.upper) == (Termination.OPTIMAL, best, best)


def test_two_instances_over_unbounded_ints_in_a_spec(tmp_path):
    model = build([(0, 10.5, (1, 0.0, -1.0, 0.5), 1.0), (1, 2.5, 0.0, 2.0)], 2)
    model.save(tmp_path / "m.json")
    text = (
        'model m = ensemble "m.json"\n'
        "features {\n  x0 : int in [-inf, inf]\n  x1 : int in [-inf, inf]\n}\n"
        "query gap {\n  input x1, x2\n  where l1(x1, x2) <= 1\n  maximize m(x2) - m(x1)\n}\n"
    )
    (lowered,) = parse(text, str(tmp_path / "q.ver")).lowered()
    goal = Maximize(term(out("x2"), out("x1", coef=-1.0)))
    direct = solve(model, goal, [Ball("l1", "x1", "x2", 1.0)], ("x1", "x2"), kinds=[INT, INT])
    result = ORACLE.solve(lowered.query)
    assert (
        (result.termination, result.lower)
        == (direct.termination, direct.lower)
        == (
            Termination.OPTIMAL,
            2.0,
        )
    )


def test_too_many_combinations_to_count_in_a_float_is_refused(tmp_path, capsys):
    """A two-instance query over a large model with unbounded int features combines more leaves
    than a float64 holds; formatting the count raised "int too large to convert to float"."""
    model = build([(0, float(t), (1, 0.5, 1.0, 2.0), (1, 1.5, 3.0, 4.0)) for t in range(300)], 2)
    model.save(tmp_path / "m.json")
    path = tmp_path / "q.ver"
    path.write_text(
        'model m = ensemble "m.json"\nfeatures {\n  x0 : int in [-inf, inf]\n'
        "  x1 : int in [-inf, inf]\n}\n"
        "query gap {\n  input x1, x2\n  maximize m(x2) - m(x1)\n  solve with oracle\n}\n"
    )
    assert main(["run", str(path)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "combines about 1e" in err and "brute-force oracle answers tiny ensembles only" in err


@given(
    model=ensembles(n_features=3, thresholds=CORNER_THRESHOLDS),
    kinds=st.lists(st.sampled_from([INT, DomainKind.REAL]), min_size=3, max_size=3),
    ends=st.lists(st.sampled_from(CORNER_BOUNDS), min_size=6, max_size=6),
    row=st.lists(st.sampled_from(CORNER_VALUES), min_size=3, max_size=3),
    k=st.integers(0, 3),
)
def test_corner_boxes_match_the_grid(model, kinds, ends, row, k):
    """Boxes with corner bounds, int or real, and a change count against a corner row: the
    optimum equals the threshold grid's."""
    bounds = [tuple(sorted(ends[2 * f : 2 * f + 2])) for f in range(3)]
    expected = grid_optimum(model, kinds, bounds, row, k)
    constraints = [AtMostKChanged("x", Row(tuple(row)), k, change_units(3))]
    for goal, index in ((Maximize(term(out())), 0), (Minimize(term(out())), 1)):
        result = solve(model, goal, constraints, kinds=kinds, bounds=bounds)
        if expected is None:
            assert result.termination == Termination.INFEASIBLE
        else:
            assert (result.termination, result.lower, result.upper) == (
                Termination.OPTIMAL,
                expected[index],
                expected[index],
            )


#: The other exact engines the corner queries are checked against where they accept them. MILP
#: is not among them yet: it errs or misses optima at these corners (test_milp.py pins the cases).
EXACT_ENGINES = (SatEngine(), AStarEngine())


#: Integer columns near 1e30 under an L1 ball whose constants are not whole: the depth-first
#: branch and bound walked a staircase (each "up" branch left the other column fractional) and
#: gave up after MAX_NODES; best-first answers it in a handful of nodes.
STAIRCASE = Query(
    "corner",
    features(
        ["x0", "x1", "x2"],
        [DomainKind.INT] * 3,
        [(-1e30, math.inf), (-math.inf, 0.49999999999), (-math.inf, math.inf)],
    ),
    ("x1", "x2"),
    {
        "m": build(
            [
                (0, -1e30, (2, 1e-30, 2.0, 0.5), (2, -1e30, -0.5, 1.5)),
                (0, 0.5, 1.0, 1.5),
                (1, 0.5, -1.5, 0.5),
            ],
            3,
            base=1.0,
        )
    },
    (
        AtMostKChanged("x1", "x2", 0, change_units(3)),
        Ball("l1", "x1", Row((8.499999046325684, 1e-45, -1.00000009060533e30)), 1e30),
    ),
    MinimizeDistance("linf", "x2", Row((-1e30, 0.4999999701976776, 1e-30))),
)


@given(query=corner_queries())
@example(query=STAIRCASE)
def test_corner_queries_are_answered_exactly(query):
    """Every corner query (reference/strategies.py) is answered, never ``error``, with witnesses
    that reproduce, and as the other exact engines answer it where they accept it."""
    result = ORACLE.solve(query)  # tiny models: never refused
    assert result.termination in (Termination.OPTIMAL, Termination.INFEASIBLE), result.message
    for witness in result.witnesses:
        validate_witness(query, witness)
    for engine in EXACT_ENGINES:
        if not constructs(query) <= engine.capabilities.constructs:
            continue
        try:
            other = engine.solve(query, Limits(timeout_s=60))
        except UnsupportedQuery:
            continue  # e.g. A* refuses int features bounded beyond 2**24
        assert other.termination == result.termination, (engine.name, other, result)
        assert (other.lower, other.upper) == (result.lower, result.upper), (engine.name, other)


# -- the exact rational programs (solvers/oracle/rational.py) against HiGHS -----------------------

halves = st.integers(-6, 6).map(lambda v: Fraction(v, 2))


@st.composite
def small_programs(draw):
    program = Program()
    for _ in range(draw(st.integers(1, 4))):
        lo, hi = sorted([draw(halves), draw(halves)])
        program.column(lo, hi, integer=draw(st.booleans()), cost=draw(st.integers(-2, 2)))
    n = len(program.lo)
    for _ in range(draw(st.integers(0, 4))):
        coefs = {j: draw(st.integers(-2, 2)) for j in range(n)}
        lower = draw(st.one_of(st.none(), halves))
        upper = draw(st.one_of(st.none(), halves))
        program.row(lower, upper, coefs)
    return program


@given(program=small_programs())
def test_exact_programs_match_highs(program):
    """Feasibility and optimum of small mixed-integer programs as HiGHS finds them (up to its
    tolerances: the data are halves, so nothing lies closer to a bound than they reach)."""
    import highspy

    x = program.solve()
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    h.setOptionValue("mip_feasibility_tolerance", 1e-9)
    n = len(program.lo)
    h.addVars(n, np.array(program.lo, dtype=float), np.array(program.hi, dtype=float))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), np.array(program.cost, dtype=float))
    ints = np.nonzero(program.integer)[0].astype(np.int32)
    if len(ints):
        h.changeColsIntegrality(
            len(ints), ints, np.array([highspy.HighsVarType.kInteger] * len(ints))
        )
    for coefs, lower, upper in program.rows:
        index = np.array(list(coefs), dtype=np.int32)
        low = -highspy.kHighsInf if lower is None else float(lower)
        high = highspy.kHighsInf if upper is None else float(upper)
        h.addRow(low, high, len(index), index, np.array([float(a) for a in coefs.values()]))
    h.run()
    status = h.getModelStatus()
    if x is None:
        assert status == highspy.HighsModelStatus.kInfeasible
        return
    assert status == highspy.HighsModelStatus.kOptimal
    assert all(a <= v <= b for a, v, b in zip(program.lo, x, program.hi, strict=True))
    assert all(v.denominator == 1 for v, whole in zip(x, program.integer, strict=True) if whole)
    for coefs, lower, upper in program.rows:
        activity = sum(a * x[j] for j, a in coefs.items())
        assert (lower is None or lower <= activity) and (upper is None or activity <= upper)
    value = sum(c * v for c, v in zip(program.cost, x, strict=True))
    assert float(value) == pytest.approx(h.getInfo().objective_function_value, abs=1e-6)
