"""Checked spec to query IR: one :class:`Query` per query, or per row of a ``for`` query.

This is the only place that knows both the language and the IR. It binds the batch row, spells
out what the language's sugar means (``class``, ties with ``except``, one-hot groups, which
``changed`` counts as one feature, strict bounds on float32 inputs), and leaves the engines
nothing but mathematics.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from veritas_dsl.diagnostics import Diagnostic, Span, SpecError
from veritas_dsl.float32 import ceil32_exact, floor32_exact, next_down, next_up
from veritas_dsl.ir.evaluate import (
    as_point,
    changed_units,
    exact_distance,
    holds,
    model_outputs,
    model_votes,
    reference_point,
    vote_counts,
)
from veritas_dsl.ir.logic import MIRRORED, NEGATED, compare, drop_infinite, negate
from veritas_dsl.ir.lowered import Expectation, Lowered, Origin, Rows
from veritas_dsl.ir.query import (
    AnyOf,
    AtMostKChanged,
    Ball,
    Constraint,
    Find,
    Goal,
    Interval,
    Linear,
    LinearTerm,
    Maximize,
    MaximizeMin,
    Minimize,
    MinimizeDistance,
    MinimizeMax,
    OneHot,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Prove,
    Query,
    Row,
    Tie,
    VoteMargin,
    change_units,
    vote_labels,
    vote_wins,
    walk,
)
from veritas_dsl.lang import arith
from veritas_dsl.lang import typed as t

#: A condition that cannot hold (an empty disjunction).
FALSE = AnyOf(())


def lower(spec: t.CheckedSpec, checked: t.CheckedQuery) -> list[Lowered]:
    """The IR queries of ``checked``: one, or one per row of its batch that its filter keeps."""
    where = origin(checked)
    if checked.batch is None:
        return [_Lowering(spec, checked, where, None).run()]
    return [
        _Lowering(spec, checked, where, index).run()
        for index in range(checked.batch.start, checked.batch.stop)
        if _Lowering(spec, checked, where, index).keeps()
    ]


def origin(checked: t.CheckedQuery) -> Origin:
    """Where ``checked`` came from, as the running layer and the reports see it."""
    batch = checked.batch
    rows = None
    if batch is not None:
        rows = Rows(batch.name, batch.data, batch.start, batch.stop, batch.filter_span)
    probability = isinstance(checked.goal, t.OptimizeOutputs) and checked.goal.probability
    return Origin(
        checked.name, checked.is_property, checked.span, rows, checked.engines, probability
    )


class _Lowering:
    def __init__(
        self, spec: t.CheckedSpec, checked: t.CheckedQuery, where: Origin, row: int | None
    ) -> None:
        self.spec = spec
        self.checked = checked
        self.origin = where
        self.row = row
        self.data = checked.batch.data if checked.batch else None
        self.spans: dict[object, tuple[Span, ...]] = {}

    def run(self) -> Lowered:
        checked = self.checked
        constraints: list[Constraint] = []
        for group in self.spec.groups.values():
            constraints += [OneHot(instance, group) for instance in checked.instances]
        for condition in checked.constraints:
            constraints += self.condition(condition)
        goal = self.goal(checked.goal)
        if isinstance(goal, Prove):
            goal = Prove(drop_infinite(goal.conclusion))
        name = checked.name if self.row is None else f"{checked.name}[{self.row}]"
        # `x.a + x.b <= inf` holds for every input: the IR keeps right-hand sides finite.
        constraints = drop_infinite(tuple(constraints))
        query = Query(
            name, self.spec.features, checked.instances, self.spec.models, constraints, goal
        )
        expectations = tuple(
            Expectation(
                e.subject,
                e.op,
                None if e.value is None else self.constant(e.value, e.span),
                e.text,
                e.span,
                e.probability,
            )
            for e in checked.expectations
        )
        return Lowered(query, self.origin, self.row, expectations, self.spans)

    def keeps(self) -> bool:
        """Whether the batch's filter holds on this row: lowered with the row as an instance
        and decided by the IR's reference semantics at the row's float32 point, exactly as an
        engine would decide the same condition on an input equal to the row."""
        batch = self.checked.batch
        if batch.filter is None:
            return True
        constraints = drop_infinite(tuple(self.lower_condition(batch.filter)))
        models = self.spec.models
        query = Query(f"{self.checked.name} filter", self.spec.features, (batch.name,), models)
        inputs = {batch.name: as_point(self.batch_row().values, query.n_features)}
        outputs = model_outputs(query, inputs)
        votes = model_votes(query, inputs) if _votes(constraints) else None
        return all(holds(c, inputs, outputs, votes) for c in constraints)

    # -- values ---------------------------------------------------------------------------

    def batch_row(self) -> Row:
        return self.spec.row(self.data, self.row)

    def rows_of(self, value: t.RowValue) -> Row:
        index = self.row if value.index is None else value.index
        return self.spec.row(value.data, index)

    def symbol_value(self, symbol: t.Symbol) -> float:
        """The number a constant symbol stands for, with the batch row bound."""
        if symbol == t.ONE:
            return 1.0
        dataset = self.spec.datasets[self.data]
        if symbol[0] == "rowcol":
            return float(dataset.values[self.row, dataset.columns.index(symbol[1])])
        _, model, k = symbol
        point = np.asarray(self.batch_row().values, dtype=np.float32)[None, :]
        return float(np.atleast_1d(self.spec.models[model].eval(point)[0])[k])

    def split(self, lin: t.Lin, span: Span) -> tuple[dict, float]:
        """Unknown terms and the constant (batch-row symbols evaluated) of an affine form; a
        constant that the row's values take out of range is an error located at ``span``."""
        unknown, constant = {}, t.Lin(())
        try:
            for symbol, coef in lin.coefs:
                if symbol[0] in ("feat", "out"):
                    unknown[symbol] = coef
                else:
                    term = arith.times(t.Lin.constant(self.symbol_value(symbol)), coef)
                    constant = arith.plus(constant, term)
        except arith.NumberError as error:
            message = f"{error.message} (on row {self.batch_row().label})"
            raise SpecError([Diagnostic(error.code, message, span, help=error.help)]) from None
        return unknown, constant.constant_value()

    def constant(self, lin: t.Lin, span: Span) -> float:
        return self.split(lin, span)[1]

    def output_term(self, lin: t.Lin, span: Span) -> OutputTerm:
        unknown, constant = self.split(lin, span)
        atoms = tuple(OutputAtom(c, model, inst, k) for (_, model, inst, k), c in unknown.items())
        return OutputTerm(atoms, constant)

    def reference(self, other: t.Instance | t.RowValue) -> Row | str:
        return other.name if isinstance(other, t.Instance) else self.rows_of(other)

    # -- conditions -----------------------------------------------------------------------

    def condition(self, c: t.Condition) -> list[Constraint]:
        constraints = self.lower_condition(c)
        if isinstance(c, t.EitherOf):
            (either,) = constraints
            for part, alternative in zip(c.parts, either.alternatives, strict=True):
                self.remember(alternative, _span(part))
            self.remember(either, _span(c))
        elif not isinstance(c, t.AllOf):
            for constraint in constraints:
                self.remember(constraint, c.span)
        return constraints

    def remember(self, key: object, span: Span) -> None:
        known = self.spans.get(key, ())
        if span not in known:
            self.spans[key] = (*known, span)

    def lower_condition(self, c: t.Condition) -> list[Constraint]:
        if isinstance(c, t.AllOf):
            return [x for part in c.parts for x in self.condition(part)]
        if isinstance(c, t.EitherOf):
            return [AnyOf(tuple(tuple(self.condition(part)) for part in c.parts))]
        if isinstance(c, t.LinCompare):
            return self.lin_compare(c)
        if isinstance(c, t.DistanceAtMost):
            d = c.distance
            radius = self.constant(c.bound, c.span)
            return [Ball(d.norm, d.instance, self.reference(d.other), radius, d.weights)]
        if isinstance(c, t.ChangedAtMost):
            bound = self.constant(c.bound, c.span)
            if math.isinf(bound):
                return [] if bound > 0 else [FALSE]
            k = math.ceil(bound) - 1 if c.strict else math.floor(bound)
            if k < 0:
                return [FALSE]
            k = min(k, len(self.spec.features))  # `changed(x, r) <= 1e300`: an int engines hold
            units = change_units(len(self.spec.features), self.spec.groups.values())
            return [AtMostKChanged(c.changed.instance, self.reference(c.changed.other), k, units)]
        if isinstance(c, t.MeasureOnRows):
            return [] if self.measure_holds(c) else [FALSE]
        if isinstance(c, t.ClassCompare):
            return self.class_compare(c)
        if isinstance(c, t.TieAll):
            n = len(self.spec.features)
            return [Tie(c.first, c.second, f) for f in range(n) if f not in c.excepted]
        if isinstance(c, t.SameAsRow):
            values = self.rows_of(c.row).values
            return [
                Interval(c.instance, f, v, v) for f, v in enumerate(values) if f not in c.excepted
            ]
        if isinstance(c, t.GroupIs):
            value = 1.0 if c.equal else 0.0
            return [Interval(c.instance, c.feature, value, value)]
        raise AssertionError(f"unknown condition {c!r}")

    def lin_compare(self, c: t.LinCompare) -> list[Constraint]:
        unknown, constant = self.split(c.lin, c.span)
        if not unknown:
            return [] if compare(constant, c.op, 0) else [FALSE]
        if c.op == "!=":
            return [
                AnyOf(
                    (
                        (self.compare_unknown(unknown, constant, "<", c),),
                        (self.compare_unknown(unknown, constant, ">", c),),
                    )
                )
            ]
        if c.op == "==" and next(iter(unknown))[0] == "out":
            return [
                self.compare_unknown(unknown, constant, ">=", c),
                self.compare_unknown(unknown, constant, "<=", c),
            ]
        return [self.compare_unknown(unknown, constant, c.op, c)]

    def compare_unknown(
        self, unknown: dict, constant: float, op: str, c: t.LinCompare
    ) -> Constraint:
        """``sum(unknown) + constant op 0`` as one IR constraint."""
        if next(iter(unknown))[0] == "out":
            term = OutputTerm(tuple(OutputAtom(k, m, i, o) for (_, m, i, o), k in unknown.items()))
            return OutputConstraint(term, op, -constant)
        if len(unknown) == 1:
            (((_, instance, f), coef),) = unknown.items()
            return _interval(instance, f, coef, constant, op)
        if op in ("<", ">"):
            message = "a strict comparison between several features is not supported"
            help = "write <= or >= (inputs are float32: move the bound by the step you need)"
            raise SpecError([Diagnostic("V328", message, c.span, help=help)])
        terms = tuple(LinearTerm(k, i, f) for (_, i, f), k in unknown.items())
        return Linear(terms, op, -constant)

    def measure_holds(self, c: t.MeasureOnRows) -> bool:
        """A distance or changed count between the filter's row and a row, decided by the IR's
        reference semantics on their float32 values (exact, as for a Ball or AtMostKChanged)."""
        bound = self.constant(c.bound, c.span)
        m = c.measure
        inputs = {m.instance: as_point(self.batch_row().values, len(self.spec.features))}
        other = self.reference(m.other)
        if isinstance(m, t.Changed):
            units = change_units(len(self.spec.features), self.spec.groups.values())
            value = changed_units(AtMostKChanged(m.instance, other, 0, units), inputs)
        else:
            point = reference_point(other, inputs)
            value = exact_distance(m.norm, inputs[m.instance], point, m.weights)
        return compare(value, c.op, bound)  # Fraction and int compare with floats exactly

    def class_compare(self, c: t.ClassCompare) -> list[Constraint]:
        left = c.left
        right = c.right
        if isinstance(right, t.Lin):
            k = self.constant(right, c.span)
            if not k.is_integer() or not 0 <= k < max(2, self.spec.models[left.model].n_outputs):
                return [] if not c.equal else [FALSE]
            if isinstance(left.subject, t.RowValue):
                return [] if (self.row_class(left) == k) == c.equal else [FALSE]
            return self.class_is(left, int(k), c.equal)
        constant_left = isinstance(left.subject, t.RowValue)
        if constant_left and isinstance(right.subject, t.RowValue):
            same = self.row_class(left) == self.row_class(right)
            return [] if same == c.equal else [FALSE]
        if constant_left:
            left, right = right, left
        if isinstance(right.subject, t.RowValue):
            return self.class_is(left, self.row_class(right), c.equal)
        # Two instances: the classes agree when both are k, for some k.
        n = max(2, self.spec.models[left.model].n_outputs, self.spec.models[right.model].n_outputs)
        both = [
            tuple(self.class_is(left, k, True) + self.class_is(right, k, True)) for k in range(n)
        ]
        if c.equal:
            return [AnyOf(tuple(both))]
        differ = [
            tuple(self.class_is(left, a, True) + self.class_is(right, b, True))
            for a in range(n)
            for b in range(n)
            if a != b
        ]
        return [AnyOf(tuple(differ))]

    def row_class(self, value: t.ClassOf) -> int:
        point = np.asarray(self.rows_of(value.subject).values, dtype=np.float32)[None, :]
        model = self.spec.models[value.model]
        if value.vote:
            return int(np.argmax(vote_counts(model, point)[0]))
        return int(model.predict_class(point)[0])

    def class_is(self, value: t.ClassOf, k: int, equal: bool) -> list[Constraint]:
        """``class(model, instance) == k`` (or ``!=``) as output constraints.

        Binary: class 1 is an output strictly above the threshold. Multiclass: the first largest
        output wins, so class k beats every earlier class strictly and every later one or ties.
        Votes (``vote(model, instance)``) follow the same rule on the count of trees per class.
        """
        model = self.spec.models[value.model]
        instance = value.subject.name
        if value.vote:
            wins = vote_wins(value.model, instance, k, vote_labels(model))
            return list(wins) if equal else [negate(wins)]
        if model.task == "binary":
            term = OutputTerm((OutputAtom(1.0, value.model, instance, 0),))
            above = (k == 1) == equal
            return [OutputConstraint(term, ">" if above else "<=", model.class_threshold)]
        wins = []
        for j in range(model.n_outputs):
            if j == k:
                continue
            term = OutputTerm(
                (
                    OutputAtom(1.0, value.model, instance, k),
                    OutputAtom(-1.0, value.model, instance, j),
                )
            )
            wins.append(OutputConstraint(term, ">" if j < k else ">=", 0.0))
        if equal:
            return wins
        return [AnyOf(tuple((_negate(w),) for w in wins))] if wins else [FALSE]

    # -- goals ----------------------------------------------------------------------------

    def goal(self, goal: t.Goal) -> Goal:
        if isinstance(goal, t.OptimizeOutputs):
            term = self.output_term(goal.lin, goal.span)
            return Maximize(term) if goal.sense == "maximize" else Minimize(term)
        if isinstance(goal, t.OptimizeWorst):
            terms = tuple(self.output_term(lin, goal.span) for lin in goal.lins)
            return MaximizeMin(terms) if goal.sense == "maximize" else MinimizeMax(terms)
        if isinstance(goal, t.ClosestDistance):
            d = goal.distance
            return MinimizeDistance(d.norm, d.instance, self.reference(d.other), d.weights)
        if isinstance(goal, t.ProveThat):
            return Prove(tuple(self.condition(goal.conclusion)))
        return Find()


def _span(c: t.Condition) -> Span:
    """The text of a condition, from its first comparison to its last."""
    if isinstance(c, t.AllOf | t.EitherOf):
        first, last = _span(c.parts[0]), _span(c.parts[-1])
        return Span(first.file, first.line, first.column, last.end_line, last.end_column)
    return c.span


def _votes(constraints: tuple[Constraint, ...]) -> bool:
    return any(isinstance(c, VoteMargin) for c in walk(constraints))


def _negate(constraint: OutputConstraint) -> OutputConstraint:
    return OutputConstraint(constraint.term, NEGATED[constraint.op], constraint.rhs)


_BEYOND32 = Fraction(2**128)


def _interval(instance: str, f: int, coef: float, constant: float, op: str) -> Constraint:
    """``coef * x + constant op 0`` as the exact float32 interval of ``x`` (FALSE when no finite
    float32 lies in it: inputs are never infinite)."""
    if coef < 0:
        op = MIRRORED[op]
    lo, hi = -math.inf, math.inf
    if not math.isfinite(constant):  # x op +-inf: everything, or nothing
        return Interval(instance, f) if compare(constant / coef, op, 0) else FALSE
    # Clamped beyond every finite float32, where it rounds alike, so that float() cannot overflow.
    bound = min(max(-Fraction(constant) / Fraction(coef), -_BEYOND32), _BEYOND32)
    if op in ("<=", "=="):
        hi = floor32_exact(bound)
    if op in (">=", "=="):
        lo = ceil32_exact(bound)
    if op == "<":
        below = floor32_exact(bound)
        hi = next_down(below) if math.isfinite(below) and Fraction(below) == bound else below
    if op == ">":
        above = ceil32_exact(bound)
        lo = next_up(above) if math.isfinite(above) and Fraction(above) == bound else above
    if lo > hi or lo == math.inf or hi == -math.inf:
        return FALSE
    return Interval(instance, f, lo, hi)
