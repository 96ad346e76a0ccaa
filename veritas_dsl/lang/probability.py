"""Typing of ``proba(m, x)``, a binary model's probability of class 1, where it is exact.

A forest's output is its probability (``Ensemble.probability == "identity"``): ``proba(m, x)`` is
then ``m(x)``, a linear form like any other. A margin's probability is its logistic function
(``"logistic"``), which is not linear but is increasing: ``proba(m, x) > 0.7`` is exactly
``m(x) > logit(0.7)``, with the bound rounded to the side that keeps every float64 margin's answer
(:func:`veritas_dsl.ir.probability.margin_bound`). That rewriting, here and only here, is the one
rule of meaning of ``proba``; anything else made of a logistic probability (a sum, a difference,
two models compared, an equality) is V340 where it is written, since it is not a comparison of
one margin with one number.
"""

from __future__ import annotations

import dataclasses

from veritas_dsl.diagnostics import Span
from veritas_dsl.ir.probability import margin_bound
from veritas_dsl.lang import ast
from veritas_dsl.lang import typed as t
from veritas_dsl.lang.context import Context, Scope

#: Where ``proba`` would not be exact.
NOT_EXACT = "V340"
_HELP = "compare proba(m, x) with a number, e.g. proba(m, x) > 0.7, or use the margin m(x)"


class Probabilities:
    """Types ``proba(m, x)`` and its comparisons; ``expressions`` (an
    :class:`~veritas_dsl.lang.expressions.Expressions`) types its arguments."""

    def __init__(self, ctx: Context, expressions) -> None:
        self.ctx = ctx
        self.expressions = expressions

    def call(self, expr: ast.Call, scope: Scope) -> t.Lin | t.Proba:
        if len(expr.args) != 2:
            raise self.ctx.error(
                "V326", "proba takes a model and an input: proba(clf, x)", expr.span
            )
        model = self.expressions.value(expr.args[0], scope)
        if not isinstance(model, t.ModelRef):
            raise self.ctx.error(
                "V326", "the first argument of proba is a model", expr.args[0].span
            )
        ensemble = self.ctx.models[model.name]
        if not ensemble.probability:
            what = "a regression model" if ensemble.task == "regression" else ensemble.source
            raise self.ctx.error(
                NOT_EXACT,
                f"model `{model.name}` has no probability that is exact in its output",
                expr.args[0].span,
                label=what,
                help="only binary models whose probability is their output or its logistic "
                "function have one (an ensemble file saved before veritas-dsl recorded it has "
                "none: save the model again); compare the output itself",
            )
        call = dataclasses.replace(expr, func=model.name, args=expr.args[1:])
        margin = self.expressions.model_output(call, scope, 0)
        if ensemble.probability == "identity":
            return margin
        return t.Proba(model.name, margin)

    def compare(self, left: t.Proba, op: str, right, span: Span) -> t.LinCompare:
        """``proba(m, x) op c`` as ``m(x) op' b`` (``op`` already mirrored or negated)."""
        c = self.compared(right, op, span)
        bound = t.Lin.constant(margin_bound(c, op))
        return t.LinCompare(left.margin.plus(bound, -1.0), op, span)

    def expectation(self, statement: ast.Expect, value, text: str) -> t.Expectation:
        """``expect upper <= 0.9`` of a ``proba`` objective: the bound on its margin that
        decides every float64 margin as the probability would, and the probability written."""
        span = statement.value.span
        c = self.compared(value, statement.op, span)
        bound = t.Lin.constant(margin_bound(c, statement.op))
        return t.Expectation(statement.subject, statement.op, bound, text, statement.span, c)

    def compared(self, value, op: str, span: Span) -> float:
        """The number a probability is compared with by ``op``: a constant in (0, 1)."""
        if not isinstance(value, t.Lin) or value.kind != "constant" or value.row_dependent:
            raise self.not_exact(span, "a probability is compared with a number only")
        if op in ("==", "!="):
            raise self.not_exact(span, f"a probability is compared with <, <=, > or >=, not {op}")
        c = value.constant_value()
        if not 0 < c < 1:
            raise self.ctx.error(
                NOT_EXACT,
                f"a probability is compared with a number strictly between 0 and 1, not {c:g}",
                span,
                help="every probability is in (0, 1): this comparison would not depend on x",
            )
        return c

    def not_exact(self, span: Span, message: str = "") -> Exception:
        """The error for a logistic probability used other than compared with a number."""
        return self.ctx.error(
            NOT_EXACT,
            message or "a probability is not linear; it can only be compared with a number",
            span,
            help=_HELP,
        )
