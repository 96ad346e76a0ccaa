"""Closest L-inf examples by bisection, with probes built again for their ball
(``bisection.probe_for_ball``): the trees compacted to the ball and paired, the point still
chosen nearest the row. Every query family that bisects answers as the oracle does when every
probe is rebuilt at once; on deep trees (too many leaf combinations for the oracle) closest
examples and finds with one output constraint over paired trees answer as HiGHS does."""

from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb
from hypothesis import given, settings

from veritas_dsl.ir import (
    Ball,
    Feature,
    Find,
    Maximize,
    MinimizeDistance,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Prove,
    Query,
    Row,
)
from veritas_dsl.model import Ensemble
from veritas_dsl.solvers.astar import anytime
from veritas_dsl.solvers.astar import bisection as bisection_module
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.solvers.oracle.engine import OracleEngine

from conftest import examples
from reference.agreement import FOUND, NONE, assert_agrees, check_witnesses, verdict
from reference.strategies import queries

LIMIT_S = 20
TERM = OutputTerm((OutputAtom(1.0, "m", "x"),))
#: The families whose queries include closest L-inf examples to a row.
BISECTED = ("min_linf", "int_domain", "changed_one_hot")


@pytest.fixture
def rebuilt(monkeypatch):
    """Every probe is built again for its ball before it expands anything; the builds are
    counted, so a test knows the rebuilt path ran."""
    built = []

    def counted(problem, root, pair_trees):
        probe = bisection_module.probe_for_ball(problem, root, pair_trees)
        built.append(probe)
        return probe

    monkeypatch.setattr(anytime, "REBUILD_AFTER", 0)
    monkeypatch.setattr(anytime, "probe_for_ball", counted)
    return built


@pytest.mark.parametrize("pairs", ["always", "never"])
@pytest.mark.parametrize("family", BISECTED)
def test_rebuilt_probes_answer_as_the_oracle(family, pairs, rebuilt):
    engine = AStarEngine(pair_trees=pairs)

    @settings(max_examples=examples(1.0))
    @given(query=queries(family))
    def run(query):
        result = engine.solve(query, Limits(timeout_s=LIMIT_S))
        assert_agrees(query, result, OracleEngine().solve(query), engine="astar", limit_s=LIMIT_S)

    run()
    if family == "min_linf":  # each of its queries bisects (the others only some)
        assert rebuilt, "no probe was rebuilt: a weak test"


def forest(seed: int, depth: int = 7) -> Ensemble:
    """Twelve trees of depth seven on three features, deep enough for ``pair_trees="auto"``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(600, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(0, 0.3, 600) > 0).astype(int)
    model = xgb.XGBClassifier(
        n_estimators=12, max_depth=depth, learning_rate=0.5, random_state=seed, n_jobs=1
    ).fit(X, y)
    return Ensemble.from_xgboost(model)


HIGHS = MilpEngine(driver="highs")


@pytest.mark.parametrize("seed", range(4))
def test_closest_linf_on_deep_trees_is_the_milp_distance(seed, rebuilt):
    model = forest(seed)
    features = tuple(Feature(name, lo=-3.0, hi=3.0) for name in model.feature_names)
    row = Row((0.25, -0.5, 0.75))
    margin = float(np.ravel(model.eval(np.array([row.values], dtype=np.float32)))[0])
    flip = OutputConstraint(TERM, "<=" if margin > 0 else ">", 0.0)
    q = Query(
        "closest", features, ("x",), {"m": model}, (flip,), MinimizeDistance("linf", "x", row)
    )
    result = AStarEngine().solve(q, Limits(timeout_s=LIMIT_S))
    check_witnesses(q, result)
    expected = HIGHS.solve(q, Limits(timeout_s=60))
    assert result.exact and expected.exact, (result, expected)
    assert result.lower == pytest.approx(expected.lower, abs=1e-6), (result, expected)
    assert rebuilt


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("offset", [-1e-3, 1e-3])
def test_finds_over_paired_deep_trees_agree_with_the_milp(seed, offset):
    """Just below the largest output in a ball a point exists, just above none does: a find
    and a prove at each level, their trees paired, against HiGHS."""
    model = forest(seed)
    features = tuple(Feature(name, lo=-3.0, hi=3.0) for name in model.feature_names)
    ball = Ball("linf", "x", Row((0.0, 0.5, -0.5)), 0.75)
    top = HIGHS.solve(Query("top", features, ("x",), {"m": model}, (ball,), Maximize(TERM)))
    level = top.upper + offset
    below = OutputConstraint(TERM, "<", level)  # a counterexample to it is a point found
    paired = 0
    for goal, constraints in (
        (Find(), (ball, OutputConstraint(TERM, ">=", level))),
        (Prove((below,)), (ball,)),
    ):
        q = Query("find", features, ("x",), {"m": model}, constraints, goal)
        result = AStarEngine(pair_trees="auto").solve(q, Limits(timeout_s=LIMIT_S))
        check_witnesses(q, result)
        expected = HIGHS.solve(q, Limits(timeout_s=60))
        assert result.exact and expected.exact, (result, expected)
        assert verdict(result) == verdict(expected) == (FOUND if offset < 0 else NONE)
        paired += result.stats["search_trees"] < model.n_trees
    assert paired or seed in (1, 3), "no trees were paired: a weak test"
