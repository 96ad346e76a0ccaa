"""Typing of expressions and conditions: each AST expression becomes a typed value (a linear
form over outputs, features and constants, an instance, a distance, a class...) and each
condition a typed comparison, with a located error for anything the language does not allow.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from veritas_dsl.diagnostics import Span, suggest
from veritas_dsl.ir.logic import MIRRORED, NEGATED
from veritas_dsl.lang import arith, ast
from veritas_dsl.lang import typed as t
from veritas_dsl.lang.context import BUILTINS, Context, Failed, Scope
from veritas_dsl.lang.instances import Instances
from veritas_dsl.lang.probability import Probabilities
from veritas_dsl.lang.quantifiers import Quantifiers
from veritas_dsl.lang.scales import Scales
from veritas_dsl.names import SCALED


class Expressions:
    """Types expressions and conditions against the names ``ctx`` holds so far; a distance's
    scale is typed by :class:`Scales`, ``for m in V`` by :class:`Quantifiers` (``m`` then names
    one model of the family in the :class:`Scope`), a comparison of whole instances by
    :class:`Instances`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.scales = Scales(ctx, self)
        self.quantifiers = Quantifiers(ctx, self)
        self.instances = Instances(ctx, self)
        self.probabilities = Probabilities(ctx, self)

    # -- conditions -------------------------------------------------------------------------

    def condition(self, cond: ast.Cond, scope: Scope, negated: bool = False) -> t.Condition:
        if isinstance(cond, ast.ForEach):
            return self.quantifiers.for_each(cond, scope, negated)
        if isinstance(cond, ast.Not):
            return self.condition(cond.part, scope, not negated)
        if isinstance(cond, ast.And | ast.Or):
            parts = tuple(self.condition(p, scope, negated) for p in cond.parts)
            conjunctive = isinstance(cond, ast.And) != negated
            return t.AllOf(parts) if conjunctive else t.EitherOf(parts)
        values = [self.value(operand, scope) for operand in cond.operands]
        if cond.excepted and (len(cond.ops) != 1 or cond.ops[0] == "!=" or not _pair(values)):
            raise self.ctx.error(
                "V312",
                "`except` follows one comparison of two instances, `a == b` or `a >= b`",
                cond.span,
            )
        pairs = []
        for k, op in enumerate(cond.ops):
            span = join(cond.operands[k].span, cond.operands[k + 1].span)
            pairs.append(self.compare(values[k], op, values[k + 1], span, cond, scope, negated))
        if len(pairs) == 1:
            return pairs[0]
        # not (a < b < c) is (a >= b) or (b >= c)
        return t.EitherOf(tuple(pairs)) if negated else t.AllOf(tuple(pairs))

    def compare(self, left, op, right, span, cond: ast.Compare, scope, negated) -> t.Condition:
        """One comparison, typed by the kind of its left side. Long (over 80 lines) because each
        kind (linear, distance, changed count, class, tie, one-hot group) has its own rules and
        errors; a table of handlers would scatter what one reads together."""
        movable = t.Distance | t.Changed | t.ClassOf | t.GroupRef | t.Instance | t.Proba
        if isinstance(right, movable) and not isinstance(left, type(right)):
            left, right, op = right, left, MIRRORED[op]
        if negated:
            op = NEGATED[op]
        if isinstance(left, t.Proba):
            return self.probabilities.compare(left, op, right, span)
        if isinstance(left, t.Lin) and isinstance(right, t.Lin):
            diff = self.arith(arith.plus, span, left, right, -1.0)
            if diff.kind == "mixed":
                raise self.ctx.error(
                    "V313",
                    "this compares model outputs with input features",
                    span,
                    help="compare outputs with numbers, and features with numbers",
                )
            return t.LinCompare(diff, op, span)
        if isinstance(left, t.Distance | t.Changed) and _on_rows(left, scope):
            self.need_constant(right, span, self.describe(left))
            return t.MeasureOnRows(left, op, right, span)
        if isinstance(left, t.Distance):
            self.need_constant(right, span, "a distance")
            if op != "<=":
                help = (
                    "distances are exact; write <= (a strict bound is the same as <= a smaller one)"
                )
                if op in (">", ">=") or negated:
                    help = (
                        "only upper bounds on a distance are supported (the region must be convex)"
                    )
                raise self.ctx.error(
                    "V314", f"a distance can be bounded with <=, not {op}", span, help=help
                )
            return t.DistanceAtMost(left, right, span)
        if isinstance(left, t.Changed):
            self.need_constant(right, span, "a count of changed features")
            if op not in ("<=", "<"):
                raise self.ctx.error(
                    "V314", f"a count of changed features is bounded with <= or <, not {op}", span
                )
            return t.ChangedAtMost(left, right, op == "<", span)
        if isinstance(left, t.ClassOf):
            if op not in ("==", "!="):
                raise self.ctx.error("V315", f"classes are compared with == or !=, not {op}", span)
            if isinstance(right, t.Lin):
                self.need_constant(right, span, "a class")
                if not right.row_dependent:
                    k = right.constant_value()
                    n = max(2, self.ctx.n_outputs(left.model))
                    if not k.is_integer() or not 0 <= k < n:
                        raise self.ctx.error("V315", f"class {k:g} is not one of 0..{n - 1}", span)
            elif not isinstance(right, t.ClassOf):
                raise self.ctx.error(
                    "V315",
                    f"a class is compared with a class or a number, not {self.describe(right)}",
                    span,
                )
            return t.ClassCompare(left, right, op == "==", span)
        if isinstance(left, t.Instance) and isinstance(right, t.Instance | t.RowValue):
            return self.instances.compare(left, op, right, span, cond, negated)
        if isinstance(left, t.GroupRef) and isinstance(right, t.Member):
            if right.group != left.group:
                raise self.ctx.error(
                    "V317",
                    f"`{self.ctx.features[right.feature].name}` is not in group `{left.group}`",
                    span,
                    help=suggest(
                        self.ctx.features[right.feature].name,
                        [self.ctx.features[f].name for f in self.ctx.groups[left.group]],
                    ),
                )
            if op not in ("==", "!="):
                raise self.ctx.error(
                    "V317", f"a one-hot group is compared with == or !=, not {op}", span
                )
            return t.GroupIs(left.instance, right.feature, op == "==", span)
        raise self.ctx.error(
            "V318", f"cannot compare {self.describe(left)} with {self.describe(right)}", span
        )

    def need_constant(self, value, span, what) -> None:
        if not isinstance(value, t.Lin) or value.kind != "constant":
            raise self.ctx.error("V319", f"{what} is compared with a number", span)

    def outputs_only(self, cond: t.Condition, span: Span) -> None:
        if isinstance(cond, t.AllOf | t.EitherOf):
            for part in cond.parts:
                self.outputs_only(part, span)
        elif isinstance(cond, t.LinCompare) and cond.lin.kind in ("outputs", "constant"):
            return
        elif not isinstance(cond, t.ClassCompare):
            raise self.ctx.error(
                "V320",
                "the conclusion of a property may only constrain model outputs",
                getattr(cond, "span", span),
                help="move conditions on inputs before `=>`",
            )

    # -- expressions ------------------------------------------------------------------------

    def constant(self, expr: ast.Expr, scope: Scope) -> float:
        value = self.value(expr, scope)
        if not isinstance(value, t.Lin) or value.kind != "constant" or value.row_dependent:
            raise self.ctx.error(
                "V321", "a number is expected here", expr.span, f"this is {self.describe(value)}"
            )
        return value.constant_value()

    def value(self, expr: ast.Expr, scope: Scope) -> t.Value:
        if isinstance(expr, ast.Number):
            self.arith(arith.literal, expr.span, expr.text, expr.value)
            return t.Lin.constant(expr.value)
        if isinstance(expr, ast.Name):
            return self.name(expr, scope)
        if isinstance(expr, ast.Attr):
            return self.attr(expr, scope)
        if isinstance(expr, ast.Index):
            return self.index(expr, scope)
        if isinstance(expr, ast.Call):
            return self.call(expr, scope, output=None)
        if isinstance(expr, ast.Neg):
            return self.linear(expr.operand, scope).times(-1.0)
        if isinstance(expr, ast.Arith):
            return self.arithmetic(expr, scope)
        if isinstance(expr, ast.EachOf):
            raise self.quantifiers.objective_only(expr)
        raise AssertionError(f"unknown expression {expr!r}")

    def arithmetic(self, expr: ast.Arith, scope: Scope) -> t.Lin:
        """A chain, left to right, in a loop: a sum of 10,000 terms is no deeper than one."""
        first = expr.operands[0]
        result = self.linear(first, scope)
        for op, operand in zip(expr.ops, expr.operands[1:], strict=True):
            right = self.linear(operand, scope)
            span = join(first.span, operand.span)
            if op in "+-":
                result = self.arith(arith.plus, span, result, right, 1.0 if op == "+" else -1.0)
            elif op == "*":
                if not (arith.is_number(right) or arith.is_number(result)):
                    raise self.ctx.error(
                        "V322",
                        "only a number can multiply",
                        span,
                        help="the language is linear: scale outputs and features by numbers",
                    )
                if not arith.is_number(right):
                    result, right = right, result
                result = self.arith(arith.times, span, result, right.constant_value())
            else:
                if not arith.is_number(right):
                    raise self.ctx.error("V322", "division is by a non-zero number", operand.span)
                divisor = right.constant_value()
                at = operand.span if divisor == 0 or math.isinf(divisor) else span
                result = self.arith(arith.divide, at, result, divisor)
        return result

    def arith(self, operation, span: Span, *args):
        """``operation(*args)`` (one of :mod:`arith`'s), its problem located at ``span``."""
        try:
            return operation(*args)
        except arith.NumberError as error:
            raise self.ctx.error(error.code, error.message, span, help=error.help) from None

    def linear(self, expr: ast.Expr, scope: Scope) -> t.Lin:
        value = self.value(expr, scope)
        if isinstance(value, t.Proba):
            raise self.probabilities.not_exact(expr.span)
        if not isinstance(value, t.Lin):
            raise self.ctx.error(
                "V323", f"{self.describe(value)} cannot be used in arithmetic", expr.span
            )
        return value

    def name(self, expr: ast.Name, scope: Scope) -> t.Value:
        name = expr.id
        if name in scope.models:
            return t.ModelRef(scope.models[name])
        if name in self.ctx.families:
            raise self.quantifiers.not_a_model(name, expr.span)
        if name in scope.instances:
            return t.Instance(name)
        if name == scope.batch:
            return t.RowValue(scope.batch_data, None, name)
        if name in self.ctx.constants:
            return t.Lin.constant(self.ctx.constants[name])
        if name in self.ctx.models:
            return t.ModelRef(name)
        if name in self.ctx.datasets:
            raise self.ctx.error(
                "V211", f"`{name}` is a data set; pick a row", expr.span, help=f"e.g. {name}[0]"
            )
        if name in self.ctx.members:
            group, f = self.ctx.members[name]
            return t.Member(group, f)
        if name in self.ctx.broken or name in self.ctx.broken_groups or self.ctx.features_unknown:
            raise Failed  # a failed declaration, or maybe a feature of a model that failed
        if name in self.ctx.feature_index:
            raise self.ctx.error(
                "V212",
                f"`{name}` is a feature; say whose",
                expr.span,
                help=f"e.g. {min(scope.instances, default='x')}.{_written(name)}",
            )
        known = [
            *scope.instances,
            *self.ctx.constants,
            *self.ctx.models,
            *self.ctx.datasets,
            *self.ctx.members,
        ]
        if scope.batch:
            known.append(scope.batch)
        raise self.ctx.error(
            "V213", f"unknown name `{name}`", expr.span, "not declared", help=suggest(name, known)
        )

    def attr(self, expr: ast.Attr, scope: Scope) -> t.Value:
        obj = self.value(expr.obj, scope)
        if isinstance(obj, t.Instance):
            if expr.name in self.ctx.groups:
                return t.GroupRef(obj.name, expr.name)
            if expr.name in self.ctx.broken_groups and expr.name not in self.ctx.feature_index:
                raise Failed
            if obj.name == scope.batch and expr.name not in self.ctx.feature_index:
                return self.filter_column(expr, scope)
        if isinstance(obj, t.Instance | t.RowValue):
            return self.feature_value(obj, expr.name, expr.name_span)
        raise self.ctx.error("V215", f"{self.describe(obj)} has no features", expr.span)

    def feature_value(self, obj: t.Instance | t.RowValue, name: str, span: Span) -> t.Lin:
        """``obj.name``: an instance's feature, or a row's value of it (the batch row's, a
        symbol until the row is known)."""
        if isinstance(obj, t.Instance):
            return t.Lin.of({("feat", obj.name, self.ctx.feature_of(name, span)): 1.0})
        column = self.ctx.column_of(obj.data, name, span)
        if obj.index is None:
            return t.Lin.of({("rowcol", name): 1.0})
        return t.Lin.constant(float(self.ctx.datasets[obj.data].values[obj.index, column]))

    def filter_column(self, expr: ast.Attr, scope: Scope) -> t.Lin:
        """``r.label``: a row filter's row (see :class:`t.Batch`) also has the data set's
        columns that are not features."""
        if self.ctx.features_unknown:
            raise Failed
        self.ctx.column_of(scope.batch_data, expr.name, expr.name_span)
        return t.Lin.of({("rowcol", expr.name): 1.0})

    def index(self, expr: ast.Index, scope: Scope) -> t.Value:
        if isinstance(expr.obj, ast.Call) and expr.obj.func in scope.models:
            obj = dataclasses.replace(expr.obj, func=scope.models[expr.obj.func])
            expr = dataclasses.replace(expr, obj=obj)
        if isinstance(expr.obj, ast.Call) and expr.obj.func in self.ctx.models:
            k = self.constant(expr.index, scope)
            n = self.ctx.n_outputs(expr.obj.func)
            if not k.is_integer() or not 0 <= k < n:
                raise self.ctx.error(
                    "V324", f"model `{expr.obj.func}` has outputs 0..{n - 1}", expr.index.span
                )
            return self.call(expr.obj, scope, output=int(k))
        if isinstance(expr.obj, ast.Name) and expr.obj.id in self.ctx.datasets:
            data = expr.obj.id
            i = self.row_index(expr.index, len(self.ctx.datasets[data]))
            return t.RowValue(data, i, f"{data}[{i}]")
        if isinstance(expr.obj, ast.Name) and expr.obj.id in self.ctx.broken:
            raise Failed
        if isinstance(expr.obj, ast.Call) and expr.obj.func in self.ctx.broken:
            raise Failed
        raise self.ctx.error(
            "V325",
            "only data sets (rows) and model outputs can be indexed",
            expr.span,
            help="e.g. test[3], or clf(x)[2] for output 2",
        )

    def model_output(self, expr: ast.Call, scope: Scope, output: int | None) -> t.Value:
        """``clf(x)`` or ``clf(x)[k]`` (``output`` k; None when not indexed)."""
        func, args = expr.func, expr.args
        if len(args) != 1:
            raise self.ctx.error("V326", f"model `{func}` takes one input", expr.span)
        subject = self.value(args[0], scope)
        if output is None:
            if self.ctx.n_outputs(func) > 1:
                raise self.ctx.error(
                    "V324",
                    f"model `{func}` has {self.ctx.n_outputs(func)} outputs; pick one",
                    expr.span,
                    help=f"e.g. {func}({_text(args[0])})[0]",
                )
            output = 0
        if isinstance(subject, t.Instance):
            return t.Lin.of({("out", func, subject.name, output): 1.0})
        if isinstance(subject, t.RowValue):
            if subject.index is None:
                return t.Lin.of({("rowout", func, output): 1.0})
            row = self.ctx.row_point(subject)
            return t.Lin.constant(float(np.atleast_1d(self.ctx.models[func].eval(row))[output]))
        raise self.ctx.error(
            "V326",
            f"model `{func}` takes an instance or a data row, not {self.describe(subject)}",
            args[0].span,
        )

    def call(self, expr: ast.Call, scope: Scope, output: int | None) -> t.Value:
        expr = self.quantifiers.as_model_call(expr, scope)
        func = expr.func
        args = expr.args
        if func in self.ctx.broken:
            raise Failed
        if expr.keywords and func not in SCALED:
            keyword = expr.keywords[0]
            raise self.ctx.error(
                "V331",
                f"`{func}` takes no argument `{keyword.name}`",
                keyword.name_span,
                help="only distances take one: l1(x, r, scale = mad(train))",
            )
        if func in self.ctx.models:
            return self.model_output(expr, scope, output)
        if func == "proba":
            return self.probabilities.call(expr, scope)
        if func in ("class", "vote"):
            if len(args) != 2:
                raise self.ctx.error(
                    "V326", f"{func} takes a model and an input: {func}(clf, x)", expr.span
                )
            model = self.value(args[0], scope)
            if not isinstance(model, t.ModelRef):
                raise self.ctx.error(
                    "V326", f"the first argument of {func} is a model", args[0].span
                )
            if self.ctx.models[model.name].task == "regression":
                raise self.ctx.error(
                    "V327",
                    f"model `{model.name}` is a regression model; it has no class",
                    args[0].span,
                )
            subject = self.value(args[1], scope)
            if not isinstance(subject, t.Instance | t.RowValue):
                raise self.ctx.error(
                    "V326",
                    f"the second argument of {func} is an instance or a data row",
                    args[1].span,
                )
            return t.ClassOf(model.name, subject, vote=func == "vote")
        if func in SCALED:
            if len(args) != 2:
                raise self.ctx.error(
                    "V326", f"{func} takes two inputs: {func}(x, test[0])", expr.span
                )
            a, b = self.value(args[0], scope), self.value(args[1], scope)
            if isinstance(b, t.Instance) and not isinstance(a, t.Instance):
                a, b = b, a
            if not isinstance(a, t.Instance) or not isinstance(b, t.Instance | t.RowValue):
                raise self.ctx.error(
                    "V326", f"{func} relates an instance with an instance or a data row", expr.span
                )
            weights, zero = self.scales.distance_weights(func, expr)
            if func == "changed":
                return t.Changed(a.name, b)
            return t.Distance(func, a.name, b, weights, zero)
        known = [*self.ctx.models, *BUILTINS]
        raise self.ctx.error(
            "V216",
            f"unknown function `{func}`",
            expr.func_span,
            help=suggest(func, known) or f"models are {', '.join(self.ctx.models) or 'none'}",
        )

    def row_index(self, expr: ast.Expr, limit: int) -> int:
        value = self.constant(expr, Scope())
        if not value.is_integer() or not 0 <= value < limit:
            raise self.ctx.error("V306", f"row index {value:g} is not in 0..{limit - 1}", expr.span)
        return int(value)

    def describe(self, value) -> str:
        if isinstance(value, t.Lin):
            return {
                "constant": "a number",
                "features": "input features",
                "outputs": "model outputs",
                "mixed": "a mix of outputs and features",
            }[value.kind]
        return {
            t.Instance: "an instance",
            t.RowValue: "a data row",
            t.ModelRef: "a model",
            t.GroupRef: "a one-hot group",
            t.Member: "a one-hot member",
            t.Distance: "a distance",
            t.Changed: "a count of changed features",
            t.ClassOf: "a class",
            t.Proba: "a probability",
        }.get(type(value), "this")


def _on_rows(measure: t.Distance | t.Changed, scope: Scope) -> bool:
    """Whether a distance or changed count relates bound rows only: a row filter types its row
    as an instance named like the batch (a query's own instances never are), the other side is
    that row or a data row. Such a measure is a constant per row, not a region of inputs."""
    other = measure.other
    return measure.instance == scope.batch and (
        not isinstance(other, t.Instance) or other.name == scope.batch
    )


def join(a: Span, b: Span) -> Span:
    return Span(a.file, a.line, a.column, b.end_line, b.end_column)


def _written(name: str) -> str:
    """A name as a spec writes it: in backquotes unless it is a plain identifier."""
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", name) else f"`{name}`"


def _text(expr: ast.Expr) -> str:
    if isinstance(expr, ast.Name):
        return expr.id
    return "x"


def _pair(values) -> bool:
    """Whether ``values`` are an instance and an instance or a row, compared as wholes."""
    kinds = t.Instance | t.RowValue
    return len(values) == 2 and all(isinstance(v, kinds) for v in values) and any(
        isinstance(v, t.Instance) for v in values
    )
