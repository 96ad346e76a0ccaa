"""Trivial bounds: what any engine may report before it knows anything, so they must hold for
every input, and be finite on the goal's side for a finite ensemble."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.ir import (
    Feature,
    Find,
    Maximize,
    Minimize,
    MinimizeDistance,
    OutputAtom,
    OutputTerm,
    Prove,
    Query,
    Row,
)
from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.evaluate import model_outputs, term_value

from conftest import build, examples

# two trees over (x0, x1): leaves 1, 3, -2 and 0.5, 4, -1 (the conftest's two_trees)
MODEL = build([(0, 1.0, 1.0, (1, 2.0, 3.0, -2.0)), (1, 1.0, (0, 2.0, 0.5, 4.0), -1.0)], 2)
FEATURES = (Feature("x0"), Feature("x1"))


def query(goal, instances=("x",)) -> Query:
    return Query("q", FEATURES, instances, {"m": MODEL}, (), goal)


def gap(constant=0.0) -> OutputTerm:
    return OutputTerm((OutputAtom(1.0, "m", "x2"), OutputAtom(-1.0, "m", "x1")), constant)


def test_largest_and_smallest_leaves_bound_the_optimum():
    score = OutputTerm((OutputAtom(1.0, "m", "x"),))
    lower, upper = trivial_bounds(query(Maximize(score)))
    assert lower == -math.inf  # no input known yet: the maximum of nothing is -inf
    assert upper == pytest.approx(3.0 + 4.0, abs=1e-12) and upper >= 7.0
    lower, upper = trivial_bounds(query(Minimize(score)))
    assert lower == pytest.approx(-2.0 - 1.0, abs=1e-12) and lower <= -3.0
    assert upper == math.inf


def test_a_negative_coefficient_takes_the_other_extreme():
    _, upper = trivial_bounds(query(Maximize(gap(0.5)), ("x1", "x2")))
    assert upper == pytest.approx(7.0 - (-3.0) + 0.5, abs=1e-12)


def test_distances_and_decisions():
    assert trivial_bounds(query(MinimizeDistance("linf", "x", Row((0.0, 0.0))))) == (0.0, math.inf)
    assert trivial_bounds(query(Find())) == (None, None)
    assert trivial_bounds(query(Prove(()))) == (None, None)


def test_huge_leaves_give_an_infinite_bound_not_a_wrong_one():
    # A model refuses leaves whose sum overflows; a large coefficient still can.
    model = build([1e300, 1e300, -1e300], 1)
    score = OutputTerm((OutputAtom(1e10, "m", "x"),))
    q = Query("q", (Feature("x0"),), ("x",), {"m": model}, (), Maximize(score))
    assert trivial_bounds(q)[1] == math.inf


@settings(max_examples=examples(2.4))
@given(
    values=st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=12, max_size=12),
    base=st.floats(-10, 10, width=32),
    coef=st.floats(-3, 3, allow_nan=False).filter(lambda c: c != 0),
    point=st.lists(st.floats(-4, 4, width=32), min_size=2, max_size=2),
)
def test_every_input_lies_within(values, base, coef, point):
    trees = [
        (t % 2, 0.5 * t, values[3 * t], (1 - t % 2, -1.0, values[3 * t + 1], values[3 * t + 2]))
        for t in range(4)
    ]
    model = build(trees, 2, base=base)
    term = OutputTerm((OutputAtom(coef, "m", "x"),), 0.25)
    q = Query("q", FEATURES, ("x",), {"m": model}, (), Maximize(term))
    inputs = {"x": np.array(point, dtype=np.float32)}
    value = term_value(term, model_outputs(q, inputs))
    assert value <= trivial_bounds(q)[1]
    assert (
        trivial_bounds(Query("q", FEATURES, ("x",), {"m": model}, (), Minimize(term)))[0] <= value
    )
