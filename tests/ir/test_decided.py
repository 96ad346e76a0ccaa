"""The rule that settles a check from bounds (ir/decided.py): settled only when no later bounds
can change it, whichever bound the check reads."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from veritas_dsl.ir.decided import StopRule, settled
from veritas_dsl.ir.logic import compare

OPS = ("<", "<=", ">", ">=")


def test_settled_needs_both_ends_to_agree():
    assert settled("<=", 10.0, 2.0, 8.0) is True  # upper 8 <= 10, for good
    assert settled("<=", 10.0, 12.0, 30.0) is False  # a witness above 10: never <= 10
    assert settled("<=", 10.0, 2.0, 30.0) is None
    assert settled(">=", 5.0, 2.0, 30.0) is None  # upper >= 5 now, but it may fall below
    assert settled(">=", 5.0, 6.0, 30.0) is True
    assert settled("<", 10.0, 2.0, 10.0) is None  # upper may stay at 10
    assert settled("<=", 0.0, -math.inf, -math.inf) is True  # an infeasible maximisation


def test_a_rule_is_reached_when_every_check_is_settled():
    rule = StopRule.of([("<=", 10.0), (">=", 1.0)])
    assert not rule.reached(0.0, 9.0)  # lower >= 1 not settled
    assert rule.reached(1.5, 9.0)
    assert not rule.reached(None, None)  # find and prove carry no bounds
    assert StopRule.of([]) is None


@given(
    st.sampled_from(OPS),
    st.floats(-10, 10),
    st.lists(st.floats(-10, 10), min_size=4, max_size=4),
)
def test_a_settled_check_is_what_any_later_bounds_give(op, value, points):
    # lower <= later lower <= optimum <= later upper <= upper: the check of either later bound
    # is what settled said.
    lower, later_lower, later_upper, upper = sorted(points)
    verdict = settled(op, value, lower, upper)
    if verdict is not None:
        assert compare(later_lower, op, value) == verdict
        assert compare(later_upper, op, value) == verdict


def test_a_gap_is_the_bounds_difference_or_a_share_of_the_larger_bound():
    assert StopRule.of([], gap_abs=0.5).reached(1.0, 1.4)
    assert not StopRule.of([], gap_abs=0.5).reached(1.0, 1.6)
    assert StopRule.of([], gap_rel=0.01).reached(99.5, 100.0)  # 0.5 <= 1 % of 100
    assert not StopRule.of([], gap_rel=0.01).reached(98.0, 100.0)
    assert not StopRule.of([], gap_rel=0.5).reached(-1.0, float("inf"))  # a side unknown
    rule = StopRule.of([("<=", 1.2)], gap_abs=0.5)
    assert rule.reached(1.0, 1.4) and not rule.all_settled(1.0, 1.4)  # the gap stops it
