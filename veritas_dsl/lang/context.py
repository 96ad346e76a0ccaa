"""The context the checkers of a spec share: what its declarations made known, and how problems
are reported.

:class:`Context` holds the models, data sets, constants and features by name; each checker
(:mod:`~veritas_dsl.lang.check` lists them) is handed it, reads and fills it. Each problem is one
located :class:`Diagnostic`, and :class:`Failed` stops the construct it was found in (its cause
is reported once).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.data import Dataset
from veritas_dsl.diagnostics import Diagnostic, Span, suggest
from veritas_dsl.ir.query import Feature
from veritas_dsl.lang import typed as t
from veritas_dsl.lang.ast import Name, SpecFile, Text
from veritas_dsl.lang.files import Files
from veritas_dsl.model.ensemble import Ensemble
from veritas_dsl.names import FUNCTIONS

if TYPE_CHECKING:
    from veritas_dsl.unlearning.dare import DareForest

#: Names the language gives a meaning; a declaration may not take them.
BUILTINS = FUNCTIONS


class Failed(Exception):
    """An expression already reported an error; stop checking the enclosing construct."""


class Scope:
    """Names local to one query: its instances, the batch row variable, and the variables of
    the ``for m in V`` around a condition (each naming one model of a family)."""

    def __init__(self) -> None:
        self.instances: set[str] = set()
        self.batch: str | None = None
        self.batch_data: str | None = None
        self.models: dict[str, str] = {}

    def binding(self, var: str, model: str) -> Scope:
        """This scope with ``var`` naming ``model``."""
        scope = copy.copy(self)
        scope.models = {**self.models, var: model}
        return scope


class Context:
    """The names of one spec, filled in declaration by declaration, and its diagnostics."""

    def __init__(
        self,
        spec: SpecFile,
        engines: tuple[str, ...],
        trust_pickle: bool,
        files: Files | None = None,
        provided: Mapping[str, object] | None = None,
    ) -> None:
        self.spec = spec
        self.files = files or Files()  # reads the model and data files
        self.provided = dict(provided or {})  # models given as objects, by declared name
        self.base = Path(spec.path).resolve().parent if spec.path != "<string>" else Path.cwd()
        self.engines = engines
        self.trust_pickle = trust_pickle
        self.diagnostics: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []  # the spec is still checked and run
        # (statistic, data set) -> per-feature values, computed once (lang/scales.py)
        self.statistics: dict[tuple[str, str], list[float]] = {}
        self.declared: dict[str, Span] = {}
        self.models: dict[str, Ensemble] = {}
        self.model_paths: dict[str, str] = {}
        self.model_digests: dict[str, bytes] = {}  # of each model given as an object
        self.model_formats: dict[str, str] = {}  # of each model loaded from a file
        self.forests: dict[str, DareForest] = {}  # `dare` models and those derived from them
        self.derivations: dict[str, tuple[str, str]] = {}  # derived model: (function, base)
        # Every model made from another (derived, bound, family variant): (function, base).
        self.lineage: dict[str, tuple[str, str]] = {}
        self.certified_rows: dict[str, int] = {}  # bound: the k of its `deletions = k`
        self.families: dict[str, tuple[str, ...]] = {}  # family: its base, then its variants
        self.broken: set[str] = set()  # declared names whose declaration failed
        self.broken_groups: set[str] = set()  # one-hot groups that failed, and their members
        # No model loaded: the features are unknown, and so is whether a name is one.
        self.features_unknown = False
        self.datasets: dict[str, Dataset] = {}
        self.constants: dict[str, float] = {"inf": math.inf}
        self.late_constants: dict[str, Span] = {}  # evaluated after the models and data
        self.features: tuple[Feature, ...] = ()
        self.feature_index: dict[str, int] = {}
        self.groups: dict[str, tuple[int, ...]] = {}
        self.members: dict[str, tuple[str, int]] = {}

    # -- reporting --------------------------------------------------------------------------

    def error(self, code, message, span, label="", help="", notes=()) -> Failed:
        self.diagnostics.append(Diagnostic(code, message, span, label, tuple(notes), help))
        return Failed()

    def path_of(self, text: Text) -> Path:
        """The file ``text`` names: relative to the spec's folder, or absolute (see "Paths" in
        docs/language.md). Whether it may be read is the readers' rule
        (:mod:`veritas_dsl.inputs`), which refuses a name with a NUL character too."""
        path = Path(text.value)
        return path if path.is_absolute() else self.base / path

    def declare(self, name: str, span: Span, what: str) -> bool:
        if name in self.declared or name in BUILTINS or name == "inf":
            first = self.declared.get(name)
            notes = [f"first declared at {first}"] if first else [f"`{name}` is a built-in name"]
            self.error(
                "V201", f"`{name}` is declared twice", span, f"this {what}", help="", notes=notes
            )
            return False
        self.declared[name] = span
        return True

    def feature_of(self, name: str, span: Span) -> int:
        if self.features_unknown:
            raise Failed  # the failed model's error says it all
        if name not in self.feature_index:
            raise self.error(
                "V204",
                f"unknown feature `{name}`",
                span,
                "not a feature of the models",
                help=suggest(name, self.feature_index),
            )
        return self.feature_index[name]

    def dataset_named(self, name: Name) -> Dataset:
        """The data set ``name`` refers to (V210 when none is declared)."""
        if name.id not in self.datasets:
            if name.id in self.broken:
                raise Failed
            raise self.error(
                "V210",
                f"unknown data set `{name.id}`",
                name.span,
                help=suggest(name.id, self.datasets) or 'declare it: data d = csv "file.csv"',
            )
        return self.datasets[name.id]

    def column_of(self, data: str, name: str, span: Span) -> int:
        """The index of column ``name`` of data set ``data`` (V214 when it has none)."""
        dataset = self.datasets[data]
        if name not in dataset.columns:
            raise self.error(
                "V214",
                f"data `{data}` has no column `{name}`",
                span,
                help=suggest(name, dataset.columns),
            )
        return dataset.columns.index(name)

    def row_point(self, row: t.RowValue) -> np.ndarray:
        dataset = self.datasets[row.data]
        columns = [dataset.columns.index(f.name) for f in self.features]
        model_order = dataset.values[row.index, columns]
        return model_order[None, :]

    def n_outputs(self, model: str) -> int:
        return self.models[model].n_outputs
