"""Diagnostics: what went wrong in a spec, where, and how to fix it, rendered one way everywhere.

A diagnostic points at the smallest offending span of the user's own text::

    error[V104]: unknown feature `incme`
      --> credit.ver:14:13
       |
    14 |     where x.incme >= 60
       |             ^^^^^ not a feature of the models
       = help: did you mean `income`?
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from veritas_dsl.errors import UserError


@dataclass(frozen=True)
class Span:
    """A region of a source file; lines and columns count from 1, ``end_column`` is exclusive."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class Severity(enum.Enum):
    """How bad a diagnostic is."""

    ERROR = "error"
    """The spec cannot run."""
    WARNING = "warning"
    """The spec runs, but says something its author most likely did not mean."""


@dataclass(frozen=True)
class Diagnostic:
    """One problem. ``code`` is stable (errors: V1xx syntax, V2xx names, V3xx types, V4xx
    data/models, V5xx engines; warnings: V6xx); ``label`` annotates the caret; ``help`` alone
    suggests a fix."""

    code: str
    message: str
    span: Span | None = None
    label: str = ""
    notes: tuple[str, ...] = ()
    help: str = ""
    severity: Severity = Severity.ERROR


class SpecError(UserError):
    """One or more diagnostics that stop a spec from running. ``sources`` (set by whoever holds
    the spec's text) lets :meth:`render` show the offending lines."""

    sources: Sources | None = None

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))

    def render(self) -> str:
        count = len(self.diagnostics)
        shown = [render(d, self.sources) + "\n" for d in self.diagnostics]
        return "\n".join([*shown, f"{count} error{'s' if count != 1 else ''}; nothing was run"])

    def __reduce__(self):
        # Crosses process boundaries (parallel batches) with its diagnostics intact.
        return (SpecError, (self.diagnostics,))


#: The suffix of spec files.
SPEC_SUFFIX = ".ver"


@dataclass
class Sources:
    """The text of every file a diagnostic may point into, by the name used in spans.

    Spec files not given are read when a line of theirs is shown. Lines of other files (a data
    set, a list of row ids) are never shown: such a file may be anyone's (``/etc/passwd``), and
    a diagnostic about it quotes what matters in its message, short and escaped
    (:func:`veritas_dsl.inputs.excerpt`).
    """

    texts: dict[str, str] = field(default_factory=dict)

    def line(self, file: str, number: int) -> str | None:
        text = self.texts.get(file)
        if text is None:
            if not file.endswith(SPEC_SUFFIX):
                return None
            try:
                text = Path(file).read_text(encoding="utf-8-sig", errors="replace")
            except OSError:
                return None
            self.texts[file] = text
        lines = text.splitlines()
        return lines[number - 1] if 0 < number <= len(lines) else None


def render(diagnostic: Diagnostic, sources: Sources | None = None) -> str:
    """The diagnostic as text: header, location, the source line with a caret, notes, help."""
    sources = sources or Sources()
    lines = [f"{diagnostic.severity.value}[{diagnostic.code}]: {diagnostic.message}"]
    span = diagnostic.span
    if span is not None:
        gutter = " " * len(str(span.line))
        lines.append(f"{gutter}--> {span}")
        source = sources.line(span.file, span.line)
        if source is not None:
            source, column, end = _shown(source, span)
            caret = " " * (column - 1) + "^" * max(1, end - column)
            label = f" {diagnostic.label}" if diagnostic.label else ""
            lines += [f"{gutter} |", f"{span.line} | {source}", f"{gutter} | {caret}{label}"]
        prefix = f"{gutter} = "
    else:
        prefix = "  = "
    lines += [f"{prefix}note: {note}" for note in diagnostic.notes]
    if diagnostic.help:
        lines.append(f"{prefix}help: {diagnostic.help}")
    return "\n".join(lines)


#: The most characters of a source line a diagnostic shows; a longer line is cut around the span.
LINE_CHARS = 120
_CONTEXT_CHARS = 40


def _shown(source: str, span: Span) -> tuple[str, int, int]:
    """The part of ``source`` a diagnostic shows and the span's columns in it (from 1, end
    exclusive): tabs one column, control characters one replacement character each (a NUL or an
    escape sequence must not reach a terminal or a CI log), at most :data:`LINE_CHARS` around the
    span with ``…`` where the line was cut."""
    source = "".join(c if c.isprintable() else "\ufffd" for c in source.expandtabs(1))
    column = min(span.column, len(source) + 1)
    end = span.end_column if span.end_line == span.line else len(source) + 1
    end = max(column + 1, min(end, len(source) + 1))
    if len(source) <= LINE_CHARS:
        return source, column, end
    first = max(0, column - 1 - _CONTEXT_CHARS)
    last = min(len(source), first + LINE_CHARS)
    head, tail = ("…" if first > 0 else ""), ("…" if last < len(source) else "")
    shown = head + source[first:last] + tail
    column = column - first + len(head)
    return shown, column, min(end - first + len(head), len(shown) - len(tail) + 1)


def suggest(name: str, candidates: Iterable[str]) -> str:
    """A ``help`` text naming the candidate closest to ``name``, or empty when none is close."""
    # Elm's rule of thumb: one edit for short names, two for longer ones, as a similarity ratio.
    cutoff = 0.6 if len(name) > 4 else 0.5
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=cutoff)
    return f"did you mean `{close[0]}`?" if close else ""
