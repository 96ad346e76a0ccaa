"""Every registered engine against the brute-force oracle, over every query family it supports.

Engines must answer (never ``error``), equal to the oracle: the same verdict for find and prove,
the same bounds for optimisation goals; one stopped by its time limit must bracket it. Every
witness must reproduce on the model and satisfy the query (``reference.agreement``). A query with
a construct the engine does not declare must be refused.
"""

from __future__ import annotations

import lightgbm
import numpy as np
import pytest
import xgboost as xgb
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier

from veritas_dsl.ir import Ball, Find, Maximize, OutputConstraint, Prove, Query, Row
from veritas_dsl.ir.constructs import constructs
from veritas_dsl.model import Ensemble
from veritas_dsl.result import Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.solvers.solve import solve
from veritas_dsl.validate import validate_witness

from conftest import examples, require
from reference.agreement import assert_agrees
from reference.ir import features, out, term
from reference.strategies import FAMILIES, queries

ORACLE = OracleEngine()
ENGINES = [name for name in registry.ENGINES if name != "oracle"]
LIMIT_S = 20


def check_against_oracle(name, engine, query):
    result = engine.solve(query, Limits(timeout_s=LIMIT_S))
    assert_agrees(query, result, ORACLE.solve(query), engine=name, limit_s=LIMIT_S)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("name", ENGINES)
def test_engine_matches_oracle(name, family):
    engine = registry.get(name)
    require(engine)

    @settings(max_examples=examples(1.6))
    @given(query=queries(family))
    def run(query):
        if constructs(query) <= engine.capabilities.constructs:
            check_against_oracle(name, engine, query)
        else:  # what an engine does not declare, it refuses, never answers approximately
            with pytest.raises(UnsupportedQuery):
                solve(engine, query, Limits(timeout_s=LIMIT_S))

    run()


def library_models() -> dict[str, Ensemble]:
    """Small models of each library, trained on the same data: their witnesses are checked on
    the library's own predictions, not only on our Ensemble."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(200, 3)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0).astype(int)
    booster = xgb.train({"max_depth": 2, "objective": "binary:logistic"}, xgb.DMatrix(x, y), 3)
    forest = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0).fit(x, y)
    gbm = lightgbm.LGBMClassifier(n_estimators=3, num_leaves=4, verbose=-1).fit(x, y)
    return {
        "xgboost": Ensemble.from_xgboost(booster),
        "sklearn": Ensemble.from_sklearn(forest),
        "lightgbm": Ensemble.from_lightgbm(gbm),
    }


LIBRARY_MODELS = library_models()
ROWS = [Row((0.0, 0.0, 0.0)), Row((0.5, -1.0, 0.25)), Row((-1.0, 1.0, 2.0))]


@st.composite
def library_queries(draw, model: Ensemble) -> Query:
    """Find, prove and maximize over a library model, near a row."""
    level = draw(st.sampled_from([-0.5, 0.0, 0.2, 0.5]))
    ball = Ball("linf", "x", draw(st.sampled_from(ROWS)), draw(st.sampled_from([0.1, 0.5, 1.5])))
    above = OutputConstraint(term(out()), draw(st.sampled_from([">", "<="])), level)
    goal = draw(st.sampled_from(["find", "prove", "maximize"]))
    if goal == "find":
        constraints, goal = (ball, above), Find()
    elif goal == "prove":
        constraints, goal = (ball,), Prove((above,))
    else:
        constraints, goal = (ball,), Maximize(term(out()))
    return Query(goal.__class__.__name__, features(model), ("x",), {"m": model}, constraints, goal)


@pytest.mark.parametrize("library", sorted(LIBRARY_MODELS))
@pytest.mark.parametrize("name", ENGINES)
def test_engine_matches_oracle_on_library_models(name, library):
    engine = registry.get(name)
    require(engine)
    model = LIBRARY_MODELS[library]
    assert model.library is not None

    @settings(max_examples=examples(0.4))
    @given(query=library_queries(model))
    def run(query):
        check_against_oracle(name, engine, query)

    run()


@given(st.sampled_from(FAMILIES).flatmap(queries))
def test_oracle_answers_every_family(query):
    result = ORACLE.solve(query)
    assert result.termination in (Termination.OPTIMAL, Termination.INFEASIBLE)
    for witness in result.witnesses:
        validate_witness(query, witness)
