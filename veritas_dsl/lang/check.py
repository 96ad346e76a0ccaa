"""AST to checked spec: load models and data, resolve every name, type every expression.

The checker is a few small checkers sharing one :class:`~veritas_dsl.lang.context.Context` (the
names declared so far and the diagnostics), run as steps:

1. :class:`~veritas_dsl.lang.models.Models` loads and derives the models, before anything is
   typed (``unlearning/checking/`` makes the derived models and the families);
2. :class:`~veritas_dsl.lang.environment.Environment` reads the data sets, evaluates the
   constants and builds the feature space's domains;
3. :class:`~veritas_dsl.lang.queries.Queries` checks each query.

Expressions and conditions are typed by :class:`~veritas_dsl.lang.expressions.Expressions`
throughout (with its :class:`~veritas_dsl.lang.scales.Scales` and
:class:`~veritas_dsl.lang.quantifiers.Quantifiers`). Errors are collected, each as one located
:class:`Diagnostic`, and raised together at the end as a :class:`SpecError`; an error that only
follows from an earlier one is not reported again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from veritas_dsl.diagnostics import SpecError
from veritas_dsl.lang import ast
from veritas_dsl.lang import typed as t
from veritas_dsl.lang.context import Context
from veritas_dsl.lang.environment import Environment
from veritas_dsl.lang.expressions import Expressions
from veritas_dsl.lang.files import Files
from veritas_dsl.lang.models import Models
from veritas_dsl.lang.queries import Queries


def check(
    spec: ast.SpecFile,
    engines: Collection[str],
    trust_pickle: bool = False,
    files: Files | None = None,
    models: Mapping[str, object] | None = None,
) -> t.CheckedSpec:
    """Resolve and type ``spec``, reading its models and data through ``files`` (directly when
    None), but for the ``models`` given as objects by declared name (see
    :mod:`veritas_dsl.model.in_memory`); raise :class:`SpecError` listing every problem found."""
    ctx = Context(spec, tuple(engines), trust_pickle, files, models)
    expressions = Expressions(ctx)
    Models(ctx, expressions).load(spec.items)
    Environment(ctx, expressions).declare(spec.items)
    queries = Queries(ctx, expressions).check_all(spec.items)
    if ctx.diagnostics:
        raise SpecError(ctx.diagnostics)
    return t.CheckedSpec(
        path=spec.path,
        models=ctx.models,
        datasets=ctx.datasets,
        features=ctx.features,
        groups=ctx.groups,
        constants=ctx.constants,
        queries=queries,
        model_paths=ctx.model_paths,
        model_digests=ctx.model_digests,
        forests=ctx.forests,
        derivations=ctx.derivations,
        warnings=tuple(dict.fromkeys(ctx.warnings)),
    )
