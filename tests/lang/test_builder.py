"""The spec builder (veritas_dsl.builder) writes what was built: random arithmetic evaluates in the
checker to what Python makes of the same tree, random conditions lower to constraints that hold on
exactly the points where the tree holds, the text is a fixed point of `ver fmt` with the same IR
as before it, and an example built in Python lowers as the example file does."""

from __future__ import annotations

import operator
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import veritas_dsl
from veritas_dsl import Ensemble, SpecBuilder, SpecError
from veritas_dsl.builder import boolean, class_, each, integer, linf, onehot, real
from veritas_dsl.builder.expressions import number
from veritas_dsl.editor.format import format_text
from veritas_dsl.editor.words import KEYWORDS, OPERATOR_WORDS, TYPES
from veritas_dsl.ir.evaluate import holds, model_outputs

ROOT = Path(__file__).resolve().parents[2]
NUMBERS = st.sampled_from([0, 1, 2, 3, 7, 0.5, 2.25, 1e-3, 1e5, -1, -2.5, -0.0])
ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def arithmetic_trees():
    """(builder expression, its value in Python float64 arithmetic, in the same order)."""
    leaves = NUMBERS.map(lambda v: (number(v), float(v)))

    def extend(children):
        binary = st.tuples(st.sampled_from(sorted(ARITHMETIC)), children, children).map(
            lambda t: (ARITHMETIC[t[0]](t[1][0], t[2][0]), _apply(t[0], t[1][1], t[2][1]))
        )
        negated = children.map(lambda c: (-c[0], None if c[1] is None else -c[1]))
        return binary | negated

    return st.recursive(leaves, extend, max_leaves=8)


def _apply(op: str, a: float | None, b: float | None) -> float | None:
    if a is None or b is None or (op == "/" and b == 0):
        return None
    return ARITHMETIC[op](a, b)


@settings(max_examples=150, deadline=None)
@given(arithmetic_trees())
def test_built_arithmetic_means_the_python_tree(tree):
    built, value = tree
    assume(value is not None and abs(value) < 1e300 and (value == 0 or abs(value) > 1e-300))
    s = SpecBuilder()
    s.model("m", "ensemble")
    s.const("k", built)
    try:
        spec = veritas_dsl.parse(str(s), models={"m": _model()})
    except SpecError as error:  # a number that overflows or underflows on the way
        assert {d.code for d in error.diagnostics} <= {"V322", "V329"}, str(s)
        assume(False)
    assert spec.checked.constants["k"] == value, str(s)


def _model() -> Ensemble:
    return Ensemble(
        feature=[0, -1, -1],
        threshold=[0.5, 0, 0],
        left=[1, -1, -1],
        right=[2, -1, -1],
        value=[[0.0], [-1.0], [1.0]],
        tree_offsets=[0, 3],
        base_score=[0.0],
        feature_names=("a", "b"),
        task="binary",
    )


COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
           "==": operator.eq, "!=": operator.ne}  # fmt: skip


def condition_trees(x):
    """(builder condition, predicate on (a, b) in exact arithmetic)."""
    atom = st.tuples(
        # one feature each: a strict comparison of several is refused (V328), and not flips <=
        st.sampled_from([(1, 0), (0, 1), (2, 0), (0, -1), (-0.5, 0)]),
        st.sampled_from(sorted(COMPARE)),
        st.sampled_from([0, 1, -1, 0.5, 3]),
    ).map(lambda t: _atom(x, *t))

    def extend(children):
        both = st.tuples(children, children)
        return (
            both.map(lambda t: (t[0][0] & t[1][0], lambda p, t=t: t[0][1](p) and t[1][1](p)))
            | both.map(lambda t: (t[0][0] | t[1][0], lambda p, t=t: t[0][1](p) or t[1][1](p)))
            | children.map(lambda c: (~c[0], lambda p, c=c: not c[1](p)))
        )

    return st.recursive(atom, extend, max_leaves=5)


def _atom(x, coefs, op, bound):
    ca, cb = coefs
    left = ca * x.a if cb == 0 else cb * x.b if ca == 0 else ca * x.a + cb * x.b
    cond = COMPARE[op](left, bound)

    def predicate(p, ca=ca, cb=cb, op=op, bound=bound):
        total = Fraction(ca) * Fraction(float(p[0])) + Fraction(cb) * Fraction(float(p[1]))
        return COMPARE[op](total, Fraction(bound))

    return cond, predicate


POINTS = np.array(
    [[a, b] for a in (-1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 3.0) for b in (-1.0, 0.0, 0.5, 1.0, 2.0)],
    dtype=np.float32,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_built_conditions_lower_to_what_the_tree_means(data):
    s = SpecBuilder()
    s.model("m", "ensemble")
    q = s.query("q")
    x = q.input("x")
    cond, predicate = data.draw(condition_trees(x))
    q.where(cond)
    q.find()
    model = _model()
    try:
        (formatted,) = veritas_dsl.parse(str(s), models={"m": model}).lowered()
    except SpecError as error:
        raise AssertionError(str(s)) from error
    (raw,) = veritas_dsl.parse(s.text(), models={"m": model}).lowered()
    assert formatted.query.constraints == raw.query.constraints
    assert str(s) == format_text(str(s))
    query = formatted.query
    for point in POINTS:
        inputs = {"x": point}
        margins = model_outputs(query, inputs)
        got = all(holds(c, inputs, margins) for c in query.constraints)
        assert got == predicate(point), (str(cond), point)


def test_an_example_built_in_python_lowers_as_the_file():
    s = SpecBuilder()
    clf = s.model("clf", "xgboost", "models/credit.json")
    test = s.data("test", "csv", "data/credit_test.csv")
    s.features(
        age=integer(18, 90),
        sex=boolean(),
        housing=onehot("housing_own", "housing_rent", "housing_free"),
    )
    eps = s.const("eps", 100)
    p = s.property("stable", rows=("r", test[0:20]))
    x = p.input("x")
    r = p.row
    p.forall(
        class_(clf, x) == class_(clf, r),
        given=(x == r).except_("income", "debt") & (linf(x, r) <= eps),
    )
    path = str(ROOT / "examples" / "robustness.ver")
    built = list(veritas_dsl.parse(str(s), path).lowered())
    shipped = list(veritas_dsl.load(path).lowered())
    assert len(built) == len(shipped) == 20
    for a, b in zip(built, shipped, strict=True):
        assert (a.query.constraints, a.query.goal) == (b.query.constraints, b.query.goal)
    assert "forall x: x == r except income, debt and linf(x, r) <= eps" in str(s)


def test_a_mistake_in_a_built_spec_is_the_checkers_located_error():
    s = SpecBuilder()
    s.model("m", "ensemble")
    q = s.query("q")
    x = q.input("x")
    q.where(x.c >= 1).find()
    with pytest.raises(SpecError) as error:
        veritas_dsl.parse(str(s), models={"m": _model()})
    (diagnostic,) = error.value.diagnostics
    assert diagnostic.code == "V204" and diagnostic.span.line == 5


def test_python_truth_of_a_built_condition_is_refused():
    x = SpecBuilder().query("q").input("x")
    with pytest.raises(TypeError, match="combine conditions with &"):
        bool(0 <= x.a <= 1)
    assert str(-(x.a - 1) * 2 / -number(3)) == "-(x.a - 1) * 2 / -3"
    assert str(x["mean radius"] + 1) == "x.`mean radius` + 1"


@pytest.mark.parametrize(
    "value", [np.float64(0.7), np.float32(0.1), np.int64(3), np.int32(-2), -np.float64(0.0)]
)
def test_a_numpy_number_is_written_as_its_value(value):
    # repr(np.float64(0.7)) is "np.float64(0.7)" under numpy 2: text the grammar cannot read
    s = SpecBuilder()
    s.model("m", "ensemble")
    s.const("k", value)
    spec = veritas_dsl.parse(str(s), models={"m": _model()})
    assert spec.checked.constants["k"] == float(value), str(s)


def test_an_integer_too_large_for_a_float_is_the_checkers_error_not_an_overflow():
    s = SpecBuilder()
    s.model("m", "ensemble")
    s.const("k", 10**400)
    with pytest.raises(SpecError):
        veritas_dsl.parse(str(s), models={"m": _model()})



@pytest.mark.parametrize("word", [*KEYWORDS, *OPERATOR_WORDS, *TYPES])
def test_a_keyword_as_a_name_is_written_so_that_it_reads_back_as_that_name(word, tmp_path):
    # `not.age`, `not[0]` and `x.age <= not` do not parse: there `not` is the operator
    (tmp_path / "rows.csv").write_text(f"{word},b\n0,0\n")
    for role in ("input", "data", "const", "feature", "query"):
        s = SpecBuilder()
        m = s.model("m", "ensemble")
        rows = s.data(word if role == "data" else "rows", "csv", "rows.csv")
        s.features(**{word: real(-1, 1), "b": real(-1, 1)})
        k = s.const(word if role == "const" else "k", 0.5)
        q = s.query(word if role == "query" else "q")
        x = q.input(word if role == "input" else "x")
        q.where((x[word] <= k) & (linf(x, rows[0]) <= 1))
        q.maximize(m(x))
        spec = veritas_dsl.parse(str(s), tmp_path / "s.ver", models={"m": _named(word)})
        assert len(list(spec.lowered())) == 1, str(s)


def _named(first: str) -> Ensemble:
    m = _model()
    return Ensemble(
        feature=m.feature, threshold=m.threshold, left=m.left, right=m.right, value=m.value,
        tree_offsets=m.tree_offsets, base_score=m.base_score, feature_names=(first, "b"),
        task="binary",
    )  # fmt: skip


def test_text_where_a_built_value_belongs_is_refused_not_written_into_the_spec():
    # each of these wrote its string verbatim: a second query appeared in the spec
    evil = "1 > 0\n}\nquery injected {\n    input y\n    maximize m(y)"
    s = SpecBuilder()
    m = s.model("m", "ensemble")
    test = s.data("test", "csv", "rows.csv")
    with pytest.raises(TypeError):
        s.features(a="real\n}\nquery injected {\n input y\n maximize m(y)\n}\nfeatures { b : real")
    with pytest.raises(TypeError):
        s.query("q", rows=("r", "test { input y\n }\nquery injected for r in test"))
    q = s.query("q")
    x = q.input("x")
    with pytest.raises(TypeError):
        q.where(evil)
    with pytest.raises(TypeError):
        q.forall(evil)
    with pytest.raises(ValueError):
        each("min(m(x)) }\nquery injected { input y\n maximize max", m(x), m, "V")
    q.maximize(m(x))
    s.query("batch", rows=("r", test[0:2]))
    s.query("whole", rows=("r", test))
    assert "injected" not in s.text()
