"""What the language server knows about one version of a document: the diagnostics ``ver run``
would report before running anything, and the declarations hover, completion and go-to-definition
read. Nothing here runs an engine: the checks are the parser's, the checker's, the static
warnings (``Spec.warnings``) and the engine choice (``run.preflight``). A document over
:data:`MAX_LIVE_CHARS` is not checked at all: one diagnostic says so."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace
from pathlib import Path

from veritas_dsl.data import Dataset
from veritas_dsl.diagnostics import Diagnostic, Severity, Span, SpecError
from veritas_dsl.editor.cache import CachedFiles
from veritas_dsl.editor.format import tokens
from veritas_dsl.ir.query import Feature
from veritas_dsl.lang import ast
from veritas_dsl.lang.parser import parse_text
from veritas_dsl.lang.typed import CheckedSpec
from veritas_dsl.model.ensemble import Ensemble
from veritas_dsl.model.load import pickle_option
from veritas_dsl.run import RunOptions, preflight
from veritas_dsl.spec import Spec

#: The longest document checked as it is typed. A check costs about 0.75 ms of CPU per line of
#: one-line queries (2,000 of them, 118 KB: 1.5 s; docs/editors.md has the measurements), so this
#: keeps one under about 3 s; the specs of examples/ stay under 2 KB. Longer ones take `ver check`.
MAX_LIVE_CHARS = 256 * 1024

#: Declarations a name can be defined by, and what hover calls each.
DECLARATIONS = {
    ast.ModelDecl: "model",
    ast.DerivedDecl: "model",
    ast.FamilyDecl: "family",
    ast.DataDecl: "data",
    ast.ConstDecl: "const",
    ast.QueryDecl: "query",
}


@dataclass(frozen=True)
class Analysis:
    """One version of a document. ``spec`` is None when it does not parse, ``checked`` when it
    does not check; ``models`` and ``datasets`` hold what loaded either way."""

    path: str
    text: str
    diagnostics: tuple[Diagnostic, ...]
    spec: ast.SpecFile | None = None
    checked: CheckedSpec | None = None
    models: dict[str, Ensemble] = field(default_factory=dict)
    datasets: dict[str, Dataset] = field(default_factory=dict)
    #: Each declared name: what declares it and the span of the name itself.
    names: dict[str, tuple[str, Span]] = field(default_factory=dict)

    @property
    def features(self) -> tuple[Feature, ...]:
        """The feature space: checked domains, or the first loaded model's names."""
        if self.checked is not None:
            return self.checked.features
        first = next(iter(self.models.values()), None)
        return tuple(Feature(n) for n in first.feature_names) if first is not None else ()


def analyse(text: str, path: str, files: CachedFiles) -> Analysis:
    """Check ``text`` (the document at ``path``) as ``ver run`` would before solving. Never
    raises: a fault of the checker itself is a diagnostic too."""
    if len(text) > MAX_LIVE_CHARS:
        too_large = Diagnostic(
            "V002",
            "file too large for live checking",
            _start(path),
            f"{len(text):,} characters; the editor checks up to {MAX_LIVE_CHARS:,}",
            help="run `ver check` on it for its diagnostics",
            severity=Severity.WARNING,
        )
        return Analysis(path, text, (too_large,))
    try:
        return _analyse(text, path, files)
    except Exception as error:  # a bug of ours: say so where the user looks, and go on
        return Analysis(path, text, (_fault(error, path),))


def _analyse(text: str, path: str, files: CachedFiles) -> Analysis:
    try:
        spec = parse_text(text, path)
    except SpecError as error:
        return Analysis(path, text, _located(error.diagnostics, None, path))
    names = _declared_names(spec, text)
    try:
        with pickle_option(None):  # an editor never loads a pickle
            checked = Spec(text, path, trust_pickle=False, files=files, parsed=spec)
        found = checked.warnings()
        preflight(list(checked.lowered()), RunOptions())
    except SpecError as error:
        models, datasets = _loaded(spec, files)
        diagnostics = _located(map(_given_later, error.diagnostics), spec, path)
        return Analysis(path, text, diagnostics, spec, None, models, datasets, names)
    except Exception as error:  # as in `analyse`, keeping the names for hover
        return Analysis(path, text, (_fault(error, path),), spec, names=names)
    result = checked.checked
    diagnostics = _located(found, spec, path)
    return Analysis(path, text, diagnostics, spec, result, result.models, result.datasets, names)


def _given_later(diagnostic: Diagnostic) -> Diagnostic:
    """A model declared without a file (V415) is given when the spec runs from Python, which
    an editor cannot know: a warning here, an error where the spec is run."""
    if diagnostic.code == "V415":
        return replace(diagnostic, severity=Severity.WARNING)
    return diagnostic


def _fault(error: Exception, path: str) -> Diagnostic:
    return Diagnostic("V000", f"internal error while checking: {error!r}", _start(path))


def _start(path: str) -> Span:
    """The first character of the document: where a diagnostic about all of it is shown."""
    return Span(path, 1, 1, 1, 1)


def _declared_names(spec: ast.SpecFile, text: str) -> dict[str, tuple[str, Span]]:
    """Each declared name, with the span of its first NAME token (the name as written)."""
    starts = {}
    for token in tokens(text):
        if token.type == "NAME":
            starts.setdefault((token.line, token.column), token)
    ordered = sorted(starts)
    names: dict[str, tuple[str, Span]] = {}
    declared = [(d, DECLARATIONS[type(d)]) for d in spec.items if type(d) in DECLARATIONS]
    for block in (i for i in spec.items if isinstance(i, ast.FeaturesBlock)):
        declared += [(decl, "feature") for decl in block.decls]
    for decl, kind in declared:
        span = decl.span
        first = bisect.bisect_left(ordered, (span.line, span.column))  # a scan was quadratic
        if first == len(ordered):
            continue
        token = starts[ordered[first]]
        where = Span(span.file, token.line, token.column, token.end_line, token.end_column)
        names.setdefault(decl.name, (kind, where))
    return names


def _loaded(spec: ast.SpecFile, files: CachedFiles) -> tuple[dict, dict]:
    """The models and data sets that loaded, by declared name, when the spec did not check."""
    base = Path(spec.path).resolve().parent
    models, datasets = {}, {}
    for item in spec.items:
        if isinstance(item, ast.ModelDecl | ast.DataDecl) and item.path is not None:
            loaded = files.latest(base / item.path.value)
            if isinstance(loaded, Ensemble) and isinstance(item, ast.ModelDecl):
                models[item.name] = loaded
            elif isinstance(loaded, Dataset) and isinstance(item, ast.DataDecl):
                datasets[item.name] = loaded
    return models, datasets


def _located(diagnostics, spec: ast.SpecFile | None, path: str) -> tuple[Diagnostic, ...]:
    """The diagnostics, each with a span in this document: one in a data, model or rows file is
    shown on the path that names the file (the file's own place is a note), one without a span on
    the first character."""
    files = {}
    if spec is not None:
        base = Path(path).resolve().parent
        for text in _paths(spec):
            files[_resolved(base / text.value)] = text.span
    located = []
    for d in diagnostics:
        if d.span is None:
            d = replace(d, span=_start(path))
        elif d.span.file != path:
            where = files.get(_resolved(Path(d.span.file)), _start(path))
            d = replace(d, span=where, notes=(*d.notes, f"at {d.span}"))
        located.append(d)
    return tuple(located)


def _paths(spec: ast.SpecFile) -> list[ast.Text]:
    """The paths the spec names: of models, data sets and rows files."""
    paths = []
    for item in spec.items:
        if isinstance(item, ast.ModelDecl | ast.DataDecl) and item.path is not None:
            paths.append(item.path)
        elif isinstance(item, ast.DerivedDecl | ast.FamilyDecl):
            paths += [arg.value for arg in item.args if isinstance(arg.value, ast.Text)]
    return paths


def _resolved(path: Path) -> str | None:
    """``path`` resolved, or None when it cannot name a file (a NUL byte in it)."""
    try:
        return str(path.resolve())
    except (OSError, ValueError):
        return None
