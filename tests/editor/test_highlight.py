"""The `ver` Pygments lexer (by entry point) colours every shipped spec without an error token,
and every name of the names table as its class (the TextMate grammar: test_textmate.py)."""

from __future__ import annotations

import pytest

from .corpus import shipped_specs

pygments = pytest.importorskip("pygments", reason="the lexer needs Pygments (the highlight extra)")
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename  # noqa: E402
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, String  # noqa: E402

from veritas_dsl import names  # noqa: E402
from veritas_dsl.editor import highlight, words  # noqa: E402

SPECS = shipped_specs()


def test_the_lexer_is_found_by_its_entry_point():
    assert isinstance(get_lexer_by_name("ver"), highlight.VerLexer)
    assert isinstance(get_lexer_for_filename("credit.ver"), highlight.VerLexer)


@pytest.mark.parametrize("name, text", SPECS, ids=[name for name, _ in SPECS])
def test_every_shipped_spec_lexes_without_error_tokens(name, text):
    lexed = list(get_lexer_by_name("ver").get_tokens(text))
    errors = [value for kind, value in lexed if kind in Error]
    assert not errors
    assert "".join(value for _, value in lexed) == text + ("" if text.endswith("\n") else "\n")


def test_the_lexer_classes_the_words_of_the_grammar():
    text = 'model m = xgboost "m.json"  # c\nquery q { where x.`a b` >= 2.5 and class(m, x) == 1 solve with astar(timeout = 10s) }\n'
    kinds = {value: kind for kind, value in get_lexer_by_name("ver").get_tokens(text)}
    assert kinds["model"] in Keyword and kinds["where"] in Keyword
    assert kinds['"m.json"'] in String and kinds["# c"] in Comment
    assert kinds["`a b`"] in Name and kinds["2.5"] in Number and kinds["10s"] in Number
    assert kinds["and"] in Operator and kinds[">="] in Operator
    assert kinds["class"] in Name.Builtin and kinds["astar"] in Name.Constant
    assert any("$" in v for k, v in get_lexer_by_name("ver").get_tokens("q { $ }") if k in Error)


def test_every_format_engine_and_builtin_of_the_names_table_is_highlighted():
    # catboost and onnx were missing from the lexer, the completions and the VS Code grammar
    text = " ".join(names.CONSTANTS) + " " + " ".join(f"{b}()" for b in names.BUILTINS) + "\n"
    kinds = {value: kind for kind, value in get_lexer_by_name("ver").get_tokens(text)}
    assert all(kinds[w] in Name.Constant for w in names.CONSTANTS)
    assert all(kinds[b] in Name.Builtin for b in names.BUILTINS)
    assert {"catboost", "onnx"} <= set(words.CONSTANTS)



def test_every_unit_of_the_names_table_is_a_number():
    lexer = get_lexer_by_name("ver")
    for units, kind in ((names.DURATION_UNITS, Number.Float), (names.SIZE_UNITS, Number.Integer)):
        for unit in units:
            assert next(lexer.get_tokens(f"2{unit}")) == (kind, f"2{unit}")
