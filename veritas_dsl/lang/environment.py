"""The environment of a spec: its models and data sets loaded, its constants evaluated, and its
features (names from the models, domains and one-hot groups from the `features` block).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from veritas_dsl.data import DataError
from veritas_dsl.diagnostics import Span, suggest
from veritas_dsl.inputs import excerpt
from veritas_dsl.ir.query import DomainKind, Feature
from veritas_dsl.lang import ast
from veritas_dsl.lang.symbols import Failed, Scope
from veritas_dsl.model.ensemble import ModelError
from veritas_dsl.model.load import FORMAT_OPTIONS, FORMATS, PickleRefused
from veritas_dsl.unlearning.checking.families import Families

DATA_FORMATS = {
    "csv": {},
    "libsvm": {"features": "a whole number of features", "first_index": "a whole number, 0 or 1"},
}
#: Upper ends of count options: a typo like `features = 1e30` is an error, not an allocation.
COUNT_LIMITS = {"features": 1_000_000, "classes": 100_000, "first_index": 1}


class Environment(Families):
    """Checks the declarations of models, data, constants and features, recording each name."""

    def model_decl(self, decl: ast.ModelDecl) -> None:
        if not self.declare(decl.name, decl.span, "model"):
            return
        if decl.kind not in FORMATS:
            self.broken.add(decl.name)
            self.error(
                "V402",
                f"unknown model format `{decl.kind}`",
                decl.kind_span,
                "not a model format",
                help=suggest(decl.kind, FORMATS) or f"formats are {', '.join(FORMATS)}",
            )
            return
        try:
            path = self.path_of(decl.path)
            options = self.options(decl.options, FORMAT_OPTIONS.get(decl.kind, {}))
        except Failed:
            self.broken.add(decl.name)
            return
        self.model_formats[decl.name] = decl.kind
        try:
            if decl.kind == "dare":  # kept whole: models may be derived from it
                self.forests[decl.name] = self.files.forest(path)
                self.models[decl.name] = self.forests[decl.name].to_ensemble()
            else:
                self.models[decl.name] = self.files.model(
                    path, decl.kind, self.trust_pickle, options
                )
            self.model_paths[decl.name] = str(path)
        except PickleRefused as error:
            self.broken.add(decl.name)
            message = f"cannot load model `{decl.name}`: {error.reason}"
            self.error("V401", message, decl.path.span, help=error.help)
        except ModelError as error:
            self.broken.add(decl.name)
            message = str(error).replace(f"{path}: ", "")
            self.error("V401", f"cannot load model `{decl.name}`: {message}", decl.path.span)

    def feature_space(self, decls: list[ast.ModelDecl | ast.DerivedDecl]) -> None:
        """``decls``: the model declarations (families follow their base)."""
        loaded = [d for d in decls if d.name in self.models]
        if not decls:
            self.error(
                "V203",
                "a spec needs at least one model",
                Span(self.spec.path, 1, 1, 1, 2),  # where a declaration would go
                "this file declares no model",
                help='declare one: model clf = xgboost "models/model.json"',
            )
            return
        if not loaded:
            self.features_unknown = True
            return
        first = loaded[0]
        names = self.models[first.name].feature_names
        for decl in loaded[1:]:
            other = self.models[decl.name].feature_names
            if set(other) != set(names):
                missing = sorted(set(names) - set(other))
                extra = sorted(set(other) - set(names))
                notes = []
                if missing:
                    notes.append(f"`{decl.name}` lacks {_listed(missing)}")
                if extra:
                    notes.append(f"`{decl.name}` has {_listed(extra)} that `{first.name}` lacks")
                self.error(
                    "V404",
                    f"models `{first.name}` and `{decl.name}` have different features",
                    decl.span,
                    notes=notes,
                )
        self.features = tuple(Feature(n) for n in names)
        self.feature_index = {n: i for i, n in enumerate(names)}
        # Every model is re-expressed over the first model's feature order (a family's models
        # have their base's features).
        variants = [m for family in self.families.values() for m in family[1:]]
        for name in [d.name for d in loaded[1:]] + variants:
            if set(self.models[name].feature_names) == set(names):
                self.models[name] = self.models[name].reindex(names)

    def data_decl(self, decl: ast.DataDecl) -> None:
        if not self.declare(decl.name, decl.span, "data set"):
            return
        if decl.kind not in DATA_FORMATS:
            self.broken.add(decl.name)
            self.error(
                "V405",
                f"unknown data format `{decl.kind}`",
                decl.kind_span,
                help=suggest(decl.kind, DATA_FORMATS) or f"formats are {', '.join(DATA_FORMATS)}",
            )
            return
        try:
            path = self.path_of(decl.path)
            options = self.options(decl.options, DATA_FORMATS[decl.kind])
            if decl.kind == "libsvm":
                if "features" not in options:
                    raise self.error(
                        "V409",
                        "a libsvm data set needs its feature count",
                        decl.span,
                        help=f'data {decl.name} = libsvm "{decl.path.value}" (features = 10)',
                    )
                dataset = self.files.libsvm(
                    decl.name, path, int(options["features"]), int(options.get("first_index", 1))
                )
            else:
                dataset = self.files.csv(decl.name, path)
        except Failed:
            self.broken.add(decl.name)
            return
        except DataError as error:
            self.broken.add(decl.name)
            span = Span(
                error.path, error.line, error.column, error.line, error.column + error.width
            )
            self.error("V408", error.message, span, help=error.help)
            return
        except OSError as error:
            self.broken.add(decl.name)
            self.error(
                "V406", f"cannot read data `{decl.name}`: {error.strerror or error}", decl.path.span
            )
            return
        missing = [f.name for f in self.features if f.name not in dataset.columns]
        if missing:
            self.broken.add(decl.name)
            self.error(
                "V407",
                f"data `{decl.name}` lacks columns for features {_listed(missing)}",
                decl.path.span,
                help="columns are matched to the models' features by name",
            )
            return
        self.datasets[decl.name] = dataset

    def options(self, options: tuple[ast.Option, ...], allowed: dict[str, str]) -> dict[str, float]:
        """Numeric options of a declaration, checked against ``allowed`` (name -> description)."""
        values = {}
        for option in options:
            if option.name not in allowed:
                hint = suggest(option.name, allowed) or (
                    f"options are {', '.join(allowed)}" if allowed else "it takes no options"
                )
                raise self.error("V403", f"unknown option `{option.name}`", option.span, help=hint)
            if isinstance(option.value, ast.Text | ast.Quantity):
                raise self.error("V403", f"`{option.name}` is {allowed[option.name]}", option.span)
            value = self.constant(option.value, Scope())
            if "whole" in allowed[option.name] and (not value.is_integer() or value < 0):
                raise self.error("V403", f"`{option.name}` is {allowed[option.name]}", option.span)
            limit = COUNT_LIMITS.get(option.name)
            if limit is not None and value > limit:
                raise self.error(
                    "V403", f"`{option.name}` is at most {limit:,}, not {value:g}", option.span
                )
            values[option.name] = value
        return values

    def const_decl(self, decl: ast.ConstDecl) -> None:
        if not self.declare(decl.name, decl.span, "constant"):
            return
        try:
            value = self.constant(decl.value, Scope())
        except Failed:
            self.broken.add(decl.name)
            return
        self.constants[decl.name] = value

    def peek_constant(self, decl: ast.ConstDecl) -> None:
        """Evaluate a constant of numbers before its turn, for the declarations checked before
        it (row lists, model options); its errors are reported at its turn, in order."""
        mark = len(self.diagnostics)
        try:
            self.constants[decl.name] = self.constant(decl.value, Scope())
        except Failed:
            self.broken.add(decl.name)  # its uses say nothing more
        del self.diagnostics[mark:]

    def features_block(self, block: ast.FeaturesBlock) -> None:
        features = list(self.features)
        if block.source is not None:
            with contextlib.suppress(Failed):  # reported; the declared features still count
                features = self.features_from(block.source)
        seen: dict[str, Span] = {}
        for decl in block.decls:
            if decl.name in seen:
                self.error(
                    "V201",
                    f"feature `{decl.name}` is declared twice",
                    decl.span,
                    notes=[f"first declared at {seen[decl.name]}"],
                )
                continue
            seen[decl.name] = decl.span
            try:
                if decl.kind == "onehot":
                    self.onehot_decl(decl, features)
                else:
                    self.domain_decl(decl, features)
            except Failed:
                if decl.kind == "onehot":
                    self.broken_groups.update([decl.name, *(m.id for m in decl.members)])
        self.features = tuple(features)

    def features_from(self, source: ast.Name) -> list[Feature]:
        """``features from DATA``: each feature's range is the smallest and largest value of its
        column (columns that are not features are ignored); ``int`` when every value is whole,
        ``real`` otherwise."""
        data = source.id
        dataset = self.dataset_named(source)
        if len(dataset) == 0:
            raise self.error(
                "V414",
                f"data `{data}` has no rows to take ranges from",
                source.span,
                help="name a data set with rows, or declare the ranges in the block",
            )
        features = []
        for feature in self.features:
            column = dataset.values[:, dataset.columns.index(feature.name)].astype(np.float64)
            lo, hi = float(column.min()), float(column.max())
            whole = bool(np.all(column == np.round(column)))
            features.append(
                Feature(feature.name, DomainKind.INT if whole else DomainKind.REAL, lo, hi)
            )
        return features

    def domain_decl(self, decl: ast.FeatureDecl, features: list[Feature]) -> None:
        f = self.feature_of(decl.name, decl.span)
        kind = {"real": DomainKind.REAL, "int": DomainKind.INT, "bool": DomainKind.BOOL}[decl.kind]
        lo, hi = (0.0, 1.0) if kind is DomainKind.BOOL else (-math.inf, math.inf)
        if decl.lo is not None:
            lo, hi = self.constant(decl.lo, Scope()), self.constant(decl.hi, Scope())
            if kind is DomainKind.INT:
                for bound, expr in ((lo, decl.lo), (hi, decl.hi)):
                    if math.isfinite(bound) and not bound.is_integer():
                        raise self.error(
                            "V302",
                            f"int feature `{decl.name}` has a fractional bound {bound:g}",
                            expr.span,
                            "not a whole number",
                            help=f"write {math.floor(bound):g} or {math.ceil(bound):g}",
                        )
            if lo > hi:
                raise self.error(
                    "V303",
                    f"the range of `{decl.name}` is empty",
                    decl.span,
                    f"{lo:g} > {hi:g}",
                    help="write the lower bound first",
                )
        features[f] = Feature(decl.name, kind, lo, hi)

    def onehot_decl(self, decl: ast.FeatureDecl, features: list[Feature]) -> None:
        if decl.name in self.feature_index or decl.name in self.groups:
            raise self.error(
                "V205",
                f"one-hot group `{decl.name}` has the name of a feature",
                decl.span,
                help="name the group after what it encodes, e.g. `housing`",
            )
        if len(decl.members) < 2:
            raise self.error("V304", "a one-hot group needs at least two features", decl.span)
        indices = []
        for member in decl.members:
            f = self.feature_of(member.id, member.span)
            if member.id in self.members:
                raise self.error(
                    "V304",
                    f"`{member.id}` is already in group `{self.members[member.id][0]}`",
                    member.span,
                )
            self.members[member.id] = (decl.name, f)
            features[f] = Feature(member.id, DomainKind.BOOL, 0.0, 1.0)
            indices.append(f)
        self.groups[decl.name] = tuple(indices)


def _listed(names: list[str], most: int = 8) -> str:
    """Feature names read from model files, as a message lists them: a few, each short."""
    shown = ", ".join(excerpt(name) for name in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")
