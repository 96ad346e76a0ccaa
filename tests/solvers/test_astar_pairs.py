"""Pairs of trees merged into product trees (``trees.pair_trees``, Chen et al. 2019's merging):
the same function, a bound at least as tight, and the oracle's optimum."""

from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb

from veritas_dsl.ir import Feature, Maximize, Minimize, OutputAtom, OutputTerm, Query
from veritas_dsl.model import Ensemble
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.astar.problem import Plan, build_problem
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.oracle.engine import OracleEngine

TERM = OutputTerm((OutputAtom(1.0, "m", "x"),))


def forest(seed: int) -> Ensemble:
    """Six trees of depth three on three features, whose splits interact."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(0, 0.3, 300) > 0).astype(int)
    model = xgb.XGBClassifier(
        n_estimators=6, max_depth=3, learning_rate=0.5, random_state=seed, n_jobs=1
    ).fit(X, y)
    return Ensemble.from_xgboost(model)


def query(model: Ensemble, goal) -> Query:
    features = tuple(Feature(name) for name in model.feature_names)
    return Query("pairs", features, ("x",), {"m": model}, (), goal)


def root_bound(q: Query, pairing: str) -> tuple[float, int]:
    """The root box's bound on the maximised term (leaves only, in value) and the number of
    search trees."""
    reduced, _ = AStarEngine.chain.apply(q)
    problem = build_problem(
        reduced, Plan(K.MODE_MAXIMIZE, objective=reduced.goal.term, pair_trees=pairing)
    )
    nd_max, tr_val = problem.trees[5], problem.trees[17]
    units = int(problem.u_base[0]) + sum(int(nd_max[tr_val[t]]) for t in range(problem.n_trees))
    return units / problem.scale, problem.n_trees


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sense", ["max", "min"])
def test_paired_search_finds_the_oracle_optimum(seed, sense):
    model = forest(seed)
    q = query(model, Maximize(TERM) if sense == "max" else Minimize(TERM))
    expected = OracleEngine().solve(q, Limits(timeout_s=60))
    result = AStarEngine(pair_trees="always").solve(q, Limits(timeout_s=60))
    assert result.termination.value == "optimal"
    assert result.lower == pytest.approx(expected.lower, abs=1e-9)
    assert result.upper == pytest.approx(expected.upper, abs=1e-9)
    (witness,) = result.witnesses
    value = np.ravel(model.eval(witness.inputs["x"][None, :]))[0]
    assert value == pytest.approx(expected.lower, abs=1e-9)


def test_pairs_merge_trees_and_never_loosen_the_root_bound():
    merged_any = False
    for seed in range(6):
        for goal in (Maximize(TERM), Minimize(TERM)):
            q = query(forest(seed), goal)
            paired, n_paired = root_bound(q, "always")
            plain, n_plain = root_bound(q, "never")
            assert paired <= plain
            merged_any |= n_paired < n_plain and paired < plain
    assert merged_any, "no pair of trees merged: a weak test"


def test_auto_leaves_shallow_trees_alone():
    q = query(forest(0), Maximize(TERM))
    assert root_bound(q, "auto")[1] == root_bound(q, "never")[1]
