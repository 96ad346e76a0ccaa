"""What the language server says about a position: hover text (Markdown), completions and the
definition of a declared name. Positions here count lines and columns from 0, as the protocol
does; :class:`~veritas_dsl.diagnostics.Span` counts from 1."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from veritas_dsl.diagnostics import Span
from veritas_dsl.editor.analysis import Analysis
from veritas_dsl.editor.cache import CachedFiles
from veritas_dsl.editor.words import BUILTINS, KEYWORDS, OPERATOR_WORDS, TYPES
from veritas_dsl.ir.query import DomainKind, Feature
from veritas_dsl.names import DATA_FORMATS, ENGINES, MODEL_FORMATS

#: A name as the grammar reads it: plain, or anything but a backquote in backquotes.
_NAME = re.compile(r"`[^`\n]+`|[A-Za-z_][A-Za-z_0-9]*")


@dataclass(frozen=True)
class Word:
    """The name under a position: its text without backquotes, its columns, and whether a
    ``.`` comes before it (``x.age``: a feature)."""

    name: str
    start: int
    end: int
    after_dot: bool


@dataclass(frozen=True)
class Completion:
    label: str
    #: "keyword", "model", "family", "data", "const", "feature", "engine", "format", "function"
    kind: str
    detail: str = ""


def word_at(text: str, line: int, column: int) -> Word | None:
    """The name that ``column`` of ``line`` is in or just after, or None."""
    lines = text.split("\n")
    if not 0 <= line < len(lines):
        return None
    source = lines[line]
    for match in _NAME.finditer(source):
        if match.start() <= column <= match.end():
            before = source[: match.start()].rstrip()
            return Word(match.group().strip("`"), match.start(), match.end(), before.endswith("."))
    return None


def hover(analysis: Analysis, files: CachedFiles, line: int, column: int) -> str | None:
    """Markdown about the model, data set, feature or constant under the position."""
    word = word_at(analysis.text, line, column)
    if word is None:
        return None
    name = word.name
    if not word.after_dot:
        if name in analysis.models:
            return _model(name, analysis, files)
        if name in analysis.datasets:
            data = analysis.datasets[name]
            columns = ", ".join(data.columns[:12]) + (", ..." if len(data.columns) > 12 else "")
            return (
                f"**data** `{name}`: {len(data):,} rows, {len(data.columns)} columns\n\n"
                f"{columns}\n\nfrom `{data.path}`"
            )
        constants = analysis.checked.constants if analysis.checked is not None else {}
        if name in constants and name != "inf":
            return f"**const** `{name}` = {constants[name]:g}"
    feature = next((f for f in analysis.features if f.name == name), None)
    if feature is not None:
        return _feature(feature, analysis, files)
    return None


def _model(name: str, analysis: Analysis, files: CachedFiles) -> str:
    s = files.summary(analysis.models[name])
    return (
        f"**model** `{name}`: {s.source}, {s.task}\n\n"
        f"- trees: {s.n_trees} ({s.n_leaves:,} leaves)\n"
        f"- depth: {s.max_depth} at most, {s.mean_depth:.1f} on average\n"
        f"- outputs: {s.n_outputs}\n"
        f"- features: {s.n_features} ({len(s.features)} used in splits)\n"
        f"- leaf values: [{s.leaf_min:.6g}, {s.leaf_max:.6g}]"
    )


def _feature(feature: Feature, analysis: Analysis, files: CachedFiles) -> str:
    lines = [f"**feature** `{feature.name}`: {_domain(feature, analysis)}", ""]
    for model_name, model in analysis.models.items():
        use = next((u for u in files.summary(model).features if u.name == feature.name), None)
        if use is None:
            lines.append(f"- `{model_name}`: no split")
        else:
            lines.append(
                f"- `{model_name}`: {use.splits} splits, {use.thresholds} thresholds in "
                f"[{use.lowest:.6g}, {use.highest:.6g}]"
            )
    return "\n".join(lines)


def _domain(feature: Feature, analysis: Analysis) -> str:
    if analysis.checked is None:
        return "domain known once the spec checks"
    for group, members in analysis.checked.groups.items():
        if analysis.features.index(feature) in members:
            return f"in one-hot group `{group}`"
    if feature.kind == DomainKind.BOOL:
        return "bool"
    kind = "int" if feature.kind == DomainKind.INT else "real"
    if math.isinf(feature.lo) and math.isinf(feature.hi):
        return kind
    return f"{kind} in [{feature.lo:g}, {feature.hi:g}]"


def completions(analysis: Analysis, line: int, column: int) -> list[Completion]:
    """Feature names after ``x.``; elsewhere the declared names, features, engines, formats,
    functions and keywords."""
    word = word_at(analysis.text, line, column)
    source = analysis.text.split("\n")[line] if line < len(analysis.text.split("\n")) else ""
    after_dot = word.after_dot if word else source[:column].rstrip().endswith(".")
    features = [Completion(_quoted(f.name), "feature") for f in analysis.features]
    if after_dot:
        return features
    found = [Completion(name, kind) for name, (kind, _) in analysis.names.items()]
    found += features
    found += [Completion(name, "engine") for name in ENGINES]
    found += [Completion(name, "format") for name in (*MODEL_FORMATS, *DATA_FORMATS)]
    found += [Completion(name, "function") for name in BUILTINS]
    found += [Completion(word, "keyword") for word in (*KEYWORDS, *OPERATOR_WORDS, *TYPES)]
    seen: set[str] = set()
    return [c for c in found if not (c.label in seen or seen.add(c.label))]


def _quoted(name: str) -> str:
    plain = re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", name) and name not in KEYWORDS
    return name if plain else f"`{name}`"


def definition(analysis: Analysis, line: int, column: int) -> Span | None:
    """Where the name under the position is declared (its name in the declaration)."""
    word = word_at(analysis.text, line, column)
    if word is None or analysis.spec is None:
        return None
    declared = analysis.names.get(word.name)
    if declared is None or (word.after_dot and declared[0] != "feature"):
        return None
    return declared[1]
