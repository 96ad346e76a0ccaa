"""How an engine's answer is compared with the oracle's.

Find and prove goals are compared by their verdict (a witness found, or none exists), never by
the termination string: a witness found just as a limit struck is a verdict whatever the
termination says. Optimisation goals are compared by their bounds, and an optimal answer's first
witness must attain the optimum. Every witness must reproduce on the library model
(:func:`veritas_dsl.validate.validate_witness`). An engine's ``error`` or ``unsupported`` fails the
comparison, except for the disagreements listed in :data:`KNOWN`, each with its reason.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import currently_in_test_context, event

from veritas_dsl.ir.evaluate import model_outputs, objective_value
from veritas_dsl.ir.query import Query
from veritas_dsl.result import Result, Termination
from veritas_dsl.validate import validate_witness

FOUND, NONE, OPEN = "found", "none exists", "open"

#: The MILP engines under their registered names, and HiGHS alone (``MilpEngine("highs", ...)``).
MILP = ("milp", "gurobi", "highs")

#: Answers that may differ from the oracle's: the engines, a fragment of the Result's message,
#: and why. Each is an ``error`` with valid bounds: the engine knows it could not decide.
KNOWN = (
    (
        MILP,
        "the answer is unknown",
        "the MILP's optimum is a real point that no float32 point near it reproduces, and its "
        "cuts cannot exclude it (milp/engine.py, Cuts.undecided)",
    ),
    (
        MILP,
        "lies beyond the solver's bound (variables with value columns)",
        "the float32 point closest to the MILP's real optimum lies beyond its bound, or above "
        "its optimum by less than the solver resolves, when a distance has value columns",
    ),
    (
        MILP,
        "lies beyond the solver's bound by more than it resolves",
        "a distance below the solver's resolution (1e-9 of the program's unit): two instances "
        "on either side of a split at 0 are 1.4e-45 apart, which the solver cannot tell from 0 "
        "(its bound); the bound check refuses to call the witness optimal",
    ),
)


def verdict(result: Result) -> str:
    """What ``result`` says of a find or prove goal: FOUND (it has a witness: for prove, a
    counterexample), NONE (none exists: infeasible) or OPEN (stopped before knowing)."""
    if result.witnesses:
        return FOUND
    return NONE if result.termination is Termination.INFEASIBLE else OPEN


def known_disagreement(engine: str, result: Result) -> str | None:
    """The reason from :data:`KNOWN` that excuses ``result``, or None."""
    if result.termination is not Termination.ERROR:
        return None
    for engines, fragment, reason in KNOWN:
        if engine in engines and fragment in result.message:
            return reason
    return None


def check_witnesses(query: Query, result: Result) -> None:
    """Every witness reproduces on the library models and satisfies the query; the first one of
    an optimal optimisation answer attains the optimum."""
    for witness in result.witnesses:
        validate_witness(query, witness)
    optimum = result.lower
    if result.termination is Termination.OPTIMAL and optimum is not None:
        assert result.witnesses, f"an optimal answer comes with a witness: {result}"
        inputs = result.witnesses[0].inputs  # the optimum is the Ensemble's (float64 sums)
        value = objective_value(query, inputs, model_outputs(query, inputs))
        assert value == pytest.approx(optimum, abs=1e-9), result


def assert_agrees(
    query: Query, result: Result, expected: Result, *, engine: str, limit_s: float | None = None
) -> None:
    """Assert that ``result`` (``engine``'s answer) agrees with ``expected`` (the oracle's).

    ``limit_s`` is the time limit the engine had: an answer short of exact is accepted only as a
    ``time_limit`` that used it (these queries are small), with bounds that bracket the oracle's.
    """
    assert expected.exact, f"the oracle did not answer: {expected}"
    check_witnesses(query, result)
    reason = known_disagreement(engine, result)
    if reason is not None:
        if currently_in_test_context():  # counted in hypothesis' statistics
            event(f"known disagreement: {reason}")
        _assert_brackets(result, expected)
        return
    assert result.termination not in (Termination.ERROR, Termination.UNSUPPORTED), result
    if not result.exact:
        assert result.termination is Termination.TIME_LIMIT, result
        assert limit_s is not None and result.time_s >= 0.9 * limit_s, result
    if expected.lower is None:  # find and prove: the verdicts agree, or the engine ran out of time
        allowed = (verdict(expected),) if result.exact else (verdict(expected), OPEN)
        assert verdict(result) in allowed, (result, expected)
    elif result.exact:
        assert result.termination == expected.termination, (result, expected)
        assert result.lower == pytest.approx(expected.lower, abs=1e-9), (result, expected)
        assert result.upper == pytest.approx(expected.upper, abs=1e-9), (result, expected)
    else:
        _assert_brackets(result, expected)


def _assert_brackets(result: Result, expected: Result) -> None:
    if expected.lower is None or not math.isfinite(expected.lower):
        return
    assert result.lower is not None and result.upper is not None, result
    assert result.lower <= expected.lower + 1e-9, (result, expected)
    assert expected.upper <= result.upper + 1e-9, (result, expected)
