"""The ``scale`` of a distance: ``l1(x, r, scale = mad(train))``, ``scale = std(train)``,
``scale = {income: 1000, age: 5}`` (unnamed features 1; a one-hot group's name scales each
member) or ``scale = 1000`` (every feature),
typed into the per-feature weights of the query IR (:data:`veritas_dsl.ir.query.Weights`):
``1 / scale`` rounded toward 0 (:func:`weight`), so that whatever is within a bound under exact
division is within it here too (the two differ by less than ``2**-52`` relative).

A statistic is computed once per spec and data set, over all the data set's rows (a batch's
scale does not change from row to row). A feature whose statistic is 0 (a column with one
value in most rows, as binary features often are) keeps scale 1, with a located warning when
the query lets the distance see it (:func:`zero_scale_warning`: not when ``x == r except ...``
holds it at the row the distance is from).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from veritas_dsl import names
from veritas_dsl.diagnostics import Diagnostic, Severity, Span, suggest
from veritas_dsl.lang import ast
from veritas_dsl.lang import typed as t
from veritas_dsl.lang.context import Context, Failed, Scope

#: The statistics a scale may be: the median absolute deviation from the median (MAD, the
#: counterfactual literature's choice, Wachter et al. 2017) and the standard deviation (ddof 0).
STATISTICS = names.STATISTICS
#: A feature whose statistic is 0 keeps scale 1; this warning says which.
ZERO_SCALE = "V604"


def weight(scale: float) -> float:
    """``1 / scale`` rounded toward 0 to a float64 (``scale`` positive and finite)."""
    w = 1.0 / scale
    if Fraction(w) * Fraction(scale) > 1:
        w = math.nextafter(w, 0.0)
    return w


def mad(values: np.ndarray) -> np.ndarray:
    """Per column, the median of the absolute deviations from the column's median."""
    return np.median(np.abs(values - np.median(values, axis=0)), axis=0)


def std(values: np.ndarray) -> np.ndarray:
    """Per column, the standard deviation (of the rows as they are: ddof 0)."""
    return np.std(values, axis=0)


class Scales:
    """Types the keyword arguments of a distance into its weights; a scale's numbers are typed by
    ``expressions`` (an :class:`~veritas_dsl.lang.expressions.Expressions`)."""

    def __init__(self, ctx: Context, expressions) -> None:
        self.ctx = ctx
        self.expressions = expressions

    def distance_weights(
        self, func: str, call: ast.Call
    ) -> tuple[tuple[float, ...] | None, t.ZeroScale | None]:
        """The weights of distance ``func`` (``l1``, ``l2``, ``linf`` or ``changed``) from the
        call's keywords, None when it has no ``scale``; and the features of a statistic of 0."""
        weights, zero = None, None
        for keyword in call.keywords:
            if keyword.name != "scale":
                raise self.ctx.error(
                    "V331",
                    f"`{func}` takes no argument `{keyword.name}`",
                    keyword.name_span,
                    help=suggest(keyword.name, ["scale"]) or "",
                )
            if func == "changed":
                raise self.ctx.error(
                    "V331",
                    "`changed` counts features; it takes no scale",
                    keyword.span,
                    help="scale a distance: l1(x, r, scale = mad(train))",
                )
            if weights is not None:
                raise self.ctx.error("V331", "`scale` is given twice", keyword.span)
            scales, zero = self.scales_of(keyword.value)
            weights = tuple(weight(s) for s in scales)
        return weights, zero

    def scales_of(self, value: ast.Expr | ast.PerFeature) -> tuple[list[float], t.ZeroScale | None]:
        """One positive finite scale per feature, in the feature space's order; and the
        features of a statistic of 0, which keep scale 1."""
        if self.ctx.features_unknown:
            raise Failed  # the failed model's error says it all
        n = len(self.ctx.features)
        if isinstance(value, ast.PerFeature):
            scales = [1.0] * n
            named: dict[int, Span] = {}
            for entry in value.entries:
                if entry.name in self.ctx.broken_groups:
                    raise Failed
                members = self.ctx.groups.get(entry.name) or (
                    self.ctx.feature_of(entry.name, entry.name_span),
                )  # a one-hot group: each member
                scale = self.one_scale(entry.value)
                for f in members:
                    if f in named:
                        raise self.ctx.error(
                            "V331",
                            f"feature `{self.ctx.features[f].name}` is scaled twice",
                            entry.name_span,
                            notes=[f"first scaled at {named[f]}"],
                        )
                    named[f] = entry.name_span
                    scales[f] = scale
            return scales, None
        if isinstance(value, ast.Call) and value.func in STATISTICS:
            return self.statistic(value)
        if isinstance(value, ast.Call) and value.func not in self.ctx.models:
            raise self.ctx.error(
                "V216",
                f"unknown statistic `{value.func}`",
                value.func_span,
                help="a scale is mad(DATA), std(DATA), a number or {feature: number, ...}",
            )
        return [self.one_scale(value)] * n, None

    def one_scale(self, expr: ast.Expr) -> float:
        scale = self.expressions.constant(expr, Scope())
        if not (math.isfinite(scale) and scale > 0):
            raise self.ctx.error(
                "V331",
                f"a scale must be positive and finite, not {scale:g}",
                expr.span,
                help="a distance divides each feature's change by its scale",
            )
        if not math.isfinite(1.0 / scale):
            raise self.ctx.error(
                "V331",
                f"a scale of {scale!r} is too small: one over it is beyond a double",
                expr.span,
                help="measure the feature in larger units",
            )
        return scale

    def statistic(self, call: ast.Call) -> tuple[list[float], t.ZeroScale | None]:
        """``mad(DATA)`` or ``std(DATA)`` per feature, over the data set's rows; 0 becomes 1,
        and those features are given."""
        if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], ast.Name):
            raise self.ctx.error(
                "V326", f"{call.func} takes a data set: {call.func}(train)", call.span
            )
        source = call.args[0]
        dataset = self.ctx.dataset_named(source)
        if len(dataset) == 0:
            raise self.ctx.error(
                "V414",
                f"data `{source.id}` has no rows to take a scale from",
                source.span,
                help="name a data set with rows, or give the scales: {income: 1000, ...}",
            )
        columns = [self.ctx.column_of(source.id, f.name, source.span) for f in self.ctx.features]
        key = (call.func, source.id)
        if key not in self.ctx.statistics:
            values = dataset.values[:, columns].astype(np.float64)
            self.ctx.statistics[key] = (mad if call.func == "mad" else std)(values).tolist()
        scales = list(self.ctx.statistics[key])
        zero = tuple(f for f, s in enumerate(scales) if not s > 0)
        found = t.ZeroScale(call.func, source.id, zero, call.span) if zero else None
        return [s if s > 0 else 1.0 for s in scales], found


def zero_scale_warning(zero: t.ZeroScale, names: list[str]) -> Diagnostic:
    """The warning that the features ``names`` of ``zero`` keep scale 1."""
    shown = ", ".join(f"`{name}`" for name in names[:5]) + (", ..." if len(names) > 5 else "")
    return Diagnostic(
        ZERO_SCALE,
        f"{zero.statistic} of {shown} over `{zero.data}` is 0; "
        f"{'it keeps' if len(names) == 1 else 'they keep'} scale 1",
        zero.span,
        "a statistic of 0",
        ("a feature with one value in most rows has a MAD of 0",),
        help="give those features a scale: {feature: number, ...}",
        severity=Severity.WARNING,
    )
