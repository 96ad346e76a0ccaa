"""Text to AST: the Lark LALR parser of ``grammar/ver.lark``, and syntax errors as diagnostics."""

from __future__ import annotations

import functools
from importlib import resources

from lark import (
    Lark,
    Tree,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)

from veritas_dsl.diagnostics import Diagnostic, Span, SpecError
from veritas_dsl.lang import ast
from veritas_dsl.lang.build import Build
from veritas_dsl.lang.syntax_errors import LABELLED_ERRORS
from veritas_dsl.lang.tables import cached_lark

# User-facing names of the grammar's named terminals.
_TERMINAL_NAMES = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": 'a quoted string such as "models/m.json"',
    "DURATION": "a duration such as 10s",
    "SIZE": "a size such as 2GB",
    "SHARE": "a share such as 1%",
    "$END": "end of file",
}

#: The deepest syntax tree a spec may have, counted from the file down. A real spec stays under
#: 20 (a file, a query, a statement, a condition, a sum, a product, a call, ...); the limit keeps
#: the recursive checks far from Python's stack limit (docs/language.md says so).
MAX_DEPTH = 200


@functools.cache
def parser() -> Lark:
    """The parser of the grammar shipped with the package, its tables built once
    (:mod:`.tables`)."""
    grammar = resources.files("veritas_dsl.grammar").joinpath("ver.lark").read_text()
    return cached_lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def parse_text(text: str, file: str = "<string>") -> ast.SpecFile:
    """Parse `.ver` source; raise :class:`SpecError` with a located diagnostic on bad syntax."""
    try:
        tree = parser().parse(text)
    except UnexpectedInput as error:
        raise SpecError([_syntax_diagnostic(error, text, file)]) from None
    _check_depth(tree, file)
    return ast.SpecFile(file, Build(file).transform(tree))


def _check_depth(tree: Tree, file: str) -> None:
    """Refuse a tree deeper than :data:`MAX_DEPTH`, before any recursive walk can meet it.

    The parser is a loop and builds any depth; the checks after it recurse on nesting (``not``,
    unary ``-``, parentheses around a sum or a condition), a few frames a level. Chains (``a + b +
    ...``, ``p and q and ...``) are flat nodes and cost no depth. The walk here is a loop too.
    """
    stack = [(tree, 1, (1, 1))]
    while stack:
        node, depth, where = stack.pop()
        if not node.meta.empty:
            where = node.meta.line, node.meta.column
        if depth > MAX_DEPTH:
            line, column = where
            raise SpecError(
                [
                    Diagnostic(
                        "V103",
                        f"this is nested too deeply: more than {MAX_DEPTH} levels",
                        Span(file, line, column, line, column + 1),
                        f"level {MAX_DEPTH + 1} starts here",
                        help="write it flatter: drop double negations, or name parts with const",
                    )
                ]
            )
        # Reversed, so that the first offending node in the text is the one reported.
        stack += [(c, depth + 1, where) for c in reversed(node.children) if isinstance(c, Tree)]


def _syntax_diagnostic(error: UnexpectedInput, text: str, file: str) -> Diagnostic:
    line, column = max(error.line, 1), max(error.column, 1)
    width = 1
    found = "this"
    if isinstance(error, UnexpectedToken) and error.token.type != "$END":
        found = f"`{error.token}`"
        width = max(1, len(str(error.token)))
    elif isinstance(error, UnexpectedCharacters):
        found = f"`{text[error.pos_in_stream]}`"
        if found == '`"`':
            span = Span(file, line, column, line, column + 1)
            return Diagnostic(
                "V102",
                "unterminated string",
                span,
                "this string never ends",
                help='close it with " on the same line',
            )
    elif isinstance(error, UnexpectedEOF | UnexpectedToken):
        found = "end of file"
        line, column = _end_position(text)
    span = Span(file, line, column, line, column + width)
    label = _labels().get(_signature(error))
    expected = _expected(error)
    if label:
        return Diagnostic("V101", label, span, f"unexpected {found}", help=_help_for(expected))
    return Diagnostic(
        "V100",
        f"unexpected {found}",
        span,
        "not expected here",
        help=_help_for(expected),
    )


def _signature(error: UnexpectedInput) -> tuple | None:
    """Where the parser stood: its LALR state and the token it could not take.

    Lark's own ``match_examples`` also compares the depth of the parser's stack, which depends on
    how many declarations came before, so a labelled snippet would only match at the top of a file.
    """
    state = getattr(error, "state", None)
    if state is None:
        return None
    token = getattr(error, "token", None)
    return (state.position, token.type if token is not None else None)


@functools.cache
def _labels() -> dict[tuple, str]:
    labels = {}
    for label, snippets in LABELLED_ERRORS.items():
        for snippet in snippets:
            try:
                parser().parse(snippet)
            except UnexpectedInput as error:
                labels.setdefault(_signature(error), label)
            else:
                raise AssertionError(f"labelled bad snippet parses: {snippet!r}")
    return labels


def _expected(error: UnexpectedInput) -> list[str]:
    names = getattr(error, "accepts", None) or getattr(error, "expected", None) or set()
    described = set()
    for name in names:
        if name in _TERMINAL_NAMES:
            described.add(_TERMINAL_NAMES[name])
            continue
        try:
            pattern = parser().get_terminal(name).pattern
        except KeyError:
            continue
        if pattern.type == "str":
            described.add(f"`{pattern.value}`")
    return sorted(described)


def _help_for(expected: list[str]) -> str:
    if not expected:
        return ""
    if len(expected) > 8:
        return "expected " + ", ".join(expected[:8]) + ", ..."
    return "expected " + ", ".join(expected)


def _end_position(text: str) -> tuple[int, int]:
    lines = text.splitlines() or [""]
    return len(lines), len(lines[-1]) + 1
