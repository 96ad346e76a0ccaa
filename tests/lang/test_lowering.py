"""The same question written in .ver and built directly in the IR gets the same answer, and the
lowering spells out the language's sugar exactly."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from veritas_dsl import parse
from veritas_dsl.ir import (
    AnyOf,
    AtMostKChanged,
    Ball,
    DomainKind,
    Feature,
    Find,
    Interval,
    Maximize,
    MinimizeDistance,
    OneHot,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Prove,
    Query,
    Row,
    Tie,
    VoteMargin,
)
from veritas_dsl.ir.evaluate import vote_counts
from veritas_dsl.ir.query import vote_wins
from veritas_dsl.solvers.oracle.engine import OracleEngine

from conftest import build
from reference.agreement import check_witnesses, verdict

ORACLE = OracleEngine()


@pytest.fixture
def folder(tmp_path, two_trees):
    """A folder with the two-tree model (features x0, x1) and a three-row CSV."""
    two_trees.save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1,label\n0,0,1\n1.5,0.5,0\n2.5,3,1\n")
    multi = build(
        [(0, 1.0, [1.0, 0.0, 0.0], [0.0, 2.0, 2.0]), (1, 1.0, [0.0, 0.0, 1.0], [0.5, 0.0, 0.0])],
        2,
        task="multiclass",
    )
    multi.save(tmp_path / "multi.json")
    binary = build([(0, 1.0, -1.0, (1, 2.0, 2.0, -0.5)), (1, 1.0, 0.25, -1.0)], 2, task="binary")
    binary.save(tmp_path / "binary.json")
    return tmp_path


def spec(folder, body: str):
    header = 'model m = ensemble "m.json"\nmodel b = ensemble "binary.json"\nmodel c = ensemble "multi.json"\n'
    header += 'data rows = csv "rows.csv"\n'
    return parse(header + body, str(folder / "spec.ver"))


def lowered(folder, body):
    return [item.query for item in spec(folder, body).lowered()]


def same_answer(ver_query: Query, ir_query: Query) -> None:
    """The oracle answers both alike, and each one's witness is a witness of the other: the same
    verdict, and for find and prove, inputs that satisfy both queries."""
    a, b = ORACLE.solve(ver_query), ORACLE.solve(ir_query)
    assert (a.termination, a.lower, a.upper) == (b.termination, b.lower, b.upper)
    assert verdict(a) == verdict(b)
    for query, result in ((ir_query, a), (ver_query, b)):
        check_witnesses(query, result)


def ir(folder, constraints, goal, instances=("x",), features=None):
    models = {name: q for name, q in spec(folder, "").checked.models.items()}
    features = features or (Feature("x0"), Feature("x1"))
    return Query("ir", features, instances, models, tuple(constraints), goal)


def out(model="m", instance="x", coef=1.0, k=0):
    return OutputAtom(coef, model, instance, k)


def test_maximize_with_box(folder):
    (q,) = lowered(folder, "query q { input x  where 0 <= x.x0 <= 1.5  maximize m(x) }")
    assert q.constraints == (Interval("x", 0, 0.0, math.inf), Interval("x", 0, -math.inf, 1.5))
    expected = ir(folder, [Interval("x", 0, 0.0, 1.5)], Maximize(OutputTerm((out(),))))
    same_answer(q, expected)
    assert ORACLE.solve(q).lower == 3.5


def test_find_with_box_and_output(folder):
    (q,) = lowered(folder, "query q { input x  where 0 <= x.x0 <= 1.5 and m(x) > 3  find }")
    expected = ir(
        folder,
        [Interval("x", 0, 0.0, 1.5), OutputConstraint(OutputTerm((out(),)), ">", 3.0)],
        Find(),
    )
    same_answer(q, expected)  # the 3.5 region: a witness of each is a witness of the other
    (q,) = lowered(folder, "query q { input x  where x.x0 <= 0.5 and m(x) > 3  find }")
    assert ORACLE.solve(q).termination.value == "infeasible"


def test_strict_bounds_move_to_the_next_float32(folder):
    (q,) = lowered(folder, "query q { input x  where x.x0 > 1 and x.x1 < 2  find }")
    above_one = float(np.nextafter(np.float32(1), np.float32(2)))
    below_two = float(np.nextafter(np.float32(2), np.float32(0)))
    assert q.constraints == (
        Interval("x", 0, above_one, math.inf),
        Interval("x", 1, -math.inf, below_two),
    )


def test_scaled_bounds_are_exact(folder):
    (q,) = lowered(folder, "query q { input x  where 3 * x.x0 <= 1 and -2 * x.x1 > 1  find }")
    third = q.constraints[0].hi
    after = float(np.nextafter(np.float32(third), np.float32(1)))
    assert Fraction(third) * 3 <= 1 < Fraction(after) * 3
    assert q.constraints[1] == Interval(
        "x", 1, -math.inf, float(np.nextafter(np.float32(-0.5), np.float32(-1)))
    )


def test_robustness_property_per_row(folder):
    queries = lowered(
        folder,
        "property p for r in rows[0:3] { forall x: linf(x, r) <= 0.6 => class(b, x) == class(b, r) }",
    )
    assert [q.name for q in queries] == ["p[0]", "p[1]", "p[2]"]
    rows = [(0.0, 0.0), (1.5, 0.5), (2.5, 3.0)]
    for q, row in zip(queries, rows, strict=True):
        model = q.models["b"]
        cls = int(model.predict_class(np.array([row]))[0])
        conclusion = OutputConstraint(OutputTerm((out("b"),)), ">" if cls == 1 else "<=", 0.0)
        expected = ir(folder, [Ball("linf", "x", Row(row), 0.6)], Prove((conclusion,)))
        assert q.goal == expected.goal
        same_answer(q, expected)


def test_closest_counterexample(folder):
    (q,) = lowered(
        folder,
        "query q { input x  where class(b, x) != class(b, rows[0])  minimize l1(x, rows[0]) }",
    )
    expected = ir(
        folder,
        [OutputConstraint(OutputTerm((out("b"),)), ">", 0.0)],
        MinimizeDistance("l1", "x", Row((0.0, 0.0))),
    )
    same_answer(q, expected)


def test_l2_lowers_to_its_norm_with_its_weights(folder):
    (q,) = lowered(
        folder,
        "query q { input x  where l2(x, rows[0], scale = {x0: 2}) <= 3"
        "  where class(b, x) != class(b, rows[0])  minimize l2(x, rows[0], scale = 4) }",
    )
    expected = ir(
        folder,
        [
            Ball("l2", "x", Row((0.0, 0.0)), 3.0, (0.5, 1.0)),
            OutputConstraint(OutputTerm((out("b"),)), ">", 0.0),
        ],
        MinimizeDistance("l2", "x", Row((0.0, 0.0)), (0.25, 0.25)),
    )
    assert q.constraints == expected.constraints and q.goal == expected.goal
    same_answer(q, expected)


def test_two_instances_with_except(folder):
    (q,) = lowered(
        folder, "query q { input x1, x2  where x1 == x2 except x0  maximize m(x2) - m(x1) }"
    )
    assert q.constraints == (Tie("x1", "x2", 1),)
    expected = ir(
        folder,
        [Tie("x1", "x2", 1)],
        Maximize(OutputTerm((out(instance="x2"), out(instance="x1", coef=-1.0)))),
        instances=("x1", "x2"),
    )
    same_answer(q, expected)
    assert ORACLE.solve(q).lower == 5.5


def test_same_as_row_except(folder):
    (q,) = lowered(folder, "query q { input x  where x == rows[1] except x1  maximize m(x) }")
    assert q.constraints == (Interval("x", 0, 1.5, 1.5),)


def test_changed_and_or_and_not(folder):
    (q,) = lowered(
        folder,
        "query q { input x  where changed(x, rows[2]) < 2 and (x.x0 <= 0 or not x.x1 > 1)  maximize m(x) }",
    )
    assert q.constraints[0] == AtMostKChanged("x", Row((2.5, 3.0)), 1, ((0,), (1,)))
    assert q.constraints[1] == AnyOf(
        ((Interval("x", 0, -math.inf, 0.0),), (Interval("x", 1, -math.inf, 1.0),))
    )
    same_answer(q, ir(folder, q.constraints, q.goal))


def test_multiclass_class_follows_argmax_ties(folder):
    (q,) = lowered(folder, "query q { input x  where class(c, x) == 1  find }")
    # class 1 beats class 0 strictly (earlier) and class 2 or ties it (later)
    assert q.constraints == (
        OutputConstraint(OutputTerm((out("c", k=1), out("c", coef=-1.0, k=0))), ">", 0.0),
        OutputConstraint(OutputTerm((out("c", k=1), out("c", coef=-1.0, k=2))), ">=", 0.0),
    )
    result = ORACLE.solve(q)
    witness = result.witnesses[0].inputs["x"]
    assert q.models["c"].predict_class(witness[None, :])[0] == 1


def test_votes_follow_argmax_ties(folder):
    # Three classes: vote(c, x) == 1 has more votes than class 0 and at least as many as class 2.
    (q,) = lowered(folder, "query q { input x  where vote(c, x) == 1  find }")
    assert q.constraints == (VoteMargin("c", "x", 1, 0, 1), VoteMargin("c", "x", 1, 2, 0))
    result = ORACLE.solve(q)
    witness = result.witnesses[0].inputs["x"]
    assert np.argmax(vote_counts(q.models["c"], witness[None, :])[0]) == 1
    # != is the negation, a disjunction of margins
    (other,) = lowered(folder, "query q { input x  where vote(c, x) != 1  find }")
    assert other.constraints == (
        AnyOf(((VoteMargin("c", "x", 0, 1, 0),), (VoteMargin("c", "x", 2, 1, 1),))),
    )


def test_vote_robustness_per_row(folder):
    queries = lowered(
        folder,
        "property p for r in rows[0:3] { forall x: linf(x, r) <= 0.6 => vote(b, x) == vote(b, r) }",
    )
    rows = [(0.0, 0.0), (1.5, 0.5), (2.5, 3.0)]
    for q, row in zip(queries, rows, strict=True):
        label = int(np.argmax(vote_counts(q.models["b"], np.float32([row]))[0]))
        expected = ir(
            folder, [Ball("linf", "x", Row(row), 0.6)], Prove(vote_wins("b", "x", label, 2))
        )
        assert q.goal == expected.goal
        same_answer(q, expected)


def test_changed_against_infinite_bounds(folder):
    # found by the mutation test: a count bounded by inf holds always, by -inf never
    (q,) = lowered(folder, "query q { input x  where changed(x, rows[0]) <= inf  maximize m(x) }")
    assert q.constraints == ()
    (q,) = lowered(folder, "query q { input x  where changed(x, rows[0]) < -inf  maximize m(x) }")
    assert ORACLE.solve(q).termination.value == "infeasible"


def test_comparisons_with_infinity_are_decided(folder):
    # found by a review of the MILP engine, which could not build rows with infinite sides
    (q,) = lowered(folder, "query q { input x  where x.x0 + x.x1 <= inf  maximize m(x) }")
    assert q.constraints == ()
    (q,) = lowered(folder, "query q { input x  where m(x) < -inf or x.x0 >= 1  maximize m(x) }")
    assert q.constraints == (AnyOf(((Interval("x", 0, 1.0, math.inf),),)),)
    (q,) = lowered(folder, "query q { input x  where x.x0 - x.x1 >= inf  maximize m(x) }")
    assert ORACLE.solve(q).termination.value == "infeasible"
    # beyond the largest float32 lies no input (every engine crashed on this box)
    (q,) = lowered(folder, "query q { input x  where x.x0 >= 1e39  maximize m(x) }")
    assert q.constraints == (AnyOf(()),)
    (q,) = lowered(folder, "query q { input x  where x.x0 < -1e39  maximize m(x) }")
    assert q.constraints == (AnyOf(()),)


def test_one_hot_groups_apply_to_every_instance(folder):
    (q,) = lowered(
        folder,
        "features { g : onehot(x0, x1) }\nquery q { input x1, x2  where x1.g == x0  maximize m(x2) - m(x1) }",
    )
    assert q.features == (
        Feature("x0", DomainKind.BOOL, 0, 1),
        Feature("x1", DomainKind.BOOL, 0, 1),
    )
    assert q.constraints[:2] == (OneHot("x1", (0, 1)), OneHot("x2", (0, 1)))
    assert q.constraints[2] == Interval("x1", 0, 1.0, 1.0)


def test_a_one_hot_group_is_one_unit_of_a_change_count(folder):
    (q,) = lowered(
        folder,
        "features { g : onehot(x0, x1) }\nquery q { input x1, x2  where changed(x1, x2) <= 1  maximize m(x2) - m(x1) }",
    )
    assert q.constraints[2] == AtMostKChanged("x1", "x2", 1, ((0, 1),))
    (q,) = lowered(folder, "query q { input x  where changed(x, rows[0]) <= 1  maximize m(x) }")
    assert q.constraints == (AtMostKChanged("x", Row((0.0, 0.0)), 1, ((0,), (1,))),)


def test_constant_conditions_on_batch_rows(folder):
    queries = lowered(folder, "query q for r in rows[0:3] { input x  where r.label == 1  find }")
    assert [ORACLE.solve(q).termination.value for q in queries] == [
        "optimal",
        "infeasible",
        "optimal",
    ]


def test_row_outputs_are_constants(folder):
    (q,) = lowered(folder, "query q { input x  where m(x) >= m(rows[2]) + 1  find }")
    assert q.constraints == (OutputConstraint(OutputTerm((out(),)), ">=", -3.0 + 1),)


def test_find_is_the_default_goal(folder):
    (q,) = lowered(folder, "query q { input x }")
    assert q.goal == Find()
