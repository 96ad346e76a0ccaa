"""Names with spaces, other characters or a keyword's spelling are written in backquotes."""

from __future__ import annotations

import math

import pytest

from veritas_dsl import SpecError, parse
from veritas_dsl.ir import DomainKind, Feature, Interval, OneHot

from conftest import build

NAMES = ("mean radius", "in", "a-b [cm]")


@pytest.fixture
def header(tmp_path):
    trees = [(0, 1.0, 1.0, (1, 2.0, 3.0, -2.0)), (2, 0.5, 0.0, 4.0)]
    build(trees, 3, names=NAMES).save(tmp_path / "m.json")
    (tmp_path / "d.csv").write_text("mean radius,in,a-b [cm]\n0.5,3,1\n")
    return f'model m = ensemble "{tmp_path / "m.json"}"\ndata d = csv "{tmp_path / "d.csv"}"\n'


def test_backquoted_names_reach_features_columns_and_ties(header):
    text = header + (
        "features { `mean radius` : real in [0, 30]  `in` : int in [0, 5] }\n"
        "query q { input x\n"
        "  where x.`mean radius` >= d[0].`mean radius` + 1 and x.`in` <= 4\n"
        "  where x == d[0] except `mean radius`, `in`\n"
        "  maximize m(x) }\n"
    )
    (lowered,) = parse(text).lowered()
    query = lowered.query
    assert [f.name for f in query.features] == list(NAMES)
    assert query.features[:2] == (
        Feature("mean radius", DomainKind.REAL, 0, 30),
        Feature("in", DomainKind.INT, 0, 5),
    )
    assert query.constraints[:2] == (
        Interval("x", 0, 1.5, math.inf),
        Interval("x", 1, -math.inf, 4),
    )
    assert query.constraints[2:] == (Interval("x", 2, 1.0, 1.0),)


def test_backquoted_one_hot_members(header):
    text = header + (
        "features { `in` : bool  `a-b [cm]` : bool  g : onehot(`in`, `a-b [cm]`) }\n"
        "query q { input x  where x.g == `in`  maximize m(x) }\n"
    )
    (lowered,) = parse(text).lowered()
    assert lowered.query.constraints == (OneHot("x", (1, 2)), Interval("x", 1, 1.0, 1.0))


def test_errors_point_at_the_backquoted_name_and_suggest_it_backquoted(header):
    with pytest.raises(SpecError) as caught:
        parse(header + "query q { input x  where x.`mean radus` > 1  where `mean radius` > 2 }")
    unknown, bare = caught.value.diagnostics
    assert (unknown.code, unknown.span.column, unknown.span.end_column) == ("V204", 28, 40)
    assert unknown.help == "did you mean `mean radius`?"
    assert (bare.code, bare.span.column) == ("V212", 52)
    assert bare.help == "e.g. x.`mean radius`"


@pytest.mark.parametrize("text", ["x.`mean\nradius` > 1", "x.`` > 1", "x.`mean radius > 1"])
def test_a_backquoted_name_is_one_line_and_not_empty(header, text):
    with pytest.raises(SpecError) as caught:
        parse(header + f"query q {{ input x  where {text} }}")
    assert caught.value.diagnostics[0].code.startswith("V1")
