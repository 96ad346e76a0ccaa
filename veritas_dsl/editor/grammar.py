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

from veritas_dsl.editor.words import BUILTINS, CONSTANTS, KEYWORDS, OPERATOR_WORDS, TYPES


def _any_of(words: Iterable[str]) -> str:
    """One whole word of ``words``; longest first, so no word stops inside a longer one."""
    return r"\b(" + "|".join(sorted(words, key=lambda word: (-len(word), word))) + r")\b"


def textmate() -> dict:
    """The grammar as the TextMate JSON schema has it: the lexer's token classes, in its order."""
    escape = {"name": "constant.character.escape.ver", "match": r"\\."}
    patterns = [
        ("comment.line.number-sign.ver", {"match": "#.*$"}),
        ("string.quoted.double.ver", {"begin": '"', "end": '"|$', "patterns": [escape]}),
        ("variable.other.quoted.ver", {"match": "`[^`]+`"}),
        ("constant.numeric.duration.ver", {"match": r"\b(\d+(\.\d*)?|\.\d+)(ms|s|min|h)\b"}),
        ("constant.numeric.size.ver", {"match": r"\b\d+(\.\d*)?(B|KB|MB|GB|KiB|MiB|GiB)\b"}),
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
