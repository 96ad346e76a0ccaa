"""A Pygments lexer for `.ver`, registered as ``ver`` by entry point (``pygmentize -l ver``, Sphinx
and MkDocs code blocks, ``rich``). Needs Pygments (``pip install "veritas-dsl[highlight]"``).

Its words are the grammar's, listed in ``words.py``: tests/editor/test_highlight.py lexes every
spec of the docs and the examples and finds no error token. ``grammar.py`` writes the TextMate
grammar of ``editors/vscode`` with the same classes, from the same words.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
)

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


class VerLexer(RegexLexer):
    """The `.ver` language of veritas-dsl."""

    name = "Ver"
    aliases = ("ver", "veritas")
    filenames = ("*.ver",)
    mimetypes = ("text/x-ver",)

    tokens = {  # noqa: RUF012 (Pygments reads this class attribute)
        "root": [
            (r"\s+", Text.Whitespace),
            (r"#.*?$", Comment.Single),
            (r'"([^"\\\n]|\\.)*"', String.Double),
            (r"`[^`\n]+`", Name.Variable),
            (words(DURATION_UNITS, prefix=r"(\d+(\.\d*)?|\.\d+)", suffix=r"\b"), Number.Float),
            (words(SIZE_UNITS, prefix=r"\d+(\.\d*)?", suffix=r"\b"), Number.Integer),
            (words(SHARE_UNITS, prefix=r"(\d+(\.\d*)?|\.\d+)"), Number.Float),
            (r"(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", Number),
            (words(KEYWORDS, suffix=r"\b"), Keyword),
            (words(OPERATOR_WORDS, suffix=r"\b"), Operator.Word),
            (words(TYPES, suffix=r"\b"), Keyword.Type),
            (words(BUILTINS, suffix=r"\b(?=\s*\()"), Name.Builtin),
            (words(CONSTANTS, suffix=r"\b"), Name.Constant),
            (r"[A-Za-z_][A-Za-z_0-9]*", Name),
            (r"=>|<=|>=|==|!=|[<>=+\-*/]", Operator),
            (r"[{}()\[\],:.]", Punctuation),
        ]
    }
