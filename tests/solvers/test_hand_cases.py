"""Questions whose answers are worked out by hand, asked of every registered engine.

The models are the fixtures of ``conftest.py`` (``two_trees``, with its table of outputs by region,
and ``one_hot_trees``) and one small multiclass model. Each case is a query and its exact answer
(termination, lower, upper); an engine that does not declare a construct of the case must refuse
it. Every witness must reproduce on the model and satisfy the query. Engine-specific behaviour
(limits, refusals, statistics) stays in each engine's own test module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest

from veritas_dsl.ir import (
    AnyOf,
    AtMostKChanged,
    Ball,
    DomainKind,
    Find,
    Interval,
    Linear,
    LinearTerm,
    Maximize,
    Minimize,
    MinimizeDistance,
    OneHot,
    OutputConstraint,
    Prove,
    Query,
    Row,
    Tie,
    change_units,
)
from veritas_dsl.ir.constructs import constructs
from veritas_dsl.result import Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.solve import solve

from conftest import build, require
from reference.agreement import FOUND, NONE, check_witnesses, verdict
from reference.ir import features, out, term

OPTIMAL, INFEASIBLE = Termination.OPTIMAL, Termination.INFEASIBLE
INT, BOOL, REAL = DomainKind.INT, DomainKind.BOOL, DomainKind.REAL


def below(value: float) -> float:
    """The float32 right below ``value``."""
    return float(np.nextafter(np.float32(value), np.float32(-np.inf)))


def f32(value: float) -> float:
    return float(np.float32(value))


@dataclass(frozen=True)
class Case:
    name: str
    goal: object
    answer: tuple  # (termination, lower, upper); bounds None for find and prove
    constraints: tuple = ()
    instances: tuple[str, ...] = ("x",)
    model: str = "two_trees"
    others: tuple[tuple[str, str], ...] = ()  # further (name, fixture) models
    refused_by: tuple[str, ...] = ()  # engines that declare the constructs, yet refuse the case
    kinds: tuple | None = None
    bounds: tuple | None = None
    notes: str = field(default="", compare=False)


HIGH = term(out())
GAP = term(out("x2"), out("x1", coef=-1.0))
PAIR = ("x1", "x2")
ORIGIN = Row((0.0, 0.0))
ALONE = change_units(2)  # each of two features its own unit
# one_hot_trees with (b0, b1) a one-hot group and b2 alone
PAIR_GROUP = OneHot("x", (0, 1))
GROUPED = change_units(3, [(0, 1)])
SWITCH_FROM = Row((0.0, 1.0, 0.0))
TOP_8 = OutputConstraint(HIGH, ">=", 8.0)


def top(value: float) -> tuple:
    return (OPTIMAL, value, value)


CASES = [
    # one instance, boxes and float32 edges (x0 < 1 goes left: below(1) stays left, 1 goes right)
    Case("global max", Maximize(HIGH), top(7.0)),
    Case("global min", Minimize(HIGH), top(-3.0)),
    Case("box", Maximize(HIGH), top(3.5), (Interval("x", 0, 0.0, 1.5),)),
    Case("left of a split", Maximize(HIGH), top(1.5), (Interval("x", 0, -5, below(1.0)),)),
    Case("on a split", Maximize(HIGH), top(3.5), (Interval("x", 0, 1.0, 1.0),)),
    Case("float64 bound", Maximize(HIGH), top(1.5), (Interval("x", 0, 0.0, 1.0 - 1e-12),)),
    Case("affine term", Minimize(term(out(coef=-2.0), constant=1.0)), top(1.0 - 2.0 * 7.0)),
    Case("int domain", Maximize(HIGH), top(3.5), kinds=(INT, REAL), bounds=((0, 1.9), (0, 10))),
    Case(
        "int domain without an integer",
        Find(),
        (INFEASIBLE, None, None),
        (Interval("x", 0, 0.5, 0.9),),
        kinds=(INT, REAL),
        bounds=((-5, 5), (0, 10)),
    ),
    # output constraints, find, prove
    Case(
        "above the maximum", Find(), (INFEASIBLE, None, None), (OutputConstraint(HIGH, ">", 7.0),)
    ),
    Case("at the maximum", Find(), (OPTIMAL, None, None), (OutputConstraint(HIGH, ">=", 7.0),)),
    Case("below the maximum", Maximize(HIGH), top(3.5), (OutputConstraint(HIGH, "<", 7.0),)),
    Case(
        "infeasible maximum",
        Maximize(HIGH),
        (INFEASIBLE, -math.inf, -math.inf),
        (Interval("x", 0, 0.0, 0.5), OutputConstraint(HIGH, ">", 2.0)),
    ),
    Case(
        "infeasible minimum",
        Minimize(HIGH),
        (INFEASIBLE, math.inf, math.inf),
        (Interval("x", 0, 0.0, 0.5), OutputConstraint(HIGH, ">", 2.0)),
    ),
    Case(
        "property holds",
        Prove((OutputConstraint(HIGH, ">=", 1.5), OutputConstraint(HIGH, "<=", 1.5))),
        (INFEASIBLE, None, None),
        (Ball("linf", "x", ORIGIN, 0.5),),
    ),
    Case(
        "property fails",
        Prove((OutputConstraint(HIGH, ">=", 1.5), OutputConstraint(HIGH, "<=", 1.5))),
        (OPTIMAL, None, None),
        (Ball("linf", "x", ORIGIN, 1.0),),
    ),
    # disjunctions
    Case(
        "disjunction of boxes",
        Maximize(HIGH),
        top(1.5),
        (AnyOf(((Interval("x", 0, -math.inf, 0.5),), (Interval("x", 1, 2.0, math.inf),))),),
    ),
    Case(
        "disjunction of an output and a box",
        Maximize(HIGH),
        top(2.0),
        (
            AnyOf(
                (
                    (OutputConstraint(HIGH, "<", 0.0),),
                    (Interval("x", 0, 1.0, 1.5), Interval("x", 1, 1.0, 1.5)),
                )
            ),
        ),
    ),
    Case("empty disjunction", Maximize(HIGH), (INFEASIBLE, -math.inf, -math.inf), (AnyOf(()),)),
    # one-hot groups (b0 ? 5 : (b1 ? 2 : 0), plus b2 ? 3 : 1)
    Case("bools", Maximize(HIGH), top(8.0), model="one_hot_trees", kinds=(BOOL,) * 3),
    Case(
        "one-hot max",
        Maximize(HIGH),
        top(6.0),
        (OneHot("x", (0, 1, 2)),),
        model="one_hot_trees",
        kinds=(BOOL,) * 3,
    ),
    Case(
        "one-hot min",
        Minimize(HIGH),
        top(3.0),
        (OneHot("x", (0, 1, 2)),),
        model="one_hot_trees",
        kinds=(BOOL,) * 3,
    ),
    # a one-hot group is one unit of a change count: with the group (b0, b1) and b2 alone, from
    # (b0, b1, b2) = (0, 1, 0), worth 2 + 1, switching the group to b0 is one change (6) and
    # adding b2 = 1 a second (8); counted member by member the switch alone takes two
    *(
        Case(
            f"one-hot switch with changed <= {k}",
            Maximize(HIGH),
            top(v),
            (PAIR_GROUP, AtMostKChanged("x", SWITCH_FROM, k, GROUPED)),
            model="one_hot_trees",
            kinds=(BOOL,) * 3,
        )
        for k, v in ((0, 3.0), (1, 6.0), (2, 8.0))
    ),
    *(
        Case(
            f"one-hot switch and one more change, changed <= {k}",
            Find(),
            (answer, None, None),
            (PAIR_GROUP, AtMostKChanged("x", SWITCH_FROM, k, GROUPED), TOP_8),
            model="one_hot_trees",
            kinds=(BOOL,) * 3,
        )
        for k, answer in ((1, INFEASIBLE), (2, OPTIMAL))
    ),
    Case(  # the units are the IR's to say: each member alone counts the switch twice
        "one-hot switch counted member by member",
        Maximize(HIGH),
        top(5.0),
        (PAIR_GROUP, AtMostKChanged("x", SWITCH_FROM, 1, change_units(3))),
        model="one_hot_trees",
        kinds=(BOOL,) * 3,
    ),
    *(
        Case(  # b0 up, b1 down, b2 up
            f"closest l1 past a one-hot switch, changed <= {k}",
            MinimizeDistance("l1", "x", SWITCH_FROM),
            answer,
            (PAIR_GROUP, AtMostKChanged("x", SWITCH_FROM, k, GROUPED), TOP_8),
            model="one_hot_trees",
            kinds=(BOOL,) * 3,
        )
        for k, answer in ((1, (INFEASIBLE, math.inf, math.inf)), (2, top(3.0)))
    ),
    *(
        Case(  # no member of the group can keep (1, 1): the group is always one change
            f"one-hot group against a row outside it, changed <= {k}",
            Maximize(HIGH),
            answer,
            (PAIR_GROUP, AtMostKChanged("x", Row((1.0, 1.0, 0.0)), k, GROUPED)),
            model="one_hot_trees",
            kinds=(BOOL,) * 3,
        )
        for k, answer in ((0, (INFEASIBLE, -math.inf, -math.inf)), (1, top(6.0)))
    ),
    *(
        Case(  # x1 = (0, 1, 0): the switch gains 3, b2 = 1 gains 2
            f"one-hot switch between instances, changed <= {k}",
            Maximize(GAP),
            top(v),
            (
                OneHot("x1", (0, 1)),
                OneHot("x2", (0, 1)),
                Interval("x1", 0, 0.0, 0.0),
                Interval("x1", 2, 0.0, 0.0),
                AtMostKChanged("x2", "x1", k, GROUPED),
            ),
            PAIR,
            model="one_hot_trees",
            kinds=(BOOL,) * 3,
            refused_by=("astar",),  # a one-hot group measured against another instance
        )
        for k, v in ((0, 0.0), (1, 3.0), (2, 5.0))
    ),
    # changed(x, row) <= k
    *(
        Case(
            f"changed <= {k}",
            Maximize(HIGH),
            top(v),
            (AtMostKChanged("x", Row((0.0, 3.0)), k, ALONE),),
        )
        for k, v in ((0, 0.0), (1, 1.5), (2, 7.0))
    ),
    Case(
        "changed from a fractional int reference",  # an integer never equals 0.5
        Maximize(HIGH),
        top(0.0),
        (AtMostKChanged("x", Row((0.5, 3.0)), 1, ALONE),),
        kinds=(INT, REAL),
        bounds=((-5, 5), (-10, 10)),
    ),
    # linear constraints
    Case(
        "linear budget",  # x1 may go negative
        Maximize(HIGH),
        top(7.0),
        (Linear((LinearTerm(1.0, "x", 0), LinearTerm(1.0, "x", 1)), "<=", 1.5),),
    ),
    Case(
        "linear budget, x1 >= 0",
        Maximize(HIGH),
        top(3.5),
        (
            Linear((LinearTerm(1.0, "x", 0), LinearTerm(1.0, "x", 1)), "<=", 1.5),
            Interval("x", 1, 0.0, math.inf),
        ),
    ),
    # balls and distances
    Case(
        "linf ball ending on a split",
        Maximize(HIGH),
        top(3.5),
        (Ball("linf", "x", Row((0.5, 0.0)), 0.5),),
    ),
    Case(
        "linf ball a hair short of a split",
        Maximize(HIGH),
        top(1.5),
        (Ball("linf", "x", Row((0.5, 0.0)), below(0.5)),),
    ),
    Case("l1 ball", Maximize(HIGH), top(3.5), (Ball("l1", "x", Row((0.5, 0.5)), 1.0),)),
    Case("small l1 ball", Maximize(HIGH), top(1.5), (Ball("l1", "x", Row((0.5, 0.5)), 0.49),)),
    *(
        Case(f"closest {norm}", MinimizeDistance(norm, "x", ORIGIN), top(d), (at_least,))
        for norm in ("linf", "l1")
        for at_least, d in (
            (OutputConstraint(HIGH, ">", 5.0), 2.0),
            (OutputConstraint(HIGH, ">=", 2.0), 1.0),
        )
    ),
    Case(
        "closest linf off the float32 grid",
        MinimizeDistance("linf", "x", Row((0.1, 0.0))),
        top(f32(2.0) - f32(0.1)),
        (OutputConstraint(HIGH, ">", 5.0),),
    ),
    Case(
        "closest l1 with one change",
        MinimizeDistance("l1", "x", Row((0.0, 3.0))),
        top(3.0 - below(1.0)),
        (OutputConstraint(HIGH, ">", 1.0), AtMostKChanged("x", Row((0.0, 3.0)), 1, ALONE)),
    ),
    # two instances
    Case("tie", Maximize(GAP), top(5.5), (Tie("x1", "x2", 1),), PAIR),
    Case(
        "tie or box",  # x2 in the box: 1.5 at best; x1 anywhere: -3 at worst
        Maximize(GAP),
        top(4.5),
        (AnyOf(((Tie("x1", "x2", 0), Tie("x1", "x2", 1)), (Interval("x2", 0, 0, 0.5),))),),
        PAIR,
    ),
    Case("linf ball between", Maximize(GAP), top(5.0), (Ball("linf", "x2", "x1", 0.25),), PAIR),
    Case(
        "tie and a ball between",
        Maximize(GAP),
        top(3.5),
        (Tie("x1", "x2", 1), Ball("linf", "x2", "x1", 1.0)),
        PAIR,
    ),
    Case("l1 ball between", Maximize(GAP), top(5.0), (Ball("l1", "x2", "x1", 0.25),), PAIR),
    *(
        Case(  # from x1 = 1 (right of the split) to x2 = below(1) (left) is one float32 step
            f"ball between of {steps} float32 step",
            Maximize(GAP),
            top(gap),
            (Ball("linf", "x2", "x1", steps * (1.0 - below(1.0))), Interval("x1", 0, 1.0, 1.5)),
            PAIR,
        )
        for steps, gap in ((1, 3.0), (0.5, 0.0))
    ),
    *(
        Case(
            f"{norm} distance between instances",
            MinimizeDistance(norm, "x2", "x1"),
            top(2.0 - below(1.0)),
            (
                OutputConstraint(term(out("x1")), "<=", 1.5),
                OutputConstraint(term(out("x2")), ">=", 7.0),
                Interval("x1", 1, 0.0, 0.0),
            ),
            PAIR,
        )
        for norm in ("linf", "l1")
    ),
    Case(  # only x1 may differ: from -3 at (x0 >= 2, x1 >= 2) to 7 at (x0 >= 2, x1 < 1)
        "changed between instances",
        Maximize(GAP),
        top(10.0),
        (AtMostKChanged("x2", "x1", 1, ALONE),),
        PAIR,
    ),
    # more boxes, domains, balls and thresholds (from the A* engine's first tests)
    Case(
        "box with a constant",  # 1 <= x0 < 2, 1 <= x1 < 2: 2, plus 10
        Maximize(term(out(), constant=10.0)),
        top(12.0),
        (Interval("x", 0, -math.inf, 1.5), Interval("x", 1, 1.0, math.inf)),
    ),
    Case(  # x0 integral in [0, 1.5] is 0 or 1; x1 is 0 or 1
        "int and bool", Maximize(HIGH), top(3.5), kinds=(INT, BOOL), bounds=((0, 1.5), (0, 1))
    ),
    *(
        Case(
            f"changed from the origin <= {k}",
            Maximize(HIGH),
            top(v),
            (AtMostKChanged("x", ORIGIN, k, ALONE),),
        )
        for k, v in ((0, 1.5), (1, 7.0), (2, 7.0))
    ),
    *(
        Case(
            f"{norm} ball of {r} at the origin",
            Maximize(HIGH),
            top(v),
            (Ball(norm, "x", ORIGIN, r),),
        )
        for norm, r, v in (
            ("linf", 1.0, 3.5),
            ("linf", 0.5, 1.5),
            ("l1", 1.0, 3.5),
            ("l1", 2.5, 7.0),
        )
    ),
    Case(
        "disjunction of boxes, min",
        Minimize(HIGH),
        top(-3.0),
        (AnyOf(((Interval("x", 0, -math.inf, 0.5),), (Interval("x", 1, 2.0, math.inf),))),),
    ),
    Case("above 6.5", Find(), (OPTIMAL, None, None), (OutputConstraint(HIGH, ">", 6.5),)),
    Case(
        "at most 2 near the origin",
        Prove((OutputConstraint(HIGH, "<=", 2.0),)),
        (INFEASIBLE, None, None),
        (Ball("linf", "x", ORIGIN, 0.5),),
    ),
    Case(
        "at most 2 further out",
        Prove((OutputConstraint(HIGH, "<=", 2.0),)),
        (OPTIMAL, None, None),
        (Ball("linf", "x", ORIGIN, 1.5),),
    ),
    Case(  # a conclusion with two conditions negates to a disjunction
        "between 0 and 5",
        Prove((OutputConstraint(HIGH, "<=", 5.0), OutputConstraint(HIGH, ">=", 0.0))),
        (OPTIMAL, None, None),
        (Ball("linf", "x", ORIGIN, 2.5),),
    ),
    Case(  # 3.5 > 3.5 is false, 3.5 >= 3.5 true: no rounding either way
        "strictly above a reachable value",
        Maximize(HIGH),
        (INFEASIBLE, -math.inf, -math.inf),
        (OutputConstraint(HIGH, ">", 3.5), Interval("x", 0, -math.inf, 1.5)),
    ),
    Case(
        "at a reachable value",
        Maximize(HIGH),
        top(3.5),
        (OutputConstraint(HIGH, ">=", 3.5), Interval("x", 0, -math.inf, 1.5)),
    ),
    *(
        Case(
            f"closest {norm} above 3",
            MinimizeDistance(norm, "x", ORIGIN),
            top(1.0),
            (OutputConstraint(HIGH, ">", 3.0),),
        )
        for norm in ("linf", "l1")
    ),
    Case(  # x1 = 0.5 already lies in the 7 region's column
        "closest l1 above 5 from (0, 0.5)",
        MinimizeDistance("l1", "x", Row((0.0, 0.5))),
        top(2.0),
        (OutputConstraint(HIGH, ">", 5.0),),
    ),
    Case(
        "closest above the maximum",
        MinimizeDistance("linf", "x", ORIGIN),
        (INFEASIBLE, math.inf, math.inf),
        (OutputConstraint(HIGH, ">", 7.0),),
    ),
    Case(  # x1.x0 = below(1) (left of the split), x2.x0 = 1: one float32 step
        "closest pair with a gap of 5",
        MinimizeDistance("linf", "x2", "x1"),
        top(1.0 - below(1.0)),
        (OutputConstraint(GAP, ">=", 5.0),),
        PAIR,
    ),
    *(  # an integer nearest a fractional center: found by a review of the SAT engine
        Case(
            f"closest {norm} integer to 2.5 with output {op} 0.5",
            MinimizeDistance(norm, "x", Row((2.5,))),
            top(d),
            (OutputConstraint(HIGH, op, 0.5),),
            model="half_split",
            kinds=(INT,),
            bounds=((0, 5),),
        )
        for norm in ("linf", "l1")
        for op, d in ((">=", 0.5), ("<", 2.5))
    ),
    Case(  # a one-hot group moves the closest point off its cell's end (A* bisected forever)
        "closest with a one-hot group and an integer",
        MinimizeDistance("linf", "x", Row((0.0, 0.0, 2.5))),
        top(1.0),
        (OneHot("x", (0, 1)),),
        model="int_tree",
        kinds=(BOOL, BOOL, INT),
        bounds=((0, 1), (0, 1), (-9, 9)),
    ),
    # several models
    Case(
        "model difference, max",
        Maximize(term(out(), out(model="n", coef=-1.0))),
        top(7.0 - 1.0),
        others=(("n", "step"),),
    ),
    Case(
        "model difference, min",
        Minimize(term(out(), out(model="n", coef=-1.0))),
        top(-4.0),
        others=(("n", "step"),),
    ),
    # strict and loose output constraints (from the MILP engine's first tests)
    *(
        Case(
            f"{goal.__name__.lower()} with output {op} {level}",
            goal(HIGH),
            answer,
            (OutputConstraint(HIGH, op, level),),
        )
        for goal, op, level, answer in (
            (Maximize, "<", 3.5, top(2.0)),
            (Maximize, "<=", 3.5, top(3.5)),
            (Minimize, ">", 1.5, top(2.0)),
            (Minimize, ">=", 1.5, top(1.5)),
        )
    ),
    Case(
        "empty interval",
        Minimize(HIGH),
        (INFEASIBLE, math.inf, math.inf),
        (Interval("x", 0, 1.0, 0.5),),
    ),
    Case(
        "x0 <= x1",
        Maximize(HIGH),
        top(2.0),
        (Linear((LinearTerm(1.0, "x", 0), LinearTerm(-1.0, "x", 1)), "<=", 0.0),),
    ),
    Case(
        "2 x0 + x1 == 4.5",
        Maximize(HIGH),
        top(7.0),
        (Linear((LinearTerm(2.0, "x", 0), LinearTerm(1.0, "x", 1)), "==", 4.5),),
        refused_by=("astar",),  # no exact per-box rule for equalities
    ),
    Case("wide linf ball", Maximize(HIGH), top(7.0), (Ball("linf", "x", Row((0.5, 0.5)), 1.5),)),
    Case(
        "ball of negative radius",
        Find(),
        (INFEASIBLE, None, None),
        (Ball("linf", "x", Row((0.5, 0.5)), -1.0),),
    ),
    Case(
        "drift, max",
        Maximize(term(out(model="v2"), out(coef=-1.0))),
        top(5.0),
        others=(("v2", "drifted"),),
    ),
    Case(
        "drift, min",
        Minimize(term(out(model="v2"), out(coef=-1.0))),
        top(-8.0),
        others=(("v2", "drifted"),),
    ),
    Case(
        "multiclass min when class 0 is not first",
        Minimize(term(out(output=2), out(output=0, coef=-1.0))),
        top(-1.0),
        (OutputConstraint(term(out(output=0), out(output=1, coef=-1.0)), "<", 0.0),),
        model="three_classes",
    ),
    # multiclass: margins between outputs
    Case(
        "multiclass margin of outputs 0 over 2",
        Maximize(term(out(output=0), out(output=2, coef=-1.0))),
        top(4.0),
        model="three_outputs",
    ),
    Case(
        "multiclass max",
        Maximize(term(out(output=2), out(output=0, coef=-1.0))),
        top(3.0),
        model="three_classes",
    ),
    Case(
        "multiclass min",
        Minimize(term(out(output=2), out(output=0, coef=-1.0))),
        top(-1.5),
        model="three_classes",
    ),
]


@pytest.fixture
def step():
    """1 when x0 >= 0.5, else 0."""
    return build([(0, 0.5, 0.0, 1.0)], 2)


@pytest.fixture
def half_split():
    """One feature: 1 when x0 >= 0.5, else 0."""
    return build([(0, 0.5, 0.0, 1.0)], 1)


@pytest.fixture
def int_tree():
    """Three features; one tree on the third: 1 when x2 >= 2.5, else 0."""
    return build([(2, 2.5, 0.0, 1.0)], 3)


@pytest.fixture
def drifted():
    """A one-tree model over (x0, x1) to compare with ``two_trees``."""
    return build([(0, 0.5, 1.0, (1, 1.5, -1.0, 2.0))], 2)


@pytest.fixture
def three_outputs():
    """Three outputs over (x0, x1); output 0 minus output 2 is 4 at best (x0 >= 0, x1 < 0)."""
    t0 = (0, 0.0, [1.0, 0.0, 2.0], [3.0, 0.0, -1.0])
    t1 = (1, 0.0, [0.0, 1.0, 0.0], [-1.0, 0.0, 1.0])
    return build([t0, t1], 2, base=[0.0, 0.0, 0.0], task="multiclass")


@pytest.fixture
def three_classes():
    return build(
        [(0, 0.0, [1.0, 0.0, 0.0], [0.0, 1.0, 3.0]), (1, 0.0, [0.0, 2.0, 0.0], [0.5, 0.0, 0.0])],
        2,
        task="multiclass",
    )


def query_of(case: Case, request) -> Query:
    model = request.getfixturevalue(case.model)
    models = {"m": model, **{name: request.getfixturevalue(f) for name, f in case.others}}
    kinds = list(case.kinds) if case.kinds else None
    bounds = list(case.bounds) if case.bounds else None
    space = features(model, kinds, bounds)
    return Query(case.name, space, case.instances, models, case.constraints, case.goal)


@pytest.mark.parametrize("name", list(registry.ENGINES))
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hand_case(name, case, request):
    engine = registry.get(name)
    require(engine)
    query = query_of(case, request)
    if name in case.refused_by or not constructs(query) <= engine.capabilities.constructs:
        with pytest.raises(UnsupportedQuery):
            solve(engine, query, Limits(timeout_s=30))
        return
    result = engine.solve(query, Limits(timeout_s=30))
    check_witnesses(query, result)
    termination, lower, upper = case.answer
    if isinstance(query.goal, (Find, Prove)):  # by verdict: a witness, or none exists
        assert verdict(result) == (FOUND if termination is OPTIMAL else NONE), result
        return
    assert result.termination == termination, result.message
    assert (result.lower, result.upper) == (lower, upper)
    if termination is OPTIMAL:  # check_witnesses saw the first one attain the optimum
        assert result.witnesses, "an optimal answer comes with a witness"
