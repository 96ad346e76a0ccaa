"""`ver fmt`: the canonical layout of a `.ver` file, made from the grammar's own token stream.

The layout: four spaces of indentation per block; each declaration, statement and feature on a
line of its own; one space around operators and ``=``, after commas and ``:`` (none in a slice,
``test[0:10]``, one either side in a feature, ``age : int``), none inside brackets, before a call's
or an index's bracket, around ``.`` or after a unary minus; ``{`` ends its header's line, ``}`` has
a line of its own; the names of a `features` block are padded to one width. What the user
decides, and the layout keeps: comments (a comment after code stays after it, two spaces away; one
on a line of its own stays there), blank lines between declarations or statements (several count
as one), and line breaks inside a statement (the continued line is indented four spaces more).
Names, numbers and strings are kept as written, so the syntax tree of the output is the input's
(tests/editor/test_format.py checks it). In a Markdown file, the ```` ```ver ```` blocks are laid
out so, and nothing else is touched.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
from importlib import resources
from pathlib import Path

from lark import Lark, Token

from veritas_dsl.atomic import write_text
from veritas_dsl.diagnostics import Sources, SpecError
from veritas_dsl.lang.parser import parse_text
from veritas_dsl.lang.tables import cached_lark
from veritas_dsl.spec import decode, read_spec

INDENT = "    "
#: Keywords that start a top-level declaration, and a statement of a query or property.
ITEMS = {"MODEL", "MODELS", "DATA", "FEATURES", "CONST", "QUERY", "PROPERTY"}
STATEMENTS = {"INPUT", "WHERE", "MAXIMIZE", "MINIMIZE", "FIND", "FORALL", "EXPECT", "SOLVE"}
#: Tokens that end an operand: a `-` after one of them subtracts, elsewhere it negates.
_OPERAND_ENDS = {"NUMBER", "NAME", "RPAR", "RSQB"}

_lock = threading.Lock()
_comments: list[Token] = []


def format_text(text: str, file: str = "<string>") -> str:
    """``text`` in the canonical layout. Raises :class:`~veritas_dsl.diagnostics.SpecError` (the
    located syntax error ``ver run`` reports) when it does not parse; changes nothing then."""
    parse_text(text, file)
    return _Layout(tokens(text)).render()


#: A fenced block of `ver` code in Markdown: its text is group 1.
_FENCE = re.compile(r"^```ver[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def format_markdown(text: str, file: str = "<string>") -> str:
    """Markdown ``text`` with each ```` ```ver ```` block in the canonical layout, the rest as it
    was. A block that does not parse raises the located syntax error (its line in the file)."""
    parts, end = [], 0
    for match in _FENCE.finditer(text):
        offset = text.count("\n", 0, match.start(1))
        parse_text("\n" * offset + match.group(1), file)  # located where the block sits
        parts += [text[end : match.start(1)], format_text(match.group(1), file)]
        end = match.end(1)
    return "".join(parts) + text[end:]


def tokens(text: str) -> list[Token]:
    """The tokens of ``text`` as the parser reads them, comments included, in the order of the
    text (``text`` must parse)."""
    with _lock:
        _comments.clear()
        tree = _keeping_parser().parse(text)
        found = list(_comments)
        _comments.clear()
    # A loop over the subtrees, not ``scan_values``, which recurses: this tree keeps the
    # parentheses, so it is deeper than the one `parse_text` limits (there they cost no depth).
    found += [c for node in tree.iter_subtrees() for c in node.children if isinstance(c, Token)]
    return sorted(found, key=lambda t: t.start_pos)


@functools.cache
def _keeping_parser() -> Lark:
    """The grammar's parser, keeping every token in the tree (the punctuation too) and the
    ignored comments (through a lexer callback)."""
    grammar = resources.files("veritas_dsl.grammar").joinpath("ver.lark").read_text()
    return cached_lark(
        grammar,
        parser="lalr",
        keep_all_tokens=True,
        lexer_callbacks={"COMMENT": _comments.append},
    )


class _Layout:
    """One pass over the tokens, tracking the blocks (``{`` of `features`, a query or a property)
    and the brackets (``(``, ``[``, and the ``{`` of a per-feature scale) open at each token."""

    def __init__(self, found: list[Token]) -> None:
        self.tokens = found
        self.lines: list[str] = []
        self.line = ""  # the line being built, its indentation included
        self.blocks: list[str] = []  # "features" or "body"
        self.brackets: list[str] = []  # "(", "[" or "{"
        self.item = ""  # the keyword of the current top-level declaration
        self.previous: Token | None = None  # the last token written, comments aside
        self.last: Token | None = None  # the last token read, comments included
        self.opened = False  # the last line written opened a block, and nothing followed yet
        self.negates = False  # the last token written is a unary minus
        self.features: list[tuple[int, str]] = []  # the open `features` block's (line, name)
        code = [t for t in found if t.type != "COMMENT"]
        #: Each code token's successor, comments aside (by position in the text).
        self.successor = {a.start_pos: b for a, b in itertools.pairwise(code)}

    def render(self) -> str:
        following: Token | None = None  # the next token that is not a comment
        upcoming = []
        for token in reversed(self.tokens):
            upcoming.append(following)
            if token.type != "COMMENT":
                following = token
        for token, following in zip(self.tokens, reversed(upcoming), strict=True):
            if token.type == "COMMENT":
                self._comment(token, following)
            else:
                self._code(token)
            self.last = token
        self._end_line()
        return "\n".join(self.lines) + "\n" if self.lines else ""

    # -- lines ---------------------------------------------------------------------------------

    def _end_line(self) -> None:
        if self.line:
            self.lines.append(self.line.rstrip())
            self.line = ""

    def _start_line(self, indent: str, token: Token, blank_allowed: bool) -> None:
        """Begin a new line at ``indent``, after one blank line when the source had one before
        ``token`` and ``blank_allowed``."""
        self._end_line()
        gap = token.line - self.last.end_line if self.last is not None else 0
        if blank_allowed and gap > 1 and self.lines and not self.opened:
            self.lines.append("")
        self.line = indent
        self.opened = False

    def _block_indent(self) -> str:
        return INDENT * len(self.blocks)

    # -- tokens --------------------------------------------------------------------------------

    def _comment(self, token: Token, following: Token | None) -> None:
        text = token.value.rstrip()
        if self.last is not None and token.line == self.last.end_line:  # after code, on its line
            if self.line:
                self.line += "  " + text
                self._end_line()
            else:  # after a block's `{`, which ended the line
                self.lines[-1] += "  " + text
                self.opened = False
            return
        at_block_level = following is None or self._starts_line(following)
        indent = self._block_indent() if at_block_level else self._block_indent() + INDENT
        self._start_line(indent, token, blank_allowed=at_block_level)
        self.line += text
        self._end_line()

    def _starts_line(self, token: Token) -> bool:
        """Whether ``token`` begins a line of its own: a declaration, a statement, a feature, or
        the ``}`` closing a block."""
        if self.brackets:
            return False
        if token.type == "RBRACE":
            return bool(self.blocks)
        if not self.blocks:
            return token.type in ITEMS
        if self.blocks[-1] == "body":
            return token.type in STATEMENTS
        return token.type == "NAME" and self._followed_by_colon(token)

    def _followed_by_colon(self, token: Token) -> bool:
        after = self.successor.get(token.start_pos)
        return after is not None and after.type == "COLON"

    def _code(self, token: Token) -> None:
        if self._starts_line(token):
            if token.type == "RBRACE":
                self.blocks.pop()
                if self.opened and not self.line:  # an empty block: `{}`
                    self.line = self.lines.pop() + "}"
                    self.opened = False
                    self._after(token)
                    return
            elif not self.blocks:
                self.item = token.type
            self._start_line(self._block_indent(), token, blank_allowed=token.type != "RBRACE")
            if self.blocks and self.blocks[-1] == "features":
                self.features.append((len(self.lines), token.value))
            self.line += token.value
            if token.type == "RBRACE" and self.features:
                self._align_features()
        elif not self.line or (  # a comment ended the line, or the source breaks it here
            token.type != "LBRACE"
            and self.previous is not None
            and token.line > self.previous.end_line
        ):
            self._start_line(self._block_indent() + INDENT, token, blank_allowed=False)
            self.line += token.value
        else:
            self.line += (" " if self._space_before(token) else "") + token.value
        self._after(token)

    def _align_features(self) -> None:
        """Pad the names of a `features` block's lines to one width, so the `:` line up."""
        width = max(len(name) for _, name in self.features)
        indent = len(self._block_indent()) + len(INDENT)
        for index, name in self.features:
            line = self.lines[index]
            self.lines[index] = line[:indent] + name.ljust(width) + line[indent + len(name) :]
        self.features = []

    def _after(self, token: Token) -> None:
        """Open or close what ``token`` opens or closes, and remember it."""
        if token.type == "LBRACE" and not self.brackets:
            self.blocks.append("features" if self.item == "FEATURES" else "body")
            self._end_line()
            self.opened = True
        elif token.type in ("LPAR", "LSQB", "LBRACE"):
            self.brackets.append(token.value)
        elif token.type in ("RPAR", "RSQB", "RBRACE") and self.brackets:
            self.brackets.pop()
        self.negates = token.type == "MINUS" and (
            self.previous is None or self.previous.type not in _OPERAND_ENDS
        )
        self.previous = token

    def _space_before(self, token: Token) -> bool:
        previous = self.previous
        if previous is None:
            return False
        inner = self.brackets[-1] if self.brackets else ""
        if previous.type in ("LPAR", "LSQB", "DOT") or (previous.type == "LBRACE" and inner):
            return False
        if self.negates:
            return False
        if token.type == "DOT":
            return previous.type == "NUMBER"  # `0 .a`: `0.a` would read as the number `0.`
        if token.type in ("RPAR", "RSQB", "COMMA") or (token.type == "RBRACE" and inner):
            return False
        if token.type == "COLON":
            return not inner and bool(self.blocks) and self.blocks[-1] == "features"
        if previous.type == "COLON" and inner == "[":
            return False
        if token.type == "LPAR":
            return previous.type not in ("NAME", "ONEHOT")
        if token.type == "LSQB":
            return previous.type not in ("NAME", "RPAR", "RSQB")
        return True


def format_file(path: Path, write: bool) -> bool:
    """Whether the file at ``path`` (a `.ver` file, or Markdown: ``.md``) is not in the canonical
    layout (its bytes differ from the layout's UTF-8); with ``write``, rewrite it so (atomically).
    Raises :class:`SpecError` when it cannot be read or does not parse, with the file untouched."""
    data = read_spec(path)
    text = decode(data, str(path))
    layout = format_markdown if path.suffix.lower() == ".md" else format_text
    try:
        formatted = layout(text, str(path))
    except SpecError as error:
        error.sources = Sources({str(path): text})
        raise
    changed = formatted.encode() != data
    if changed and write:
        write_text(path, formatted)
    return changed
