"""The static box: conditions no input satisfies, found before any engine runs, checked against
the oracle's exact answer."""

from __future__ import annotations

import math

from hypothesis import example, given
from hypothesis import strategies as st

from veritas_dsl.ir import (
    AnyOf,
    Ball,
    DomainKind,
    Feature,
    Find,
    Interval,
    OneHot,
    OutputConstraint,
    Query,
    Row,
    Tie,
)
from veritas_dsl.ir.empty import emptiness
from veritas_dsl.ir.reductions import variables_of
from veritas_dsl.result import Termination
from veritas_dsl.solvers import registry

from conftest import build
from reference.ir import out, term

REAL = DomainKind.REAL
INT = DomainKind.INT
BOOL = DomainKind.BOOL


def space(*kinds, bounds=None):
    bounds = bounds or [(-math.inf, math.inf) if k is not BOOL else (0.0, 1.0) for k in kinds]
    return tuple(
        Feature(f"f{i}", kind, lo, hi)
        for i, (kind, (lo, hi)) in enumerate(zip(kinds, bounds, strict=True))
    )


def test_two_intervals_that_exclude_each_other():
    low, high = Interval("x", 0, 30.0), Interval("x", 0, hi=10.0)
    answer = emptiness(space(REAL), ("x",), (low, high))
    assert answer.empty is True
    (conflict,) = answer.conflicts
    assert conflict.constraints == (low, high) and conflict.disjunction is None
    assert conflict.reason == "`x.f0` would have to be >= 30 and <= 10"


def test_an_interval_outside_the_domain():
    above = Interval("x", 0, 95.0)
    answer = emptiness(space(INT, bounds=[(18.0, 90.0)]), ("x",), (above,))
    assert answer.empty is True
    assert answer.conflicts[0].constraints == (above,)
    assert "its domain: int in [18, 90]" in answer.conflicts[0].reason


def test_the_float32_grid_and_whole_numbers():
    # 0.1 is no float32: no float32 lies in [0.1, 0.1]; [3.2, 3.8] holds no whole number.
    assert emptiness(space(REAL), ("x",), (Interval("x", 0, 0.1, 0.1),)).empty is True
    assert emptiness(space(REAL), ("x",), (Interval("x", 0, 3.2, 3.8),)).empty is False
    answer = emptiness(space(INT), ("x",), (Interval("x", 0, 3.2, 3.8),))
    assert answer.empty is True and "holds no int value" in answer.conflicts[0].reason
    # a domain that is a sliver around a whole number holds it; one between two does not
    sliver = space(INT, bounds=[(7.999999999999998, 8.000000000000002)])
    assert emptiness(sliver, ("x",), ()).empty is False
    between = space(INT, bounds=[(8.000000000000002, 8.999999999999998)])
    assert emptiness(between, ("x",), ()).empty is True
    assert emptiness(space(INT, bounds=[(7.5, 8.0)]), ("x",), ()).empty is False


def test_one_hot_groups():
    group = OneHot("x", (0, 1, 2))
    features = space(BOOL, BOOL, BOOL)
    both = (group, Interval("x", 0, 1.0, 1.0), Interval("x", 2, 1.0, 1.0))
    answer = emptiness(features, ("x",), both)
    assert answer.empty is True and "would both be 1" in answer.conflicts[0].reason
    assert set(answer.conflicts[0].constraints) == set(both)
    zeros = (group, *(Interval("x", f, 0.0, 0.0) for f in range(3)))
    assert emptiness(features, ("x",), zeros).empty is True
    assert emptiness(features, ("x",), zeros[:3]).empty is False  # f2 may still be 1
    # a ball that keeps every member below 1 empties the group too
    ball = Ball("linf", "x", Row((0.0, 0.0, 0.0)), 0.5)
    assert emptiness(features, ("x",), (group, ball)).empty is True


def test_a_ball_around_a_row_outside_the_domain():
    features = space(INT, REAL, bounds=[(18.0, 90.0), (0.0, 1.0)])
    ball = Ball("linf", "x", Row((95.0, 0.5), "test[3]"), 0.05)
    answer = emptiness(features, ("x",), (ball,))
    assert answer.empty is True and answer.conflicts[0].constraints == (ball,)
    assert "within 0.05 of test[3], where it is 95" in answer.conflicts[0].reason
    inside = Ball("linf", "x", Row((90.0, 0.5)), 0.05)
    assert emptiness(features, ("x",), (inside,)).empty is False


def test_l1_balls_add_their_distances():
    corner = (Interval("x", 0, 1.0), Interval("x", 1, 1.0))
    near = Ball("l1", "x", Row((0.0, 0.0)), 1.5)
    answer = emptiness(space(REAL, REAL), ("x",), (*corner, near))
    assert answer.empty is True and near in answer.conflicts[0].constraints
    assert "keep it >= 2" in answer.conflicts[0].reason
    far = Ball("l1", "x", Row((0.0, 0.0)), 2.0)
    assert emptiness(space(REAL, REAL), ("x",), (*corner, far)).empty is False
    # Leaving member 0 of a one-hot group means setting another to 1: two coordinates move,
    # though each alone could stay put.
    off = (OneHot("x", (0, 1, 2)), Interval("x", 0, 0.0, 0.0))
    group = (*off, Ball("l1", "x", Row((1.0, 0.0, 0.0)), 1.5))
    answer = emptiness(space(BOOL, BOOL, BOOL), ("x",), group)
    assert answer.empty is True and "keep it >= 2" in answer.conflicts[0].reason
    wider = Ball("l1", "x", Row((1.0, 0.0, 0.0)), 2.0)
    assert emptiness(space(BOOL, BOOL, BOOL), ("x",), (*off, wider)).empty is False
    # two l1 balls may interact through ties: the box decides only their emptiness
    both = (far, Ball("l1", "x", Row((1.0, 1.0)), 2.0))
    assert emptiness(space(REAL, REAL), ("x",), both).empty is None


def test_weighted_balls_weigh_their_gaps():
    """x0 >= 3 lies 3 from a row at 0: out of an l1 ball of radius 1, inside it when x0 weighs
    0.25 (3 * 0.25 <= 1), unless x1 >= 0.5 adds its gap; a linf ball of radius 1 weighing 0.25
    reaches x0 = 4 (1 / 0.25)."""
    far = (Interval("x", 0, 3.0),)
    plain = Ball("l1", "x", Row((0.0, 0.0)), 1.0)
    assert emptiness(space(REAL, REAL), ("x",), (*far, plain)).empty is True
    scaled = Ball("l1", "x", Row((0.0, 0.0)), 1.0, (0.25, 1.0))
    assert emptiness(space(REAL, REAL), ("x",), (*far, scaled)).empty is False
    both = (*far, Interval("x", 1, 0.5))  # 3 * 0.25 + 0.5 > 1
    answer = emptiness(space(REAL, REAL), ("x",), (*both, scaled))
    assert answer.empty is True and "keep it >= 1.25" in answer.conflicts[0].reason
    beyond = (Interval("x", 0, 4.5),)
    box = Ball("linf", "x", Row((0.0, 0.0)), 1.0, (0.25, 1.0))
    assert emptiness(space(REAL, REAL), ("x",), (Interval("x", 0, 4.0), box)).empty is False
    answer = emptiness(space(REAL, REAL), ("x",), (*beyond, box))
    assert answer.empty is True and "within 1 scaled of row" in answer.conflicts[0].reason


def test_ties_merge_instances():
    a, b = Interval("x1", 0, hi=1.0), Interval("x2", 0, 2.0)
    tie = Tie("x1", "x2", 0)
    answer = emptiness(space(REAL), ("x1", "x2"), (a, tie, b))
    assert answer.empty is True and set(answer.conflicts[0].constraints) == {a, b, tie}
    assert emptiness(space(REAL), ("x1", "x2"), (a, b)).empty is False


def test_a_bool_takes_0_or_1_whatever_its_range():
    # as the engines' box (StaticBounds) and the oracle have it: one rule, in ir/box.py (a .ver
    # file cannot give a bool a range; a query built in Python can)
    features, above = (Feature("b", BOOL, 0.0, 5.0),), Interval("x", 0, 2.0)
    answer = emptiness(features, ("x",), (above,))
    assert answer.empty is True and answer.conflicts[0].constraints == (above,)
    assert "its domain: bool in [0, 5]" in answer.conflicts[0].reason
    query = Query("b", features, ("x",), {}, (above,), Find())
    assert variables_of(query).empty


def test_disjunctions():
    top = Interval("x", 0, 30.0)
    dead, alive = (Interval("x", 0, hi=10.0),), (Interval("x", 1, 0.0, 1.0),)
    either = AnyOf((dead, alive))
    answer = emptiness(space(REAL, REAL), ("x",), (top, either))
    assert answer.empty is None  # the box does not decide disjunctions it keeps
    (conflict,) = answer.conflicts
    assert conflict.disjunction == either and conflict.alternative == 0
    assert conflict.constraints == (top, dead[0])
    neither = AnyOf((dead, (Interval("x", 0, hi=20.0),)))
    answer = emptiness(space(REAL, REAL), ("x",), (top, neither))
    assert answer.empty is True and answer.conflicts[0].constraints == (neither,)
    assert emptiness(space(REAL), ("x",), (AnyOf(()),)).empty is True


def test_conditions_the_box_cannot_judge_leave_it_undecided():
    above = OutputConstraint(term(out()), ">", 100.0)
    assert emptiness(space(REAL), ("x",), (above,)).empty is None
    assert emptiness(space(REAL), ("x",), (above, Interval("x", 0, 1.0, 0.5))).empty is True


# -- against the oracle -------------------------------------------------------------------------

FINITE = [-1.0, -0.5, 0.0, 0.3, 1.0, 2.5]
VALUES = [-1.5, -0.5, 0.0, 0.5, 1.0, 2.5]


@st.composite
def ranges(draw, ordered=True):
    """``(lo, hi)``, each end finite or infinite on its side; ``lo > hi`` unless ``ordered``."""
    lo = draw(st.sampled_from([-math.inf, *FINITE]))
    hi = draw(st.sampled_from([*FINITE, math.inf]))
    return (min(lo, hi), max(lo, hi)) if ordered else (lo, hi)


@st.composite
def conjunctions(draw):
    """A random small conjunction of the constraints the box reads, over 3 features."""
    kinds = draw(st.sampled_from([(REAL, INT, REAL), (INT, INT, REAL), (BOOL, BOOL, BOOL)]))
    bounds = []
    for kind in kinds:
        if kind is BOOL:
            bounds.append((0.0, 1.0))
        elif kind is INT:  # finite: the oracle cannot yet take an unbounded int (issue 13)
            bounds.append(
                tuple(sorted(draw(st.lists(st.sampled_from(FINITE), min_size=2, max_size=2))))
            )
        else:
            bounds.append(draw(ranges()))
    features = space(*kinds, bounds=bounds)
    instances = ("x",) if draw(st.booleans()) else ("x1", "x2")

    def one(depth):
        instance = draw(st.sampled_from(instances))
        f = draw(st.integers(0, 2))
        choice = draw(st.sampled_from(["interval", "linf", "l1", "tie", "onehot", "anyof"]))
        if choice == "interval":
            return Interval(instance, f, *draw(ranges(ordered=False)))
        if choice in ("linf", "l1"):
            row = Row(tuple(draw(st.lists(st.sampled_from(VALUES), min_size=3, max_size=3))))
            radius = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0]))
            each = st.sampled_from([0.1, 0.25, 1.0, 3.0])
            weights = draw(st.none() | st.lists(each, min_size=3, max_size=3).map(tuple))
            return Ball(choice, instance, row, radius, weights)
        if choice == "tie" and len(instances) == 2:
            return Tie("x1", "x2", f)
        if choice == "onehot" and kinds[0] is BOOL:
            return OneHot(instance, (0, 1, 2))
        if choice == "anyof" and depth == 0:
            n = draw(st.integers(0, 2))
            return AnyOf(
                tuple(tuple(one(1) for _ in range(draw(st.integers(1, 2)))) for _ in range(n))
            )
        return Interval(instance, f, -math.inf, draw(st.sampled_from(VALUES)))

    constraints = tuple(one(0) for _ in range(draw(st.integers(1, 4))))
    return features, instances, constraints


@given(conjunctions())
@example(  # an int domain holding one whole number, and a ball that just reaches it
    (
        space(INT, REAL, REAL, bounds=[(-0.5, 0.3), (-1.0, 1.0), (-math.inf, math.inf)]),
        ("x",),
        (Ball("linf", "x", Row((0.5, 0.0, 0.0)), 0.5),),
    )
)
def test_the_box_agrees_with_the_oracle(case):
    features, instances, constraints = case
    model = build([(0, 0.5, 0.0, 1.0)], 3, names=tuple(f.name for f in features))
    query = Query("box", features, instances, {"m": model}, constraints, Find())
    answer = emptiness(features, instances, constraints)
    result = registry.get("oracle").solve(query)
    assert result.exact, result.message
    if answer.empty is True:
        assert result.termination is Termination.INFEASIBLE, answer.conflicts
    elif answer.empty is False:
        assert result.termination is Termination.OPTIMAL and result.witnesses
    exact_kinds = (Interval, Tie, OneHot, Ball)
    plain = all(isinstance(c, exact_kinds) for c in constraints)
    l1_balls = sum(isinstance(c, Ball) and c.norm == "l1" for c in constraints)
    if plain and l1_balls <= 1 and not _overlapping_groups(constraints):
        assert answer.empty is not None  # the box is exact on these
    for conflict in answer.conflicts:
        if conflict.disjunction is not None:  # a dead alternative: with the rest, nothing holds
            alternative = conflict.disjunction.alternatives[conflict.alternative]
            rest = tuple(c for c in constraints if not isinstance(c, AnyOf))
            dead = Query("dead", features, instances, {"m": model}, rest + alternative, Find())
            assert registry.get("oracle").solve(dead).termination is Termination.INFEASIBLE


@given(conjunctions())
def test_an_empty_box_for_the_engines_is_explained_to_the_user(case):
    features, instances, constraints = case
    plain = tuple(c for c in constraints if not isinstance(c, AnyOf))
    query = Query("box", features, instances, {}, plain, Find())
    if variables_of(query).empty:  # StaticBounds' box, which the engines read
        assert emptiness(features, instances, plain).empty is True


def _overlapping_groups(constraints) -> bool:
    groups = [c for c in constraints if isinstance(c, OneHot)]
    ties = any(isinstance(c, Tie) for c in constraints)
    return len({g.instance for g in groups}) > 1 and ties
