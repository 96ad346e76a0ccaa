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
from veritas_dsl.lang.files import Files
from veritas_dsl.lang.queries import Queries
from veritas_dsl.lang.symbols import Failed


def check(
    spec: ast.SpecFile,
    engines: Collection[str],
    trust_pickle: bool = False,
    files: Files | None = None,
) -> t.CheckedSpec:
    """Resolve and type ``spec``, reading its models and data through ``files`` (directly when
    None); raise :class:`SpecError` listing every problem found."""
    return _Checker(spec, tuple(engines), trust_pickle, files).run()


class _Checker(Queries):
    """Declarations first (constants of numbers, models, then data, the other constants and
    features), then every query."""

    def run(self) -> t.CheckedSpec:
        items = self.spec.items
        models = [i for i in items if isinstance(i, ast.ModelDecl | ast.DerivedDecl)]
        makers = [i for i in items if isinstance(i, _MAKERS)]
        # Row lists and model options take constants: those made of numbers are known first
        # (nothing they read is loaded); the others may read a data set, read after the models.
        early = numeric_constants(items, {d.name for d in makers})
        for item in early:
            self.peek_constant(item)
        known = {c.name for c in early}
        self.late_constants = {
            i.name: i.span for i in items if isinstance(i, ast.ConstDecl) and i.name not in known
        }
        for k, item in enumerate(makers):
            later = {d.name: d.span for d in reversed(makers[k + 1 :])}
            if isinstance(item, ast.ModelDecl):
                self.model_decl(item)
            elif isinstance(item, ast.DerivedDecl):
                self.derived_decl(item, later)
            else:
                self.family_decl(item, later)
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
            forests=self.forests,
            derivations=self.derivations,
            warnings=tuple(dict.fromkeys(self.warnings)),
        )


#: Declarations that make models: a model, a derived model, a family.
_MAKERS = ast.ModelDecl | ast.DerivedDecl | ast.FamilyDecl


def numeric_constants(items, taken: Collection[str]) -> list[ast.ConstDecl]:
    """The constant declarations, in order, whose value is made of numbers and of such constants
    declared before them (so evaluating them early finds what it would at their turn), their name
    taken by no model and no other constant (so it names one number, and a clash is reported as
    before, at its turn)."""
    known, seen, early = {"inf"}, set(taken), []
    for item in items:
        if not isinstance(item, ast.ConstDecl):
            continue
        if item.name not in seen and _numeric(item.value, known):
            early.append(item)
            known.add(item.name)
        seen.add(item.name)
    return early


def _numeric(expr: ast.Expr, known: set[str]) -> bool:
    if isinstance(expr, ast.Number):
        return True
    if isinstance(expr, ast.Name):
        return expr.id in known
    if isinstance(expr, ast.Neg):
        return _numeric(expr.operand, known)
    if isinstance(expr, ast.Arith):
        return all(_numeric(operand, known) for operand in expr.operands)
    return False
