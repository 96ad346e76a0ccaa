"""Output constraints whose every tree has one reachable leaf: the MILP decides them as the
semantics add them (float64, tree order), and answers what the oracle, A* and SAT answer.

Before (issue 37, item 2) the program folded such a term into a constant, and compared it with
``rhs`` plus half a grid step, which float64 rounding lost (``0.5 + 2**-56 == 0.5``), or in an
order of its own (``0.1 + 0.2 + 0.3 - 0.1 - 0.2 - 0.3 == 5.6e-17``): it accepted what the
semantics refuse, and the witness check ended in ``WitnessBug`` (exit 2).
"""

from __future__ import annotations

import pytest

from veritas_dsl.ir import (
    DomainKind,
    Find,
    Interval,
    Maximize,
    Minimize,
    MinimizeDistance,
    OutputConstraint,
    Prove,
    Query,
    Row,
)
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.oracle.engine import OracleEngine

from conftest import build, require
from reference.agreement import assert_agrees
from reference.ir import features, out, term

ORACLE = OracleEngine()
SIXTH = 0.5 / 3  # three trees of a forest voting 1/2 each: their mean is exactly 0.5
ENGINES = ["milp", "gurobi", "astar", "sat"]


def answer(name: str, query: Query) -> None:
    engine = registry.get(name)
    require(engine)
    result = engine.solve(query, Limits(timeout_s=30))
    assert_agrees(query, result, ORACLE.solve(query), engine=name)


def single_leaves() -> Query:
    """``class(before, x) == 1`` (above 0.5) of three single-leaf trees summing to 0.5."""
    before = build([SIXTH, SIXTH, SIXTH], 1)
    above = (OutputConstraint(term(out(model="before")), ">", 0.5),)
    return Query("q", features(before), ("x",), {"before": before}, above, Find())


def identical_pair() -> Query:
    """``forall x: x.f0 >= 2 => after(x) - before(x) <= 0`` for two copies of three trees, each
    of one leaf at x.f0 >= 2; their leaves added in the program's order leave 5.6e-17."""
    trees = [(0, 1.0, -1.0, value) for value in (0.1, 0.2, 0.3)]
    before, after = build(trees, 1), build(trees, 1)
    difference = term(out(model="after"), out(model="before", coef=-1.0))
    goal = Prove((OutputConstraint(difference, "<=", 0.0),))
    premise = (Interval("x", 0, 2.0),)
    models = {"after": after, "before": before}
    return Query("q", features(before), ("x",), models, premise, goal)


def int_closest() -> Query:
    """``class(before, x) == 1 minimize linf(x, r)`` on an int feature in [0, 5]: the first box
    around r = 3 holds the whole numbers 1 to 5, where every tree has one leaf (declared real,
    it holds 0.49999997 too, left of the split)."""
    before = build([(0, 0.5, 0.0, SIXTH)] * 3, 1)
    above = (OutputConstraint(term(out(model="before")), ">", 0.5),)
    goal = MinimizeDistance("linf", "x", Row((3.0,)))
    space = features(before, [DomainKind.INT], [(0.0, 5.0)])
    return Query("q", space, ("x",), {"before": before}, above, goal)


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("make", [single_leaves, identical_pair, int_closest])
def test_a_constant_output_at_its_bound_is_decided_as_the_semantics_add_it(name, make):
    answer(name, make())


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
@pytest.mark.parametrize("rhs", [0.5, 0.49999999999999994, 0.5000000000000001])
def test_every_comparison_of_a_constant_output(op, rhs):
    """The same three leaves against every comparison on and beside 0.5."""
    before = build([SIXTH, SIXTH, SIXTH], 1)
    constraint = (OutputConstraint(term(out(model="before")), op, rhs),)
    query = Query("q", features(before), ("x",), {"before": before}, constraint, Find())
    answer("milp", query)


def nearly_cancelling(goal) -> Query:
    """``after(x) - before(x)`` of two forests of one structure whose leaves differ by at most
    an ulp (a DaRE forest before and after a deletion that changed no count of a split): the
    program's coefficients (shared leaf columns) are rounding noise, 5.6e-17, while the
    semantics add each forest's leaves in float64 first. The MILP's bound check asked the two to
    agree to 4e-9 of that noise and ended in `error` (ver leakage's tests, after the check)."""
    values = [(0.1, 0.3), (0.2, 0.2), (0.3, 0.1)]
    before = build([(0, 1.0, a, b) for a, b in values], 1)
    after = build([(0, 1.0, a, b + (2**-54 if i == 0 else 0.0)) for i, (a, b) in enumerate(values)], 1)
    difference = term(out(model="after"), out(model="before", coef=-1.0))
    models = {"after": after, "before": before}
    return Query("q", features(before), ("x",), models, (), goal(difference))


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("goal", [Maximize, Minimize], ids=["max", "min"])
def test_a_nearly_cancelling_difference_is_answered_exactly(name, goal):
    answer(name, nearly_cancelling(goal))


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("high, low", [(2.0**40, 2.0**-13), (2.0**27, 2.0**-26), (1e8, 1e-8)])
def test_an_output_row_accepts_what_float64_rounds_onto_its_bound(name, high, low):
    """``a(x) == high`` where a's two trees reach ``high`` and ``low``: float64 adds them to
    ``high`` (for the first two pairs), the real numbers do not. The program's rows decided on
    the real sum and called the query infeasible (milp and gurobi), so a property could hold
    that fails; a row now accepts what the float64 sum can reach."""
    a = build([(0, 0.5, 0.0, high), (1, 0.5, 0.0, low)], 2)
    b = build([(1, 0.5, 0.0, 1.0)], 2)  # forces the second tree to `low`
    constraints = (
        OutputConstraint(term(out(model="b")), ">=", 1.0),
        OutputConstraint(term(out(model="a")), ">=", high),
        OutputConstraint(term(out(model="a")), "<=", high),
    )
    answer(name, Query("q", features(a), ("x",), {"a": a, "b": b}, constraints, Find()))
