"""The A* engine on hand-built cases, one per construct, with answers worked out by hand (see the
region tables of the fixtures in ``tests/conftest.py``); limits; ties; and the two-instance
fairness query that dtai-veritas cannot solve."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xgboost as xgb

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
from veritas_dsl.model import Ensemble
from veritas_dsl.result import Termination
from veritas_dsl.solvers.astar.anytime import Progress
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.validate import validate_witness

from conftest import build

ENGINE = AStarEngine()


def out(instance="x", model="m", coef=1.0, output=0):
    return OutputAtom(coef, model, instance, output)


def term(*atoms, constant=0.0):
    return OutputTerm(tuple(atoms), constant)


def query(models, goal, constraints=(), instances=("x",), kinds=None, bounds=None):
    model = next(iter(models.values()))
    kinds = kinds or [DomainKind.REAL] * model.n_features
    bounds = bounds or [(-math.inf, math.inf)] * model.n_features
    features = tuple(
        Feature(name, kind, lo, hi)
        for name, kind, (lo, hi) in zip(model.feature_names, kinds, bounds, strict=True)
    )
    return Query("q", features, instances, models, tuple(constraints), goal)


def solve(q, limits=None, engine=ENGINE, **kwargs):
    result = engine.solve(q, limits or Limits(timeout_s=30), **kwargs)
    for witness in result.witnesses:
        validate_witness(q, witness)
    return result


def optimum(result):
    assert result.termination is Termination.OPTIMAL, result
    assert result.lower == result.upper
    return result.lower


# -- single instance ---------------------------------------------------------------------------


def test_global_max_and_min(two_trees):
    best = solve(query({"m": two_trees}, Maximize(term(out()))))
    assert optimum(best) == 7.0
    x = best.witnesses[0].inputs["x"]
    assert x[0] >= 2 and x[1] < 1 and best.witnesses[0].value == 7.0
    assert optimum(solve(query({"m": two_trees}, Minimize(term(out()))))) == -3.0


def test_box_and_constant(two_trees):
    q = query(
        {"m": two_trees},
        Maximize(term(out(), constant=10.0)),
        [Interval("x", 0, -math.inf, 1.5), Interval("x", 1, 1.0, math.inf)],
    )
    assert optimum(solve(q)) == 12.0  # 1 <= x0 < 2, 1 <= x1 < 2: 2, plus 10


def test_int_and_bool_domains(two_trees):
    # x0 integral in [0, 1.5] can only be 0 or 1; x1 bool
    q = query(
        {"m": two_trees},
        Maximize(term(out())),
        kinds=[DomainKind.INT, DomainKind.BOOL],
        bounds=[(0.0, 1.5), (-math.inf, math.inf)],
    )
    result = solve(q)
    assert optimum(result) == 3.5  # x0 = 1, x1 = 0
    assert result.witnesses[0].inputs["x"].tolist() == [1.0, 0.0]


def test_one_hot(one_hot_trees):
    free = query({"m": one_hot_trees}, Maximize(term(out())), kinds=[DomainKind.BOOL] * 3)
    assert optimum(solve(free)) == 8.0  # b0 and b2 both true
    q = query(
        {"m": one_hot_trees},
        Maximize(term(out())),
        [OneHot("x", (0, 1, 2))],
        kinds=[DomainKind.BOOL] * 3,
    )
    result = solve(q)
    assert optimum(result) == 6.0  # b0 alone: 5 + 1
    assert result.witnesses[0].inputs["x"].tolist() == [1.0, 0.0, 0.0]
    # minimising, the state with every group member false is dead: b1 alone gives 2 + 1
    low = query(
        {"m": one_hot_trees},
        Minimize(term(out())),
        [OneHot("x", (0, 1, 2))],
        kinds=[DomainKind.BOOL] * 3,
    )
    assert optimum(solve(low)) == 3.0


def test_changed_at_most_k(two_trees):
    row = Row((0.0, 0.0))
    for k, expected in [(0, 1.5), (1, 7.0), (2, 7.0)]:
        q = query({"m": two_trees}, Maximize(term(out())), [AtMostKChanged("x", row, k)])
        result = solve(q)
        assert optimum(result) == expected
        changed = np.count_nonzero(result.witnesses[0].inputs["x"] != np.float32(row.values))
        assert changed <= k


def test_linf_and_l1_balls(two_trees):
    row = Row((0.0, 0.0))
    cases = [("linf", 1.0, 3.5), ("linf", 0.5, 1.5), ("l1", 1.0, 3.5), ("l1", 2.5, 7.0)]
    for norm, radius, expected in cases:
        q = query({"m": two_trees}, Maximize(term(out())), [Ball(norm, "x", row, radius)])
        assert optimum(solve(q)) == expected, (norm, radius)


def test_linear_inequality(two_trees):
    # x0 + x1 <= 1.5 with x1 >= 0: x0 >= 2 is out of reach, 1 <= x0 < 2 with x1 < 1 gives 3.5
    constraint = Linear((LinearTerm(1.0, "x", 0), LinearTerm(1.0, "x", 1)), "<=", 1.5)
    q = query({"m": two_trees}, Maximize(term(out())), [constraint, Interval("x", 1, 0.0, 5.0)])
    assert optimum(solve(q)) == 3.5
    with pytest.raises(UnsupportedQuery, match=r"linear equalities.*oracle"):
        ENGINE.solve(
            query({"m": two_trees}, Maximize(term(out())), [Linear(constraint.terms, "==", 1.0)])
        )


def test_disjunction(two_trees):
    either = AnyOf(((Interval("x", 0, -math.inf, 0.5),), (Interval("x", 1, 2.0, math.inf),)))
    q = query({"m": two_trees}, Maximize(term(out())), [either])
    assert optimum(solve(q)) == 1.5
    result = solve(query({"m": two_trees}, Minimize(term(out())), [either]))
    assert optimum(result) == -3.0


def test_find_and_prove(two_trees):
    found = solve(query({"m": two_trees}, Find(), [OutputConstraint(term(out()), ">", 6.5)]))
    assert found.termination is Termination.OPTIMAL and found.witnesses
    none = solve(query({"m": two_trees}, Find(), [OutputConstraint(term(out()), ">", 7.0)]))
    assert none.termination is Termination.INFEASIBLE and not none.witnesses
    near = Ball("linf", "x", Row((0.0, 0.0)), 0.5)
    holds = solve(
        query({"m": two_trees}, Prove((OutputConstraint(term(out()), "<=", 2.0),)), [near])
    )
    assert holds.termination is Termination.INFEASIBLE  # no counterexample: the property holds
    wide = Ball("linf", "x", Row((0.0, 0.0)), 1.5)
    fails = solve(
        query({"m": two_trees}, Prove((OutputConstraint(term(out()), "<=", 2.0),)), [wide])
    )
    assert fails.termination is Termination.OPTIMAL and fails.witnesses  # a counterexample
    # a conclusion with two conditions negates to a disjunction
    both = Prove(
        (OutputConstraint(term(out()), "<=", 5.0), OutputConstraint(term(out()), ">=", 0.0))
    )
    counter = solve(query({"m": two_trees}, both, [Ball("linf", "x", Row((0.0, 0.0)), 2.5)]))
    assert counter.termination is Termination.OPTIMAL
    value = float(two_trees.eval(counter.witnesses[0].inputs["x"][None, :])[0])
    assert value > 5.0 or value < 0.0


def test_output_threshold_on_the_boundary(two_trees):
    # 3.5 > 3.5 is false, 3.5 >= 3.5 true: the search must not round either way
    strict = solve(
        query(
            {"m": two_trees},
            Maximize(term(out())),
            [OutputConstraint(term(out()), ">", 3.5), Interval("x", 0, -math.inf, 1.5)],
        )
    )
    assert strict.termination is Termination.INFEASIBLE and strict.upper == -math.inf
    closed = solve(
        query(
            {"m": two_trees},
            Maximize(term(out())),
            [OutputConstraint(term(out()), ">=", 3.5), Interval("x", 0, -math.inf, 1.5)],
        )
    )
    assert optimum(closed) == 3.5


@pytest.mark.parametrize("linf", ["bisect", "search"])
def test_closest_example_linf_and_l1(two_trees, linf):
    engine = AStarEngine(linf_distance=linf)
    row = Row((0.0, 0.0))
    condition = OutputConstraint(term(out()), ">", 3.0)
    for norm in ("linf", "l1"):
        result = solve(
            query({"m": two_trees}, MinimizeDistance(norm, "x", row), [condition]), engine=engine
        )
        assert optimum(result) == 1.0  # x0 = 1 reaches the 3.5 region
        assert result.witnesses[0].inputs["x"].tolist() == [1.0, 0.0]  # the row's own value kept
    far = OutputConstraint(term(out()), ">", 5.0)
    result = solve(
        query({"m": two_trees}, MinimizeDistance("linf", "x", row), [far]), engine=engine
    )
    assert optimum(result) == 2.0
    off = Row((0.0, 0.5))  # x1 = 0.5 is already in the 7 region's column
    result = solve(query({"m": two_trees}, MinimizeDistance("l1", "x", off), [far]), engine=engine)
    assert optimum(result) == 2.0
    never = OutputConstraint(term(out()), ">", 7.0)
    result = solve(
        query({"m": two_trees}, MinimizeDistance("linf", "x", row), [never]), engine=engine
    )
    assert result.termination is Termination.INFEASIBLE and result.lower == result.upper == math.inf


@pytest.mark.parametrize("linf", ["bisect", "search"])
def test_closest_example_agrees_with_oracle(linf):
    engine = AStarEngine(linf_distance=linf)
    model = random_forest(7, 4, 2, 3)
    oracle = OracleEngine()
    for r, values in enumerate([(0.0, 0.0, 0.0), (1.3, -2.2, 0.6), (4.0, 4.0, -4.0)]):
        for op, level in [(">", 1.0), ("<", -1.0)]:
            q = query({"m": model}, MinimizeDistance("linf", "x", Row(values)),
                      [OutputConstraint(term(out()), op, level)])  # fmt: skip
            result, expected = solve(q, engine=engine), oracle.solve(q)
            assert (result.termination, result.lower, result.upper) == (
                expected.termination,
                expected.lower,
                expected.upper,
            ), (r, op)


def test_closest_example_between_instances(two_trees):
    gap = OutputConstraint(term(out("x2"), out("x1", coef=-1.0)), ">=", 5.0)
    q = query(
        {"m": two_trees},
        MinimizeDistance("linf", "x2", "x1"),
        [gap],
        instances=("x1", "x2"),
    )
    result = solve(q)
    expected = OracleEngine().solve(q)
    assert optimum(result) == expected.lower  # just over 1: x1.x0 < 1 <= 2 <= x2.x0


# -- several models, multiclass, two instances -------------------------------------------------


def test_model_difference(two_trees):
    other = build([(0, 0.5, 0.0, 1.0)], 2)  # 1 when x0 >= 0.5
    q = query({"m": two_trees, "n": other}, Maximize(term(out(), out(model="n", coef=-1.0))))
    assert optimum(solve(q)) == 7.0 - 1.0
    assert (
        optimum(
            solve(
                query(
                    {"m": two_trees, "n": other}, Minimize(term(out(), out(model="n", coef=-1.0)))
                )
            )
        )
        == -4.0
    )


def test_multiclass_margin():
    # class 0 against class 2 of a three-output model
    t0 = (0, 0.0, [1.0, 0.0, 2.0], [3.0, 0.0, -1.0])
    t1 = (1, 0.0, [0.0, 1.0, 0.0], [-1.0, 0.0, 1.0])
    model = build([t0, t1], 2, base=[0.0, 0.0, 0.0], task="multiclass")
    q = query({"m": model}, Maximize(term(out(output=0), out(output=2, coef=-1.0))))
    assert optimum(solve(q)) == 4.0  # x0 >= 0 (3 - -1), x1 < 0 (0 - 0)


def test_two_instances_with_ties(two_trees):
    q = query(
        {"m": two_trees},
        Maximize(term(out("x2"), out("x1", coef=-1.0))),
        [Tie("x1", "x2", 1)],
        instances=("x1", "x2"),
    )
    result = solve(q)
    assert optimum(result) == 5.5  # column x1 < 1: 7 - 1.5
    x1, x2 = result.witnesses[0].inputs["x1"], result.witnesses[0].inputs["x2"]
    assert x1[1] == x2[1]
    near = Ball("linf", "x2", "x1", 1.0)
    assert (
        optimum(
            solve(
                query(
                    {"m": two_trees},
                    Maximize(term(out("x2"), out("x1", coef=-1.0))),
                    [Tie("x1", "x2", 1), near],
                    instances=("x1", "x2"),
                )
            )
        )
        == 3.5
    )


def test_fully_tied_trees_contribute_nothing(two_trees):
    # every feature tied: x1 and x2 are one point, every tree's difference is exactly 0
    q = query(
        {"m": two_trees},
        Maximize(term(out("x2"), out("x1", coef=-1.0))),
        [Tie("x1", "x2", 0), Tie("x1", "x2", 1)],
        instances=("x1", "x2"),
    )
    result = solve(q)
    assert optimum(result) == 0.0
    assert result.stats["search_trees"] == 0  # every product tree had only zero leaves


@pytest.fixture(scope="module")
def fairness_model():
    """Twenty trees of depth 6 on twenty features; feature 0 is a protected bool it uses."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1500, 20)).astype(np.float32)
    X[:, 0] = rng.random(1500) < 0.5
    y = (X[:, 1] + X[:, 2] * X[:, 3] + 0.8 * X[:, 0] + rng.normal(scale=0.5, size=1500)) > 0.4
    booster = xgb.XGBClassifier(n_estimators=20, max_depth=6, tree_method="hist", n_jobs=1)
    return Ensemble.from_xgboost(booster.fit(X, y))


def test_twenty_tree_fairness_query_solved_exactly(fairness_model):
    model = fairness_model
    kinds = [DomainKind.BOOL] + [DomainKind.REAL] * 19
    gap = term(out("x2"), out("x1", coef=-1.0))
    ties = [Tie("x1", "x2", f) for f in range(1, 20)]
    result = solve(
        query({"m": model}, Maximize(gap), ties, ("x1", "x2"), kinds), Limits(timeout_s=20)
    )
    best = optimum(result)
    witness = result.witnesses[0].inputs
    assert np.array_equal(witness["x1"][1:], witness["x2"][1:])
    outputs = model.eval(np.stack([witness["x1"], witness["x2"]]))
    assert best == pytest.approx(outputs[1] - outputs[0], abs=1e-9)
    # no other setting of the protected feature does better at any point: the gap at the
    # witness's neighbours (random points with the same feature 0 values) stays below the optimum
    rng = np.random.default_rng(0)
    points = rng.normal(size=(2000, 20)).astype(np.float32)
    lows, highs = points.copy(), points.copy()
    lows[:, 0], highs[:, 0] = witness["x1"][0], witness["x2"][0]
    assert np.max(model.eval(highs) - model.eval(lows)) <= best + 1e-9


# -- limits, ties, anytime ---------------------------------------------------------------------


def random_forest(seed: int, n_trees: int, depth: int, n_features: int):
    """Random trees with thresholds and leaves on a grid: hard enough to need limits."""
    rng = np.random.default_rng(seed)

    def tree(d):
        if d == 0:
            return float(rng.integers(-8, 9)) / 4
        return (
            int(rng.integers(n_features)),
            float(rng.integers(-20, 21)) / 4,
            tree(d - 1),
            tree(d - 1),
        )

    return build([tree(depth) for _ in range(n_trees)], n_features)


@pytest.fixture(scope="module")
def hard_model():
    return random_forest(1, 120, 5, 10)


def test_time_limit_keeps_bracketing_bounds(hard_model):
    q = query({"m": hard_model}, Maximize(term(out())))
    short = solve(q, Limits(timeout_s=0.3))
    assert short.termination is Termination.TIME_LIMIT
    assert short.time_s < 2.0
    assert short.lower <= short.upper and short.witnesses
    assert short.witnesses[0].value == short.lower
    longer = solve(q, Limits(timeout_s=1.5))
    assert short.lower <= longer.upper and longer.lower <= short.upper
    assert longer.upper <= short.upper  # the bound only tightens with more work
    times = [p.time_s for p in longer.trace]
    assert times == sorted(times)


def test_step_limit(hard_model):
    result = solve(query({"m": hard_model}, Minimize(term(out()))), Limits(max_steps=40))
    assert result.termination is Termination.STEP_LIMIT
    assert result.stats["states_expanded"] <= 40
    assert result.lower <= result.upper


def test_memory_limit_stops_cleanly(hard_model):
    q = query({"m": hard_model}, Maximize(term(out())))
    result = solve(q, Limits(max_memory_bytes=400_000, timeout_s=20))
    assert result.termination is Termination.MEMORY_LIMIT
    assert result.stats["peak_memory_bytes"] <= 400_000
    assert result.lower <= result.upper
    assert "memory limit" in result.message


def test_ties_are_declared_optimal():
    # ten trees, each worth 3 on two of its three regions: 1024 optimal points, and the bound is
    # tight, so the search can stop at the first (dtai-veritas never stops on a tie)
    model = build([(f, 0.0, 3.0, (f, 1.0, 1.0, 3.0)) for f in range(10)], 10)
    result = solve(query({"m": model}, Maximize(term(out()))))
    assert optimum(result) == 30.0
    assert result.stats["states_expanded"] <= 11


def test_progress_hook_and_stats(hard_model):
    seen = []
    result = solve(
        query({"m": hard_model}, Maximize(term(out()))), Limits(timeout_s=0.5), progress=seen.append
    )
    assert seen and all(isinstance(p, Progress) for p in seen)
    assert seen[-1].expanded == result.stats["states_expanded"]
    assert all(p.lower <= p.upper for p in seen)
    for key in ("states_per_s", "bytes_per_state", "peak_memory_bytes", "prepare_s"):
        assert result.stats[key] > 0


def test_refuses_what_it_cannot_decide_exactly(two_trees):
    mixed = [AtMostKChanged("x", Row((0.0, 0.0)), 1), Ball("l1", "x", Row((1.0, 1.0)), 2.0)]
    with pytest.raises(UnsupportedQuery, match=r"different references.*oracle"):
        ENGINE.solve(query({"m": two_trees}, Maximize(term(out())), mixed))


def test_interrupt_keeps_the_bounds(hard_model):
    pressed = []

    def interrupt(progress):  # Ctrl-C, once, after some work
        if progress.expanded > 0 and not pressed:
            pressed.append(progress)
            raise KeyboardInterrupt

    q = query({"m": hard_model}, Maximize(term(out())))
    result = solve(q, Limits(timeout_s=20), progress=interrupt)
    assert result.termination is Termination.INTERRUPTED
    assert result.lower <= result.upper


@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_closest_class_change_of_a_multiclass_model(norm):
    # "the predicted class is no longer 0": class 1 or class 2 beats class 0, a disjunction
    t0 = (0, 0.0, [2.0, 0.0, 0.0], (1, 1.0, [0.0, 1.5, 0.0], [0.0, 0.0, 2.5]))
    t1 = (1, -1.0, [1.0, 0.0, 0.0], (0, 2.0, [0.5, 0.0, 0.0], [0.0, 1.0, 1.0]))
    model = build([t0, t1], 2, base=[0.0, 0.0, 0.0], task="multiclass")
    beats = [
        (OutputConstraint(term(out(output=k), out(output=0, coef=-1.0)), ">", 0.0),) for k in (1, 2)
    ]
    q = query({"m": model}, MinimizeDistance(norm, "x", Row((-0.5, -2.0))), [AnyOf(tuple(beats))])
    result, expected = solve(q), OracleEngine().solve(q)
    assert optimum(result) == expected.lower
    assert result.stats["branches"] == 2
