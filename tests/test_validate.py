"""Witness validation: a witness must reproduce on the library model and satisfy the query."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import xgboost as xgb

from veritas_dsl.ir import (
    Feature,
    Find,
    Interval,
    Maximize,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Prove,
    Query,
    VoteMargin,
)
from veritas_dsl.model import Ensemble
from veritas_dsl.result import Witness
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.solvers.sat.engine import SatEngine
from veritas_dsl.validate import WitnessMismatch, validate_witness

RNG = np.random.default_rng(3)
X = RNG.normal(size=(300, 2)).astype(np.float32)
BOOSTER = xgb.train(
    {"max_depth": 2, "objective": "binary:logistic"}, xgb.DMatrix(X, X[:, 0] > X[:, 1]), 3
)
MODEL = Ensemble.from_xgboost(BOOSTER)
OUT = OutputTerm((OutputAtom(1.0, "m", "x"),))


def query(model=MODEL, constraints=(), goal=None):
    features = tuple(Feature(n) for n in model.feature_names)
    return Query("q", features, ("x",), {"m": model}, tuple(constraints), goal or Maximize(OUT))


def test_oracle_witness_reproduces_on_xgboost():
    q = query()
    result = OracleEngine().solve(q)
    outputs = validate_witness(q, result.witnesses[0])
    x = result.witnesses[0].inputs["x"]
    expected = BOOSTER.predict(xgb.DMatrix(x[None, :]), output_margin=True)[0]
    assert outputs["m", "x"][0] == expected
    assert result.lower == pytest.approx(expected, abs=1e-6)


def test_a_wrong_ensemble_is_caught_by_the_library():
    # Every leaf moves up; the library model stays as it was.
    tampered = dataclasses.replace(MODEL, value=MODEL.value + 0.25 * MODEL.is_leaf()[:, None])
    q = query(tampered)
    witness = OracleEngine().solve(q).witnesses[0]
    with pytest.raises(WitnessMismatch, match="xgboost model m predicts"):
        validate_witness(q, witness)


def test_a_witness_outside_the_constraints_is_caught():
    q = query(constraints=[Interval("x", 0, 0.0, 1.0)], goal=Find())
    with pytest.raises(WitnessMismatch, match="breaks Interval"):
        validate_witness(q, Witness({"x": np.array([2.0, 0.0], dtype=np.float32)}))


def test_a_counterexample_must_violate_the_conclusion():
    q = query(goal=Prove((OutputConstraint(OUT, "<", 100.0),)))
    with pytest.raises(WitnessMismatch, match="breaks AnyOf"):
        validate_witness(q, Witness({"x": np.zeros(2, dtype=np.float32)}))


def test_votes_are_checked_on_the_library_trees():
    ensemble_module = pytest.importorskip("sklearn.ensemble", reason="scikit-learn is optional")
    forest = ensemble_module.RandomForestClassifier(n_estimators=5, max_depth=2, random_state=0)
    model = Ensemble.from_sklearn(forest.fit(X, X[:, 0] > X[:, 1]))
    ones = VoteMargin("m", "x", 1, 0, 1)  # more trees vote 1 than 0
    q = query(model, [ones], Find())
    witness = SatEngine().solve(q).witnesses[0]
    validate_witness(q, witness)
    point = witness.inputs["x"][None, :]
    assert sum(int(t.predict(point)[0]) for t in forest.estimators_) >= 3  # scikit-learn agrees
    # trees that all vote 0 in the library (as a wrong import would have it) are caught
    silent = dataclasses.replace(model.library, tree_votes=lambda P: np.zeros((len(P), 5), int))
    with pytest.raises(WitnessMismatch, match="vote"):
        validate_witness(query(dataclasses.replace(model, library=silent), [ones], Find()), witness)
