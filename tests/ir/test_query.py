"""The query IR: reference checks, the constructs a query uses, and negation of conclusions."""

from __future__ import annotations

import math

import pytest

from veritas_dsl.ir import (
    AnyOf,
    AtMostKChanged,
    Ball,
    DomainKind,
    Feature,
    Find,
    Interval,
    IRError,
    Linear,
    LinearTerm,
    Maximize,
    OneHot,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Prove,
    Query,
    Row,
    Tie,
    VoteMargin,
    negate,
)
from veritas_dsl.ir.constructs import constructs
from veritas_dsl.ir.evaluate import changed_units
from veritas_dsl.ir.query import change_units

from conftest import build

MODEL = build([(0, 0.5, 1.0, 2.0)], 2)
FEATURES = (Feature("x0"), Feature("x1"))
OUT = OutputTerm((OutputAtom(1.0, "m", "x"),))


def query(constraints=(), goal=None, instances=("x",), features=FEATURES, models=None):
    return Query(
        "q", features, instances, models or {"m": MODEL}, tuple(constraints), goal or Find()
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"constraints": [Interval("y", 0, 0, 1)]}, "unknown instance 'y'"),
        ({"constraints": [Interval("x", 5, 0, 1)]}, "feature index 5"),
        ({"goal": Maximize(OutputTerm((OutputAtom(1.0, "other", "x"),)))}, "unknown model 'other'"),
        ({"goal": Maximize(OutputTerm((OutputAtom(1.0, "m", "x", 2),)))}, "no output 2"),
        ({"constraints": [Ball("linf", "x", Row((0.0,)), 1.0)]}, "row row has 1 values"),
        ({"constraints": [OneHot("x", (0, 1))]}, "not bool"),
        *(
            ({"constraints": [AtMostKChanged("x", Row((0.0, 0.0)), 1, units)]}, "partition")
            for units in (((0,),), ((0, 1), (1,)), ((0,), (1,), ()), ((0, 2), (1,)))
        ),
        ({"goal": Prove((Interval("x", 0, 0, 1),))}, "only constrain outputs"),
        ({"features": (Feature("x0"), Feature("x0"))}, "not unique"),
        ({"features": (Feature("a"), Feature("b"))}, "not over the query's features"),
        ({"instances": ("x", "x")}, "once each"),
        ({"constraints": [Ball("linf", "x", Row((0.0, math.inf)), 1.0)]}, "not finite"),
        ({"constraints": [OutputConstraint(OUT, "<", -math.inf)]}, "decided for every input"),
        (
            {"constraints": [AnyOf(((Linear((LinearTerm(1.0, "x", 0),), "<=", math.inf),),))]},
            "decided for every input",
        ),
        ({"constraints": [VoteMargin("m", "x", 1, 1)]}, "has no votes 1, 1"),
    ],
)
def test_bad_references_are_caught(kwargs, message):
    with pytest.raises(IRError, match=message):
        query(**kwargs)


def test_constructs_are_detected():
    bools = (Feature("x0", DomainKind.BOOL), Feature("x1", DomainKind.INT))
    q = query(
        [
            Tie("x1", "x2", 0),
            OneHot("x1", (0,)),
            AtMostKChanged("x1", "x2", 1, ((0,), (1,))),
            Ball("l1", "x1", Row((0.0, 0.0)), 1.0),
            AnyOf(((OutputConstraint(OutputTerm((OutputAtom(1.0, "m", "x1"),)), ">", 0.0),),)),
        ],
        goal=Maximize(OutputTerm((OutputAtom(1.0, "m", "x1"), OutputAtom(-1.0, "m", "x2")))),
        instances=("x1", "x2"),
        features=bools,
    )
    assert constructs(q) == {
        "two_instances",
        "bool_domain",
        "int_domain",
        "tie",
        "one_hot",
        "changed",
        "l1",
        "disjunction",
        "output_constraint",
        "maximize",
    }


def test_negation_flips_comparisons_and_swaps_and_or():
    a = OutputConstraint(OUT, ">", 1.0)
    b = OutputConstraint(OUT, "<=", 3.0)
    c = OutputConstraint(OUT, ">=", 0.0)
    negated = negate((a, AnyOf(((b,), (c,)))))
    assert negated == AnyOf(
        (
            (OutputConstraint(OUT, "<=", 1.0),),
            (
                AnyOf(((OutputConstraint(OUT, ">", 3.0),),)),
                AnyOf(((OutputConstraint(OUT, "<", 0.0),),)),
            ),
        )
    )


def test_an_infinite_ball_holds_everywhere():
    import numpy as np

    from veritas_dsl.ir.evaluate import holds

    inputs = {"x": np.array([1e30, -1e30], dtype=np.float32)}
    assert holds(Ball("linf", "x", Row((0.0, 0.0)), float("inf")), inputs, {})
    assert holds(Ball("l1", "x", Row((0.0, 0.0)), float("inf")), inputs, {})


def test_change_units_count_a_group_once():
    assert change_units(4, [(1, 3)]) == ((0,), (1, 3), (2,))
    c = AtMostKChanged("x", Row((0.0, 1.0, 0.0, 5.0)), 1, change_units(4, [(1, 2)]))
    switched = {"x": [0.0, 0.0, 1.0, 5.0]}  # the group moved: one change
    assert changed_units(c, switched) == 1
    assert changed_units(c, {"x": [-0.0, 0.0, 1.0, 4.0]}) == 2  # -0.0 is 0.0; the group and x3
    assert changed_units(c, {"x": [0.0, 1.0, 0.0, 5.0]}) == 0
