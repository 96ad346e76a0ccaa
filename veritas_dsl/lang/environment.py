"""The environment of a spec once its models are loaded (``lang/models.py``): its data sets read,
its constants evaluated, and its features (names from the models, domains and one-hot groups from
the ``features`` block).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from veritas_dsl.data import DataError
from veritas_dsl.diagnostics import Span, suggest
from veritas_dsl.ir.query import DomainKind, Feature
from veritas_dsl.lang import ast
from veritas_dsl.lang.context import Context, Failed, Scope
from veritas_dsl.lang.expressions import Expressions
from veritas_dsl.lang.models import listed, option_values

DATA_FORMATS = {
    "csv": {},
    "libsvm": {"features": "a whole number of features", "first_index": "a whole number, 0 or 1"},
}


class Environment:
    """Checks the declarations of data, constants and features into ``ctx``, recording each
    name; numbers are typed by ``expressions``."""

    def __init__(self, ctx: Context, expressions: Expressions) -> None:
        self.ctx = ctx
        self.expressions = expressions

    def declare(self, items: tuple[ast.Item, ...]) -> None:
        """The data sets, then the constants, then the ``features`` block, each in order."""
        for item in items:
            if isinstance(item, ast.DataDecl):
                self.data_decl(item)
        for item in items:
            if isinstance(item, ast.ConstDecl):
                self.const_decl(item)
        blocks = [i for i in items if isinstance(i, ast.FeaturesBlock)]
        for extra in blocks[1:]:
            self.ctx.error("V202", "a spec has one `features` block", extra.span, "a second block")
            for decl in extra.decls:
                if decl.kind == "onehot":  # unchecked: its uses say nothing more
                    self.ctx.broken_groups.update([decl.name, *(m.id for m in decl.members)])
        if blocks:
            self.features_block(blocks[0])

    def data_decl(self, decl: ast.DataDecl) -> None:
        if not self.ctx.declare(decl.name, decl.span, "data set"):
            return
        if decl.kind not in DATA_FORMATS:
            self.ctx.broken.add(decl.name)
            self.ctx.error(
                "V405",
                f"unknown data format `{decl.kind}`",
                decl.kind_span,
                help=suggest(decl.kind, DATA_FORMATS) or f"formats are {', '.join(DATA_FORMATS)}",
            )
            return
        try:
            path = self.ctx.path_of(decl.path)
            options = option_values(
                self.ctx, self.expressions, decl.options, DATA_FORMATS[decl.kind]
            )
            if decl.kind == "libsvm":
                if "features" not in options:
                    raise self.ctx.error(
                        "V409",
                        "a libsvm data set needs its feature count",
                        decl.span,
                        help=f'data {decl.name} = libsvm "{decl.path.value}" (features = 10)',
                    )
                dataset = self.ctx.files.libsvm(
                    decl.name, path, int(options["features"]), int(options.get("first_index", 1))
                )
            else:
                dataset = self.ctx.files.csv(decl.name, path)
        except Failed:
            self.ctx.broken.add(decl.name)
            return
        except DataError as error:
            self.ctx.broken.add(decl.name)
            span = Span(
                error.path, error.line, error.column, error.line, error.column + error.width
            )
            self.ctx.error("V408", error.message, span, help=error.help)
            return
        except OSError as error:
            self.ctx.broken.add(decl.name)
            self.ctx.error(
                "V406", f"cannot read data `{decl.name}`: {error.strerror or error}", decl.path.span
            )
            return
        missing = [f.name for f in self.ctx.features if f.name not in dataset.columns]
        if missing:
            self.ctx.broken.add(decl.name)
            self.ctx.error(
                "V407",
                f"data `{decl.name}` lacks columns for features {listed(missing)}",
                decl.path.span,
                help="columns are matched to the models' features by name",
            )
            return
        self.ctx.datasets[decl.name] = dataset

    def const_decl(self, decl: ast.ConstDecl) -> None:
        if not self.ctx.declare(decl.name, decl.span, "constant"):
            return
        try:
            value = self.expressions.constant(decl.value, Scope())
        except Failed:
            self.ctx.broken.add(decl.name)
            return
        self.ctx.constants[decl.name] = value

    def features_block(self, block: ast.FeaturesBlock) -> None:
        features = list(self.ctx.features)
        if block.source is not None:
            with contextlib.suppress(Failed):  # reported; the declared features still count
                features = self.features_from(block.source)
        seen: dict[str, Span] = {}
        for decl in block.decls:
            if decl.name in seen:
                self.ctx.error(
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
                    self.ctx.broken_groups.update([decl.name, *(m.id for m in decl.members)])
        self.ctx.features = tuple(features)

    def features_from(self, source: ast.Name) -> list[Feature]:
        """``features from DATA``: each feature's range is the smallest and largest value of its
        column (columns that are not features are ignored); ``int`` when every value is whole,
        ``real`` otherwise."""
        data = source.id
        dataset = self.ctx.dataset_named(source)
        if len(dataset) == 0:
            raise self.ctx.error(
                "V414",
                f"data `{data}` has no rows to take ranges from",
                source.span,
                help="name a data set with rows, or declare the ranges in the block",
            )
        features = []
        for feature in self.ctx.features:
            column = dataset.values[:, dataset.columns.index(feature.name)].astype(np.float64)
            lo, hi = float(column.min()), float(column.max())
            whole = bool(np.all(column == np.round(column)))
            features.append(
                Feature(feature.name, DomainKind.INT if whole else DomainKind.REAL, lo, hi)
            )
        return features

    def domain_decl(self, decl: ast.FeatureDecl, features: list[Feature]) -> None:
        f = self.ctx.feature_of(decl.name, decl.span)
        kind = {"real": DomainKind.REAL, "int": DomainKind.INT, "bool": DomainKind.BOOL}[decl.kind]
        lo, hi = (0.0, 1.0) if kind is DomainKind.BOOL else (-math.inf, math.inf)
        if decl.lo is not None:
            lo, hi = (
                self.expressions.constant(decl.lo, Scope()),
                self.expressions.constant(decl.hi, Scope()),
            )
            if kind is DomainKind.INT:
                for bound, expr in ((lo, decl.lo), (hi, decl.hi)):
                    if math.isfinite(bound) and not bound.is_integer():
                        raise self.ctx.error(
                            "V302",
                            f"int feature `{decl.name}` has a fractional bound {bound:g}",
                            expr.span,
                            "not a whole number",
                            help=f"write {math.floor(bound):g} or {math.ceil(bound):g}",
                        )
            if lo > hi:
                raise self.ctx.error(
                    "V303",
                    f"the range of `{decl.name}` is empty",
                    decl.span,
                    f"{lo:g} > {hi:g}",
                    help="write the lower bound first",
                )
        features[f] = Feature(decl.name, kind, lo, hi)

    def onehot_decl(self, decl: ast.FeatureDecl, features: list[Feature]) -> None:
        if decl.name in self.ctx.feature_index or decl.name in self.ctx.groups:
            raise self.ctx.error(
                "V205",
                f"one-hot group `{decl.name}` has the name of a feature",
                decl.span,
                help="name the group after what it encodes, e.g. `housing`",
            )
        if len(decl.members) < 2:
            raise self.ctx.error("V304", "a one-hot group needs at least two features", decl.span)
        indices = []
        for member in decl.members:
            f = self.ctx.feature_of(member.id, member.span)
            if member.id in self.ctx.members:
                raise self.ctx.error(
                    "V304",
                    f"`{member.id}` is already in group `{self.ctx.members[member.id][0]}`",
                    member.span,
                )
            self.ctx.members[member.id] = (decl.name, f)
            features[f] = Feature(member.id, DomainKind.BOOL, 0.0, 1.0)
            indices.append(f)
        self.ctx.groups[decl.name] = tuple(indices)
