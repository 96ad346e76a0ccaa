"""Every registered engine against the brute-force oracle, over every query family it supports.

Exact engines must equal the oracle; anytime engines that stop at a limit must bracket it. Every
witness must reproduce on the model and satisfy the query (``validate_witness``). A query with a
construct the engine does not declare must be refused.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.ir.query import constructs
from veritas_dsl.result import Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.solvers.solve import solve
from veritas_dsl.validate import validate_witness

from conftest import require
from reference.strategies import FAMILIES, queries

ORACLE = OracleEngine()
ENGINES = [name for name in registry.ENGINES if name != "oracle"]


def check_against_oracle(engine, query):
    result = engine.solve(query, Limits(timeout_s=20))
    for witness in result.witnesses:
        validate_witness(query, witness)
    expected = ORACLE.solve(query)
    assert expected.termination is not Termination.ERROR, expected.message
    if result.exact:
        assert result.termination == expected.termination, (result, expected)
        if expected.lower is not None:
            assert result.lower == pytest.approx(expected.lower, abs=1e-9)
            assert result.upper == pytest.approx(expected.upper, abs=1e-9)
    elif expected.lower is not None and math.isfinite(expected.lower):
        assert result.lower <= expected.lower + 1e-9
        assert expected.upper <= result.upper + 1e-9


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("name", ENGINES)
def test_engine_matches_oracle(name, family):
    engine = registry.get(name)
    require(engine)

    @settings(max_examples=40)
    @given(query=queries(family))
    def run(query):
        if constructs(query) <= engine.capabilities.constructs:
            check_against_oracle(engine, query)
        else:  # what an engine does not declare, it refuses, never answers approximately
            with pytest.raises(UnsupportedQuery):
                solve(engine, query, Limits(timeout_s=20))

    run()


@given(st.sampled_from(FAMILIES).flatmap(queries))
def test_oracle_answers_every_family(query):
    result = ORACLE.solve(query)
    assert result.termination in (Termination.OPTIMAL, Termination.INFEASIBLE)
    for witness in result.witnesses:
        validate_witness(query, witness)
