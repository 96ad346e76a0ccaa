"""The parser's tables kept as JSON in the cache directory (:mod:`veritas_dsl.lang.tables`) parse
exactly as a parser built from the grammar; a damaged or foreign file is built again."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from lark import Lark, Tree, UnexpectedInput

from veritas_dsl.lang.tables import cached_lark

ROOT = Path(__file__).resolve().parents[2]
GRAMMAR = resources.files("veritas_dsl.grammar").joinpath("ver.lark").read_text()
OPTIONS = {"parser": "lalr", "propagate_positions": True, "maybe_placeholders": True}
SPECS = sorted(ROOT.glob("examples/**/*.ver")) + sorted(ROOT.glob("tests/**/*.ver"))
BROKEN = ["query q {\n    input x\n    maximize m(x\n}\n", "model = 3", "query q { input x find }}"]


def outcome(parser: Lark, text: str) -> object:
    """The tree with every node's position, or the syntax error's kind, place and expectation."""
    try:
        tree = parser.parse(text)
    except UnexpectedInput as error:
        return type(error).__name__, error.line, error.column, sorted(getattr(error, "expected", ()))
    return [
        (node.data, node.meta.empty or (node.meta.line, node.meta.column, node.meta.end_pos))
        for node in tree.iter_subtrees()
    ], tree


@pytest.fixture(scope="module")
def built() -> Lark:
    return Lark(GRAMMAR, **OPTIONS)


def test_kept_tables_parse_as_the_grammar_does(tmp_path, built):
    first = cached_lark(GRAMMAR, str(tmp_path), **OPTIONS)  # built, and its tables kept
    (kept,) = tmp_path.glob("lark-*.json")
    json.loads(kept.read_text())  # JSON: nothing in it is code
    second = cached_lark(GRAMMAR, str(tmp_path), **OPTIONS)  # read from the file
    assert len(SPECS) > 20
    for text in [path.read_text() for path in SPECS] + BROKEN:
        expected = outcome(built, text)
        assert outcome(first, text) == expected
        assert outcome(second, text) == expected


@pytest.mark.parametrize("content", ["", '{"truncated": [', '{"a": 1}', "[[], {}]", "\0\1\2"])
def test_a_damaged_file_is_built_again_and_rewritten(tmp_path, built, content):
    cached_lark(GRAMMAR, str(tmp_path), **OPTIONS)
    (kept,) = tmp_path.glob("lark-*.json")
    kept.write_text(content)
    text = (ROOT / "examples" / "fairness.ver").read_text()
    parser = cached_lark(GRAMMAR, str(tmp_path), **OPTIONS)  # built again, and rewritten
    assert outcome(parser, text) == outcome(built, text)
    json.loads(kept.read_text())
    assert outcome(cached_lark(GRAMMAR, str(tmp_path), **OPTIONS), text) == outcome(built, text)
    assert [p.name for p in tmp_path.iterdir()] == [kept.name]  # no temporary file left


def test_another_grammar_or_option_has_its_own_file(tmp_path):
    cached_lark(GRAMMAR, str(tmp_path), **OPTIONS)
    cached_lark(GRAMMAR, str(tmp_path), **{**OPTIONS, "propagate_positions": False})
    cached_lark(GRAMMAR + "\n// another grammar\n", str(tmp_path), **OPTIONS)
    assert len(list(tmp_path.glob("lark-*.json"))) == 3


def test_an_unwritable_folder_only_costs_the_build(tmp_path, built):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    parser = cached_lark(GRAMMAR, str(blocked / "cache"), **OPTIONS)
    text = (ROOT / "examples" / "closest.ver").read_text()
    assert outcome(parser, text) == outcome(built, text)


def test_lexer_callbacks_are_honoured_with_kept_tables(tmp_path):
    text = "# a comment\nconst a = 1  # another\n"
    for _ in range(2):  # built, then read from the file
        seen = []
        parser = cached_lark(
            GRAMMAR, str(tmp_path), parser="lalr", lexer_callbacks={"COMMENT": seen.append}
        )
        assert isinstance(parser.parse(text), Tree)
        assert [str(token).strip() for token in seen] == ["# a comment", "# another"]
