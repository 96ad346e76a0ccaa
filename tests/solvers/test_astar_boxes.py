"""The search's boxes come in two integer types (``search.box_dtype``): uint8 when every
variable has at most 256 cells, int32 otherwise. Both answer every query family as the oracle
does, and a model with more cells than a byte holds is searched over int32 boxes, off the clock
for its compile, with the same answers as the MILP."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from sklearn.ensemble import RandomForestRegressor

from veritas_dsl.ir import (
    Feature,
    Maximize,
    Minimize,
    MinimizeDistance,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Query,
    Row,
)
from veritas_dsl.model import Ensemble
from veritas_dsl.solvers.astar import ready as ready_module
from veritas_dsl.solvers.astar import repair as repair_module
from veritas_dsl.solvers.astar import search as search_module
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.astar.problem import Plan, build_problem
from veritas_dsl.solvers.astar.search import box_dtype
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.solvers.oracle.engine import OracleEngine

from conftest import examples
from reference.agreement import assert_agrees, check_witnesses
from reference.strategies import FAMILIES, queries

LIMIT_S = 20
TERM = OutputTerm((OutputAtom(1.0, "m", "x"),))


@pytest.fixture
def int32_boxes(monkeypatch):
    """Every search holds its boxes as int32, whatever its cells; the calls are counted, so a
    test knows the forcing took."""
    calls = []

    def forced(problem):
        calls.append(problem)
        return np.dtype(np.int32)

    for module in (search_module, ready_module, repair_module):
        monkeypatch.setattr(module, "box_dtype", forced)
    return calls


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "hard_vote"])
def test_int32_boxes_answer_as_the_oracle(family, int32_boxes):
    engine = AStarEngine()

    @settings(max_examples=examples(0.5))
    @given(query=queries(family))
    def run(query):
        result = engine.solve(query, Limits(timeout_s=LIMIT_S))
        assert_agrees(query, result, OracleEngine().solve(query), engine="astar", limit_s=LIMIT_S)

    run()
    assert int32_boxes  # the searches above did run over int32 boxes


def wide_model() -> Ensemble:
    """A scikit-learn forest on two features with several hundred thresholds on each."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(1500, 2)).astype(np.float32)
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + rng.normal(0, 0.1, 1500)
    forest = RandomForestRegressor(n_estimators=30, max_depth=7, random_state=0).fit(X, y)
    return Ensemble.from_sklearn(forest)


@pytest.fixture(scope="module")
def wide():
    model = wide_model()
    features = tuple(Feature(name, lo=-1.0, hi=1.0) for name in model.feature_names)
    return model, features


def test_a_model_with_more_cells_than_a_byte_holds_gets_int32_boxes(wide):
    model, features = wide
    for f in range(2):  # the premise: more than 256 cells on each feature
        assert len(np.unique(model.threshold[model.feature == f])) > 256
    q = Query("wide", features, ("x",), {"m": model}, (), Maximize(TERM))
    reduced, _ = AStarEngine.chain.apply(q)
    assert box_dtype(build_problem(reduced, Plan(0, objective=TERM))) == np.int32
    narrow = Ensemble.from_sklearn(
        RandomForestRegressor(n_estimators=2, max_depth=2, random_state=0).fit(
            np.arange(8.0).reshape(4, 2), np.arange(4.0)
        )
    )
    q = Query("narrow", features, ("x",), {"m": narrow}, (), Maximize(TERM))
    reduced, _ = AStarEngine.chain.apply(q)
    assert box_dtype(build_problem(reduced, Plan(0, objective=TERM))) == np.uint8


@pytest.mark.parametrize(
    "goal",
    ["max", "min", "l1", "linf"],
)
def test_a_wide_model_answers_as_the_milp(wide, goal):
    model, features = wide
    row = Row((0.1, -0.2))
    if goal in ("max", "min"):
        q = Query("wide", features, ("x",), {"m": model}, (),
                  Maximize(TERM) if goal == "max" else Minimize(TERM))  # fmt: skip
    else:
        level = float(np.ravel(model.eval(np.array([row.values], dtype=np.float32)))[0]) + 0.4
        q = Query(
            "wide", features, ("x",), {"m": model}, (OutputConstraint(TERM, ">=", level),),
            MinimizeDistance(goal, "x", row),
        )  # fmt: skip
    ours = AStarEngine().solve(q, Limits(timeout_s=60))
    check_witnesses(q, ours)
    expected = MilpEngine().solve(q, Limits(timeout_s=60))
    assert ours.exact and expected.exact, (ours, expected)
    assert math.isclose(ours.lower, expected.lower, rel_tol=1e-6, abs_tol=1e-6), (ours, expected)
