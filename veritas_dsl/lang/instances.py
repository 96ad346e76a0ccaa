"""Comparisons of whole instances: ``x1 == x2`` and ``x == r`` tie them on every feature (but
those named after ``except``); ``x >= r`` (``<=``, ``<``, ``>``, with ``except``) is the
comparison on every feature, typed as the same comparisons written feature by feature.
"""

from __future__ import annotations

from veritas_dsl.diagnostics import Span
from veritas_dsl.lang import arith, ast
from veritas_dsl.lang import typed as t
from veritas_dsl.lang.context import Context


class Instances:
    """Types a comparison whose sides are an instance and an instance or a data row; a feature of
    each side is read by ``expressions`` (an :class:`~veritas_dsl.lang.expressions.Expressions`),
    as ``x.f`` is."""

    def __init__(self, ctx: Context, expressions) -> None:
        self.ctx = ctx
        self.expressions = expressions

    def compare(
        self,
        left: t.Instance,
        op: str,
        right: t.Instance | t.RowValue,
        span: Span,
        cond: ast.Compare,
        negated: bool,
    ) -> t.Condition:
        """``left op right``, ``op`` already negated when ``negated``."""
        if op == "!=":
            raise self.ctx.error(
                "V316",
                f"an instance is tied with == or compared feature by feature, not with {op}",
                span,
                help="compare features instead, e.g. x1.age != x2.age",
            )
        if right == left:
            raise self.ctx.error("V316", "an instance is always equal to itself", span)
        if op != "==":
            return self.each_feature(left, op, right, span, cond, negated)
        excepted = self.excepted(cond, tie=True)
        if isinstance(right, t.RowValue):
            return t.SameAsRow(left.name, right, excepted, span)
        return t.TieAll(left.name, right.name, excepted, span)

    def each_feature(self, left, op, right, span, cond, negated) -> t.Condition:
        """``x >= r`` with ``except``: the comparison on every feature but those named, each
        as ``x.f >= r.f`` is typed; negated (``op`` already is), one feature that breaks it
        suffices."""
        excepted = self.excepted(cond, tie=False)
        at = cond.operands[-1].span
        parts = []
        for f, feature in enumerate(self.ctx.features):
            if f not in excepted:
                a = self.expressions.feature_value(left, feature.name, at)
                b = self.expressions.feature_value(right, feature.name, at)
                diff = self.expressions.arith(arith.plus, span, a, b, -1.0)
                parts.append(t.LinCompare(diff, op, span))
        if not parts:
            raise self.ctx.error("V316", "`except` leaves no feature to compare", span)
        return t.EitherOf(tuple(parts)) if negated else t.AllOf(tuple(parts))

    def excepted(self, cond: ast.Compare, tie: bool) -> frozenset[int]:
        """The features ``except`` names, a one-hot group's name standing for its members. A
        member named alone frees nothing in a tie (its tied partners would pin it): an error."""
        excepted = set()
        for name in cond.excepted:
            if name.id in self.ctx.groups:
                excepted.update(self.ctx.groups[name.id])
            elif name.id in self.ctx.members and tie:
                group = self.ctx.members[name.id][0]
                raise self.ctx.error(
                    "V317",
                    f"`{name.id}` is a member of one-hot group `{group}`, "
                    "which `except` frees as a whole",
                    name.span,
                    help=f"write `except {group}`",
                )
            elif name.id in self.ctx.members:
                excepted.add(self.ctx.members[name.id][1])
            else:
                excepted.add(self.ctx.feature_of(name.id, name.span))
        return frozenset(excepted)
