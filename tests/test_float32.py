"""The float32 grid helpers, checked against a walk over neighbouring float32 values."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from veritas_dsl.float32 import (
    ball_interval,
    ceil32,
    ceil32_array,
    floor32,
    floor32_array,
    next_down,
    next_up,
)

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, width=64)


@given(finite)
def test_ceil_and_floor_are_the_nearest_float32_on_each_side(v):
    up, down = ceil32(v), floor32(v)
    assert down <= v <= up
    assert np.float32(up) == up and np.float32(down) == down
    assert next_down(up) < v < next_up(down) or up == down == v


@given(st.lists(st.floats(allow_nan=False, width=64), max_size=20))
def test_array_rounding_is_the_scalar_rounding_of_each_value(values):
    extremes = [0.0, -0.0, math.inf, -math.inf, 1e39, -1e39, 3.4028235e38, 1e-46, -1e-46]
    values = np.array(values + extremes)
    assert np.array_equal(ceil32_array(values), [ceil32(v) for v in values])
    assert np.array_equal(floor32_array(values), [floor32(v) for v in values])


@given(
    st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, width=32),
    st.floats(0, 10, allow_nan=False),
)
def test_ball_interval_is_exactly_the_float32_values_within_the_radius(center, radius):
    lo, hi = ball_interval(center, radius)

    def within(x: float) -> bool:
        return abs(Fraction(x) - Fraction(center)) <= Fraction(radius)

    assert within(lo) and within(hi)
    assert not within(next_down(lo)) and not within(next_up(hi))


def test_ball_interval_does_not_trust_float64_rounding():
    # In float64, 1 - (-1e-45) rounds to 1: a float64 check would admit tiny negatives.
    assert ball_interval(1.0, 1.0) == (0.0, 2.0)


def test_ball_interval_edge_cases():
    assert ball_interval(1.0, 0.0) == (1.0, 1.0)
    assert ball_interval(0.0, math.inf) == (-math.inf, math.inf)
    lo, hi = ball_interval(0.0, -1.0)
    assert lo > hi
