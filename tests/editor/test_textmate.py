"""The TextMate grammar of editors/vscode is generated from the lexer's words
(``python -m veritas_dsl.editor.grammar``), knows exactly those words, and the lexer's keywords are
the grammar's (grammar/ver.lark)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from veritas_dsl import names
from veritas_dsl.editor import grammar, words
from veritas_dsl.lang.parser import parser

from .corpus import ROOT

TEXTMATE = ROOT / "editors" / "vscode" / "syntaxes" / "ver.tmLanguage.json"


def test_the_shipped_grammar_is_the_generated_one():
    # catboost and onnx once sat in the table but not in this file; now a stale file fails here
    shipped = TEXTMATE.read_text()
    assert shipped == grammar.text(), (
        "regenerate: python -m veritas_dsl.editor.grammar > editors/vscode/syntaxes/"
        "ver.tmLanguage.json"
    )
    command = [sys.executable, "-m", "veritas_dsl.editor.grammar"]
    assert subprocess.run(command, capture_output=True, text=True, check=True).stdout == shipped


def test_the_textmate_grammar_knows_the_lexers_words():
    textmate = json.loads(TEXTMATE.read_text())
    patterns = {p["name"]: p for p in textmate["patterns"]}
    listed_words = {
        "keyword.control.ver": words.KEYWORDS,
        "keyword.operator.word.ver": words.OPERATOR_WORDS,
        "storage.type.ver": words.TYPES,
        "support.function.builtin.ver": [w + "(" for w in words.BUILTINS],
        "support.constant.ver": words.CONSTANTS,
    }
    for scope, listed in listed_words.items():
        pattern = re.compile(patterns[scope]["match"])
        assert all(pattern.match(w) for w in listed), scope
        assert not pattern.match("modelled")
        # and no word the lexer does not know: the alternation is exactly the list
        (alternation,) = re.findall(r"\\b\(([^()]*)\)\\b", patterns[scope]["match"])
        assert set(alternation.split("|")) == {w.rstrip("(") for w in listed}, scope
    assert {"catboost", "onnx"} <= set(re.findall(r"\w+", patterns["support.constant.ver"]["match"]))
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    assert package["contributes"]["grammars"][0]["scopeName"] == textmate["scopeName"]


def test_the_editors_keywords_are_the_grammars_words():
    literal = {
        terminal.pattern.value
        for terminal in parser().terminals
        if terminal.pattern.type == "str" and terminal.pattern.value.isidentifier()
    }
    known = words.KEYWORDS + words.OPERATOR_WORDS + words.TYPES
    assert sorted(known) == sorted(literal)
    # the grammar reads formats, engines and built-ins as plain names: none is a keyword
    assert not literal & set(names.BUILTINS + names.CONSTANTS)


def test_every_unit_of_the_names_table_is_a_number():
    patterns = {p["name"]: p for p in grammar.textmate()["patterns"]}
    for units, scope in (
        (names.DURATION_UNITS, "constant.numeric.duration.ver"),
        (names.SIZE_UNITS, "constant.numeric.size.ver"),
    ):
        number = re.compile(patterns[scope]["match"])
        assert all(number.fullmatch(f"2{unit}") for unit in units), scope
        assert not number.fullmatch("2d")


def test_the_vscode_package_promises_only_what_it_ships():
    """The package is a grammar and language settings, with no language client (no `main`, no
    vscode-languageclient): its description must not promise what `ver lsp` gives through a
    client (docs/editors.md says how to connect one)."""
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    assert "main" not in package and not package.get("dependencies")
    description = package["description"].lower()
    assert not {"diagnostics", "hover", "completion"} & set(re.findall(r"\w+", description))
    assert "no language client" in description
