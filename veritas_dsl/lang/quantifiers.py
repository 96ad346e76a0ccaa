"""Conditions and objectives that range over a family of models (declared by
``unlearning/checking/families.py``): ``cond for m in V`` holds when ``cond`` holds with ``m``
naming each model of ``V``; ``maximize min(m(x) for m in V)`` (and ``minimize max``, or of a list
of terms) is the worst model's value.
"""

from __future__ import annotations

import dataclasses
import math

from veritas_dsl import names
from veritas_dsl.diagnostics import Span, suggest
from veritas_dsl.lang import ast
from veritas_dsl.lang import typed as t
from veritas_dsl.lang.context import BUILTINS, Context, Failed, Scope

#: The objectives over several terms: ``maximize min(...)`` and ``minimize max(...)``.
WORST = names.WORST_OF
_EXAMPLE = "models V = deletions(before, fraction = 0.01, count = 20, seed = 0)"


class Quantifiers:
    """Types ``for m in V`` and the worst-of objectives; the parts themselves are typed by
    ``expressions`` (an :class:`~veritas_dsl.lang.expressions.Expressions`), with ``m`` bound in
    the :class:`Scope`."""

    def __init__(self, ctx: Context, expressions) -> None:
        self.ctx = ctx
        self.expressions = expressions

    def as_model_call(self, expr: ast.Call, scope: Scope) -> ast.Call:
        """``expr``, a call of ``for m in V``'s ``m`` read as a call of the model it names; a
        family, ``min`` or ``max`` called like a model is an error."""
        if expr.func in scope.models:
            return dataclasses.replace(expr, func=scope.models[expr.func])
        if expr.func in self.ctx.families:
            raise self.not_a_model(expr.func, expr.func_span)
        if self.is_worst_of(expr):
            raise self.objective_only(expr)
        return expr

    def for_each(self, cond: ast.ForEach, scope: Scope, negated: bool) -> t.Condition:
        """``part for m in V``: ``part`` for each model of ``V``, all of them (any of them
        failing, under ``not``). Typed once per model; the first error stops it."""
        var = self.family_variable(cond.var, scope)
        members = self.family_named(cond.family)
        parts = tuple(
            self.expressions.condition(cond.part, scope.binding(var, member), negated)
            for member in members
        )
        return t.EitherOf(parts) if negated else t.AllOf(parts)

    def family_variable(self, var: ast.Name, scope: Scope) -> str:
        """The name of ``for m in V``'s ``m``, which must be new here."""
        taken = scope.instances | set(scope.models) | {scope.batch} | set(self.ctx.declared)
        if var.id in taken or var.id in BUILTINS:
            raise self.ctx.error(
                "V201",
                f"`{var.id}` is already a name here",
                var.span,
                help="choose another name for the family's models, e.g. `m`",
            )
        return var.id

    # -- maximize min(m(x) for m in V), minimize max(...): the worst model's value ----------

    def is_worst_of(self, expr: ast.Expr) -> bool:
        """Whether ``expr`` is ``min(...)`` or ``max(...)`` (a family's, or of a list)."""
        if isinstance(expr, ast.EachOf):
            return True
        return (
            isinstance(expr, ast.Call) and expr.func in WORST and expr.func not in self.ctx.models
        )

    def worst_objective(self, statement: ast.Objective, scope: Scope) -> t.OptimizeWorst:
        """``maximize min(part for m in V)`` / ``minimize max(...)``, or of a list of terms
        (``min(a(x), b(x))``): each part a sum of model outputs."""
        expr = statement.expr
        want = WORST[0] if statement.sense == "maximize" else WORST[1]
        if expr.func not in WORST:
            raise self.ctx.error(
                "V332",
                f"`{expr.func}(... for ...)` is not an objective",
                expr.func_span,
                help=f"{statement.sense} {want}(m(x) for m in V)",
            )
        if expr.func != want:
            raise self.ctx.error(
                "V332",
                f"`{statement.sense} {expr.func}(...)` is not supported: it is the best of the "
                "models' own optima",
                expr.func_span,
                help=f"{statement.sense} {want}(...) for the worst model's value, or "
                f"{statement.sense} each model in a query of its own",
            )
        # Which parts may be a number: the base's, where a comparison with it cancels
        # (`m(x) - before(x)` is 0 for `before`, the family's first model).
        if isinstance(expr, ast.EachOf):
            var = self.family_variable(expr.var, scope)
            members = self.family_named(expr.family)
            parts = [(expr.part, scope.binding(var, m), m == members[0]) for m in members]
        else:
            if expr.keywords:
                raise self.ctx.error("V331", f"`{want}` takes no keyword", expr.keywords[0].span)
            if not expr.args:
                raise self.ctx.error("V332", f"`{want}()` of nothing", expr.span)
            parts = [(arg, scope, False) for arg in expr.args]
        lins = []
        for part, within, base in parts:
            value = self.expressions.value(part, within)
            kinds = ("outputs", "constant") if base else ("outputs",)
            if not (isinstance(value, t.Lin) and value.kind in kinds):
                raise self.ctx.error(
                    "V332",
                    f"cannot {statement.sense} the {want} of {self.expressions.describe(value)}",
                    part.span,
                    help=f"each part is a model's output: {want}(m(x) for m in V)",
                )
            if any(math.isinf(c) for _, c in value.coefs):
                raise self.ctx.error(
                    "V308", f"cannot {statement.sense} an infinite value", part.span
                )
            lins.append(value)
        return t.OptimizeWorst(statement.sense, tuple(lins), statement.span)

    def family_named(self, name: ast.Name) -> tuple[str, ...]:
        if name.id in self.ctx.families:
            return self.ctx.families[name.id]
        if name.id in self.ctx.broken:
            raise Failed
        if name.id in self.ctx.models:
            raise self.ctx.error(
                "V219",
                f"`{name.id}` is a model, not a family of models",
                name.span,
                help=f"declare a family: models V = deletions({name.id}, fraction = 0.01, "
                "count = 20)",
            )
        raise self.ctx.error(
            "V219",
            f"unknown family of models `{name.id}`",
            name.span,
            help=suggest(name.id, self.ctx.families) or _EXAMPLE,
        )

    def not_a_model(self, name: str, span: Span) -> Failed:
        """The error for family ``name`` used where a model is expected."""
        base, *variants = self.ctx.families[name]
        return self.ctx.error(
            "V218",
            f"`{name}` is a family of models (`{base}` and {len(variants)} variants), not a model",
            span,
            help=f"range over it: class(m, x) == 1 for m in {name}",
        )

    def objective_only(self, expr: ast.Call | ast.EachOf) -> Failed:
        """The error for ``min(...)`` or ``max(...)`` used as a value
        (read as a whole objective only: :meth:`worst_objective`)."""
        return self.ctx.error(
            "V332",
            f"`{expr.func}(...)` is an objective, not a value",
            expr.span,
            help="write `maximize min(m(x) for m in V)`; in a condition, state it of each "
            "model: m(x) >= 0.5 for m in V",
        )
