"""The TextMate grammar of `.ver` (``editors/vscode/syntaxes/ver.tmLanguage.json``), generated
from the words the Pygments lexer and completion know (:mod:`veritas_dsl.editor.words`, whose
formats, engines and built-ins come from :mod:`veritas_dsl.names`), so that the editors cannot
drift apart. Regenerate the shipped file after changing a word::

    python -m veritas_dsl.editor.grammar > editors/vscode/syntaxes/ver.tmLanguage.json

tests/editor/test_highlight.py checks that the shipped file is what this writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from veritas_dsl.editor.words import (
    BUILTINS,
    CONSTANTS,
    DURATION_UNITS,
    KEYWORDS,
    OPERATOR_WORDS,
    SHARE_UNITS,
    SIZE_UNITS,
    TYPES,
)


def _one_of(words: Iterable[str]) -> str:
    """One of ``words``, longest first, so that none stops inside a longer one."""
    return "(" + "|".join(sorted(words, key=lambda word: (-len(word), word))) + ")"


def _any_of(words: Iterable[str]) -> str:
    """One whole word of ``words``."""
    return r"\b" + _one_of(words) + r"\b"


def _number(units: Iterable[str], whole: bool = False) -> str:
    """A number with one of ``units`` after it (sizes start with a digit: ``2GB``, not ``.5GB``),
    as the grammar's DURATION and SIZE have it."""
    number = r"\d+(\.\d*)?" if whole else r"(\d+(\.\d*)?|\.\d+)"
    return r"\b" + number + _one_of(units) + r"\b"


def textmate() -> dict:
    """The grammar as the TextMate JSON schema has it: the lexer's token classes, in its order."""
    escape = {"name": "constant.character.escape.ver", "match": r"\\."}
    patterns = [
        ("comment.line.number-sign.ver", {"match": "#.*$"}),
        ("string.quoted.double.ver", {"begin": '"', "end": '"|$', "patterns": [escape]}),
        ("variable.other.quoted.ver", {"match": "`[^`]+`"}),
        ("constant.numeric.duration.ver", {"match": _number(DURATION_UNITS)}),
        ("constant.numeric.size.ver", {"match": _number(SIZE_UNITS, whole=True)}),
        ("constant.numeric.share.ver", {"match": r"(\b\d+(\.\d*)?|\.\d+)" + _one_of(SHARE_UNITS)}),
        ("constant.numeric.ver", {"match": r"(\b\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?"}),
        ("keyword.control.ver", {"match": _any_of(KEYWORDS)}),
        ("keyword.operator.word.ver", {"match": _any_of(OPERATOR_WORDS)}),
        ("storage.type.ver", {"match": _any_of(TYPES)}),
        # a built-in only where it is called, as the lexer has it: `min` may name a feature
        ("support.function.builtin.ver", {"match": _any_of(BUILTINS) + r"(?=\s*\()"}),
        ("support.constant.ver", {"match": _any_of(CONSTANTS)}),
        ("keyword.operator.ver", {"match": r"=>|<=|>=|==|!=|[<>=+\-*/]"}),
        ("punctuation.ver", {"match": r"[{}()\[\],:.]"}),
    ]
    return {
        "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
        "name": "Ver",
        "scopeName": "source.ver",
        "fileTypes": ["ver"],
        "patterns": [{"name": name, **rest} for name, rest in patterns],
    }


def text() -> str:
    """The shipped file's text."""
    return json.dumps(textmate(), indent=2) + "\n"


if __name__ == "__main__":
    print(text(), end="")
