"""AST to checked spec: load models and data, resolve every name, type every expression.

Errors are collected, each as one located :class:`Diagnostic`, and raised together at the end as a
:class:`SpecError`; an error that only follows from an earlier one is not reported again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection

from veritas_dsl.diagnostics import Span, SpecError
from veritas_dsl.lang import ast
from veritas_dsl.lang import typed as t
from veritas_dsl.lang.queries import Queries
from veritas_dsl.lang.symbols import Failed


def check(
    spec: ast.SpecFile, engines: Collection[str], trust_pickle: bool = False
) -> t.CheckedSpec:
    """Resolve and type ``spec``; raise :class:`SpecError` listing every problem found."""
    return _Checker(spec, tuple(engines), trust_pickle).run()


class _Checker(Queries):
    """Declarations first (models, then data, constants and features), then every query."""

    def run(self) -> t.CheckedSpec:
        items = self.spec.items
        models = [i for i in items if isinstance(i, ast.ModelDecl | ast.DerivedDecl)]
        for k, item in enumerate(models):
            if isinstance(item, ast.ModelDecl):
                self.model_decl(item)
            else:
                self.derived_decl(item, {d.name: d.span for d in reversed(models[k + 1 :])})
        self.feature_space(models)
        for item in items:
            if isinstance(item, ast.DataDecl):
                self.data_decl(item)
        for item in items:
            if isinstance(item, ast.ConstDecl):
                self.const_decl(item)
        blocks = [i for i in items if isinstance(i, ast.FeaturesBlock)]
        for extra in blocks[1:]:
            self.error("V202", "a spec has one `features` block", extra.span, "a second block")
            for decl in extra.decls:
                if decl.kind == "onehot":  # unchecked: its uses say nothing more
                    self.broken_groups.update([decl.name, *(m.id for m in decl.members)])
        if blocks:
            self.features_block(blocks[0])
        queries = []
        names: dict[str, Span] = {}
        for item in items:
            if isinstance(item, ast.QueryDecl):
                if item.name in names:
                    self.error(
                        "V201",
                        f"query `{item.name}` is declared twice",
                        item.span,
                        notes=[f"first declared at {names[item.name]}"],
                    )
                names[item.name] = item.span
                with contextlib.suppress(Failed):  # already reported
                    queries.append(self.query(item))
        if self.diagnostics:
            raise SpecError(self.diagnostics)
        return t.CheckedSpec(
            path=self.spec.path,
            models=self.models,
            datasets=self.datasets,
            features=self.features,
            groups=self.groups,
            constants=self.constants,
            queries=tuple(queries),
            model_paths=self.model_paths,
        )
