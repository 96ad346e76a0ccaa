"""The judge of `expect` on a bound: a check is decided when no later bounds could change it
(ir/decided.py), whichever bound decided it and however the engine stopped, short of an error."""

from __future__ import annotations

import pytest

from veritas_dsl.diagnostics import Span
from veritas_dsl.ir.lowered import Expectation
from veritas_dsl.outcome import Verdict
from veritas_dsl.result import Result, Termination
from veritas_dsl.run import _expectation_check

SPAN = Span("spec.ver", 1, 1, 1, 2)


def verdict(subject, op, value, termination, lower, upper) -> Verdict:
    e = Expectation(subject, op, value, f"expect {subject} {op} {value}", SPAN)
    result = Result("q", "astar", termination, lower, upper)
    return _expectation_check(e, result).verdict


@pytest.mark.parametrize(
    ("check", "bounds", "expected"),
    [
        # decided by the bound the check reads
        (("upper", "<=", 10.0), (2.0, 8.0), Verdict.HOLDS),
        (("lower", ">=", 1.0), (2.0, 8.0), Verdict.HOLDS),
        # decided by the other bound: a witness above 10, no input reaches 9
        (("upper", "<=", 10.0), (12.0, 30.0), Verdict.FAILED),
        (("lower", ">=", 9.0), (2.0, 8.0), Verdict.FAILED),
        # holds now, but the bound may still move past the value: not decided
        (("upper", ">=", 5.0), (2.0, 30.0), Verdict.UNDECIDED),
        (("lower", "<=", 5.0), (2.0, 30.0), Verdict.UNDECIDED),
        (("upper", "<=", 10.0), (2.0, 30.0), Verdict.UNDECIDED),
    ],
)
@pytest.mark.parametrize("termination", [Termination.DECIDED, Termination.TIME_LIMIT])
def test_a_stopped_engines_bounds_decide_what_no_later_bound_could_change(
    check, bounds, expected, termination
):
    assert verdict(*check, termination, *bounds) is expected


def test_an_errors_bounds_decide_nothing():
    assert verdict("upper", "<=", 10.0, Termination.ERROR, 2.0, 8.0) is Verdict.UNDECIDED


def test_an_optimum_decides_every_check():
    assert verdict("upper", ">=", 5.0, Termination.OPTIMAL, 6.0, 6.0) is Verdict.HOLDS
    assert verdict("lower", "<=", 5.0, Termination.OPTIMAL, 6.0, 6.0) is Verdict.FAILED
