"""``x >= r`` (and ``<=``, ``<``, ``>``, with ``except``): a comparison on every feature, typed and
lowered exactly as the same comparisons written feature by feature."""

from __future__ import annotations

import pytest

from veritas_dsl import parse
from veritas_dsl.diagnostics import SpecError
from veritas_dsl.solvers.oracle.engine import OracleEngine

from conftest import build

#: Approved (output 1) at age >= 40 or income >= 30000.
TREE = (0, 40.0, (1, 30000.0, -1.0, 1.0), 1.0)


@pytest.fixture
def folder(tmp_path):
    build([TREE], 3, names=("age", "income", "debt")).save(tmp_path / "m.json")
    (tmp_path / "test.csv").write_text("age,income,debt\n30,20000,500\n35,25000,0\n")
    return tmp_path


def lowered(folder, where: str, inputs: str = "x"):
    text = (
        'model m = ensemble "m.json"\ndata test = csv "test.csv"\n'
        f"query q for r in test[0:2] {{\n    input {inputs}\n    where {where}\n"
        "    maximize m(x)\n}\n"
    )
    spec = parse(text, str(folder / "spec.ver"))
    return [item.query for item in spec.lowered()]


@pytest.mark.parametrize(
    "short, long",
    [
        ("x >= r", "x.age >= r.age and x.income >= r.income and x.debt >= r.debt"),
        ("r <= x", "x.age >= r.age and x.income >= r.income and x.debt >= r.debt"),
        ("x < r except income", "x.age < r.age and x.debt < r.debt"),
        ("not (x >= r)", "x.age < r.age or x.income < r.income or x.debt < r.debt"),
        ("x >= test[1] except age", "x.income >= 25000 and x.debt >= 0"),
    ],
)
def test_a_comparison_of_instances_is_the_comparison_on_each_feature(folder, short, long):
    assert lowered(folder, short) == lowered(folder, long)


def test_two_instances_compare_feature_by_feature(folder):
    short = lowered(folder, "x >= x2 except debt", "x, x2")
    assert short == lowered(folder, "x.age >= x2.age and x.income >= x2.income", "x, x2")


def test_add_only_dominance_is_answered_by_the_engines(folder):
    # From row 0 (age 30, income 20000, debt 500), features may only grow: the best is 1,
    # reached by growing age or income.
    (query, _) = lowered(folder, "x >= r")
    result = OracleEngine().solve(query)
    assert result.lower == result.upper == 1.0
    point = result.witnesses[0].inputs["x"]
    assert point[0] >= 30 and point[1] >= 20000 and point[2] >= 500


@pytest.mark.parametrize(
    "where, code",
    [
        ("x != r", "V316"),
        ("x >= x", "V316"),
        ("x >= r except age, income, debt", "V316"),
        ("x.age >= 3 except income", "V312"),
        ("x >= r >= x except age", "V312"),
    ],
)
def test_comparisons_of_instances_that_mean_nothing_are_located_errors(folder, where, code):
    with pytest.raises(SpecError) as caught:
        lowered(folder, where)
    assert caught.value.diagnostics[0].code == code
    assert caught.value.diagnostics[0].span.line == 5
