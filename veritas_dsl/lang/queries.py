"""Queries and properties: their instances, batch, conditions, goal, expectations and engines,
checked in the spec's environment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

from veritas_dsl.diagnostics import Span, suggest
from veritas_dsl.lang import ast
from veritas_dsl.lang import typed as t
from veritas_dsl.lang.context import Context, Failed, Scope
from veritas_dsl.lang.expressions import Expressions
from veritas_dsl.lang.scales import zero_scale_warning
from veritas_dsl.names import DURATION_UNITS, SHARE_UNITS, SIZE_UNITS
from veritas_dsl.unlearning.checking.coverage import Coverage

OPTIONS = {
    "timeout": "a duration such as 10s",
    "steps": "a whole number",
    "memory": "a size such as 2GB",
    "gap": "a share of the bounds such as 1%, or a number (the bounds' difference)",
    "solutions": "a whole number: how many of the best distinct solutions to report",
}


class Queries:
    """Checks each query in the environment its declarations built (``ctx``), its expressions
    and conditions typed by ``expressions``."""

    def __init__(self, ctx: Context, expressions: Expressions) -> None:
        self.ctx = ctx
        self.expressions = expressions
        self.quantifiers = expressions.quantifiers
        self.coverage = Coverage(ctx)

    def check_all(self, items: tuple[ast.Item, ...]) -> tuple[t.CheckedQuery, ...]:
        """Every query that checks, in order; each problem of the others is reported."""
        queries = []
        names: dict[str, Span] = {}
        for item in items:
            if isinstance(item, ast.QueryDecl):
                if item.name in names:
                    self.ctx.error(
                        "V201",
                        f"query `{item.name}` is declared twice",
                        item.span,
                        notes=[f"first declared at {names[item.name]}"],
                    )
                names[item.name] = item.span
                with contextlib.suppress(Failed):  # already reported
                    queries.append(self.query(item))
        return tuple(queries)

    def query(self, decl: ast.QueryDecl) -> t.CheckedQuery:
        """A query or property. Long (over 80 lines) because its statements are checked in one
        pass in source order, so that the errors come out in the order they are written."""
        scope = Scope()
        batch = self.batch(decl.batch, scope) if decl.batch else None
        body = decl.body
        inputs = [s for s in body if isinstance(s, ast.Input)]
        foralls = [s for s in body if isinstance(s, ast.Forall)]
        for extra in inputs[1:]:
            self.ctx.error("V206", "instances are declared once, with one `input`", extra.span)
        for extra in foralls[1:]:
            self.ctx.error("V206", "a property has one `forall`", extra.span)
        if decl.is_property and not foralls:
            raise self.ctx.error(
                "V207",
                f"property `{decl.name}` states no `forall`",
                decl.span,
                help="write: forall x: <premise> => <conclusion>",
            )
        if foralls and not decl.is_property:
            raise self.ctx.error(
                "V207",
                "`forall` belongs in a `property`",
                foralls[0].span,
                help=f"write `property {decl.name}` instead of `query {decl.name}`",
            )
        if inputs and foralls:
            raise self.ctx.error(
                "V206",
                "the instances of a property are those of its `forall`",
                inputs[0].span,
                help="remove this `input`",
            )
        names = inputs[0].names if inputs else foralls[0].names if foralls else ()
        if not names:
            raise self.ctx.error(
                "V208",
                f"query `{decl.name}` declares no input",
                decl.span,
                help="add `input x` (or `input x1, x2` for two instances)",
            )
        instances = []
        for name in names:
            if name.id in scope.instances or name.id in self.ctx.declared or name.id == scope.batch:
                raise self.ctx.error(
                    "V201",
                    f"`{name.id}` is already a name here",
                    name.span,
                    help="choose another name for the instance",
                )
            scope.instances.add(name.id)
            instances.append(name.id)

        constraints: list[t.Condition] = []
        goal: t.Goal | None = None
        expects = []
        engines: tuple[t.EngineChoice, ...] = ()
        failed = goal_failed = False
        if batch is not None and decl.batch.filter is not None:
            try:
                row_filter = self.row_filter(decl.batch.filter, batch, instances)
                span = decl.batch.filter.span
                batch = dataclasses.replace(batch, filter=row_filter, filter_span=span)
            except Failed:
                failed = True
        for statement in body:
            try:
                if isinstance(statement, ast.Where):
                    constraints.append(self.expressions.condition(statement.cond, scope))
                elif isinstance(statement, ast.Forall):
                    if statement.premise is not None:
                        constraints.append(self.expressions.condition(statement.premise, scope))
                    conclusion = self.expressions.condition(statement.conclusion, scope)
                    self.expressions.outputs_only(conclusion, statement.conclusion.span)
                    goal = t.ProveThat(conclusion, statement.span)
                elif isinstance(statement, ast.Objective | ast.FindStmt):
                    if goal is not None:
                        raise self.ctx.error(
                            "V209",
                            "a query has one objective",
                            statement.span,
                            help="split it into two queries",
                        )
                    goal = self.objective(statement, scope)
                elif isinstance(statement, ast.SolveWith):
                    engines = self.solve_with(statement)
            except Failed:
                failed = True
                goal_failed = goal_failed or not isinstance(statement, ast.Where | ast.SolveWith)
        # A goal that failed is unknown (None): expectations are not judged against a guess.
        goal = goal or (None if goal_failed else t.FindAny(None))
        try:
            self.solutions_ranked(body, goal)
        except Failed:
            failed = True
        for statement in body:
            if isinstance(statement, ast.Expect):
                try:
                    expects.append(self.expectation(statement, goal, decl, scope))
                except Failed:
                    failed = True
        if failed:
            raise Failed
        self.zero_scales(constraints, (batch, goal))
        self.coverage.certificate_coverage(decl)
        return t.CheckedQuery(
            decl.name,
            decl.is_property,
            tuple(instances),
            batch,
            tuple(constraints),
            goal,
            tuple(expects),
            engines,
            decl.span,
        )

    def zero_scales(self, constraints: list[t.Condition], rest: tuple) -> None:
        """Warn of the features to which a distance's statistic gave scale 1 (it was 0), but
        those the query holds equal at both ends of the distance (``x == r except ...`` and
        ``l1(x, r, ...)``), where the scale changes nothing."""
        n = len(self.ctx.features)
        held: dict[tuple, frozenset[int]] = {}
        for c in _conjuncts(constraints):
            if isinstance(c, t.SameAsRow):
                held[c.instance, c.row] = frozenset(range(n)) - c.excepted
            elif isinstance(c, t.TieAll):
                both = frozenset(range(n)) - c.excepted
                held[c.first, t.Instance(c.second)] = held[c.second, t.Instance(c.first)] = both
        for distance in _distances((constraints, rest)):
            if distance.zero is not None:
                kept = held.get((distance.instance, distance.other), frozenset())
                names = [self.ctx.features[f].name for f in distance.zero.features if f not in kept]
                if names:
                    self.ctx.warnings.append(zero_scale_warning(distance.zero, names))

    def batch(self, batch: ast.Batch, scope: Scope) -> t.Batch:
        data = batch.data.id
        n = len(self.ctx.dataset_named(batch.data))
        start = 0 if batch.start is None else self.expressions.row_index(batch.start, n + 1)
        stop = n if batch.stop is None else self.expressions.row_index(batch.stop, n + 1)
        if start >= stop:
            raise self.ctx.error("V305", f"the rows {data}[{start}:{stop}] are empty", batch.span)
        scope.batch = batch.name
        scope.batch_data = data
        return t.Batch(batch.name, data, start, stop)

    def row_filter(self, cond: ast.Cond, batch: t.Batch, instances: list[str]) -> t.Condition:
        """The ``where`` of ``for r in data[a:b] where ...``, typed with the row as an instance
        (see :class:`t.Batch`). It is decided per row before any engine runs, so it may not read
        the query's inputs."""
        for name in _names(cond):
            if name.id in instances:
                raise self.ctx.error(
                    "V330",
                    f"the row filter reads input `{name.id}`",
                    name.span,
                    "an input of the query",
                    help=f"the filter keeps or drops each row before any search: it may use "
                    f"`{batch.name}`, other data rows, models and numbers; put conditions on "
                    f"`{name.id}` in the query's `where`",
                )
        scope = Scope()
        scope.instances.add(batch.name)
        scope.batch, scope.batch_data = batch.name, batch.data
        return self.expressions.condition(cond, scope)

    def objective(self, statement, scope: Scope) -> t.Goal:
        if isinstance(statement, ast.FindStmt):
            return t.FindAny(statement.span)
        if self.quantifiers.is_worst_of(statement.expr):
            return self.quantifiers.worst_objective(statement, scope)
        value = self.expressions.value(statement.expr, scope)
        if isinstance(value, t.Proba):  # increasing in the margin: the same optimal inputs
            return t.OptimizeOutputs(statement.sense, value.margin, statement.span, True)
        if isinstance(value, t.Distance):
            if statement.sense == "maximize":
                raise self.ctx.error(
                    "V307",
                    "maximizing a distance is not supported",
                    statement.expr.span,
                    help="minimize a distance, or bound it in `where`",
                )
            return t.ClosestDistance(value, statement.span)
        if isinstance(value, t.Lin) and value.kind == "outputs":
            if any(math.isinf(c) for _, c in value.coefs):
                raise self.ctx.error(
                    "V308",
                    f"cannot {statement.sense} an infinite value",
                    statement.expr.span,
                    help="leave inf out of objectives",
                )
            return t.OptimizeOutputs(statement.sense, value, statement.span)
        raise self.ctx.error(
            "V308",
            f"cannot {statement.sense} {self.expressions.describe(value)}",
            statement.expr.span,
            help="objectives are model outputs such as clf(x) or clf(x2) - clf(x1), "
            "or a distance to minimize",
        )

    def expectation(
        self, statement: ast.Expect, goal: t.Goal | None, decl: ast.QueryDecl, scope
    ) -> t.Expectation:
        """An ``expect`` line, checked against the query's goal (None when it failed)."""
        subject = statement.subject
        text = f"expect {subject}" + (f" {statement.op} ..." if statement.op else "")
        if decl.is_property:
            raise self.ctx.error(
                "V309", "a property needs no `expect`: it must hold", statement.span
            )
        if subject in ("upper", "lower"):
            if statement.op is None:
                raise self.ctx.error(
                    "V310",
                    f"`expect {subject}` needs a comparison",
                    statement.span,
                    help=f"e.g. expect {subject} <= 0.5",
                )
            if statement.op in ("==", "!="):
                raise self.ctx.error(
                    "V310",
                    f"compare a bound with <, <=, > or >=, not {statement.op}",
                    statement.span,
                )
            if isinstance(goal, t.FindAny | t.ProveThat):
                raise self.ctx.error(
                    "V310",
                    f"`{subject}` is a bound of an objective; this query has none",
                    statement.subject_span,
                    help="add maximize/minimize, or use `expect found`",
                )
            value = self.expressions.value(statement.value, scope)
            if isinstance(goal, t.OptimizeOutputs) and goal.probability:
                return self.expressions.probabilities.expectation(statement, value, text)
            if not isinstance(value, t.Lin) or value.kind != "constant":
                raise self.ctx.error(
                    "V310", "a bound is compared with a number", statement.value.span
                )
            return t.Expectation(subject, statement.op, value, text, statement.span)
        if subject in ("found", "none"):
            if statement.op is not None:
                raise self.ctx.error(
                    "V310", f"`expect {subject}` takes no comparison", statement.span
                )
            if goal is not None and not isinstance(goal, t.FindAny):
                raise self.ctx.error(
                    "V310",
                    f"`expect {subject}` is for queries that find an input",
                    statement.subject_span,
                    help="bound an objective with `expect upper <= ...`",
                )
            return t.Expectation(subject, None, None, text, statement.span)
        raise self.ctx.error(
            "V311",
            f"unknown expectation `{subject}`",
            statement.subject_span,
            help=suggest(subject, ("upper", "lower", "found", "none"))
            or "expect upper|lower <op> <number>, expect found, or expect none",
        )

    def solve_with(self, statement: ast.SolveWith) -> tuple[t.EngineChoice, ...]:
        choices = []
        for engine in statement.engines:
            if engine.name not in self.ctx.engines:
                raise self.ctx.error(
                    "V501",
                    f"unknown engine `{engine.name}`",
                    engine.span,
                    help=suggest(engine.name, self.ctx.engines)
                    or f"engines are {', '.join(self.ctx.engines)}",
                )
            limits = {"timeout": None, "steps": None, "memory": None, "gap": (None, None)}
            limits["solutions"] = None
            for option in engine.options:
                if option.name not in OPTIONS:
                    raise self.ctx.error(
                        "V502",
                        f"unknown engine option `{option.name}`",
                        option.span,
                        help=suggest(option.name, OPTIONS) or f"options are {', '.join(OPTIONS)}",
                    )
                limits[option.name] = self.option_value(option)
            if limits["solutions"] is not None and limits["gap"] != (None, None):
                raise self.ctx.error(
                    "V502",
                    "`gap` and `solutions` do not go together",
                    engine.span,
                    help="`solutions = N` runs until the N best are proven; drop `gap`",
                )
            choices.append(
                t.EngineChoice(
                    engine.name,
                    limits["timeout"],
                    limits["steps"],
                    limits["memory"],
                    engine.span,
                    *limits["gap"],
                    limits["solutions"],
                )
            )
        return tuple(choices)

    def solutions_ranked(self, body, goal: t.Goal | None) -> None:
        """``solutions = N`` ranks an objective's values: a query that finds or proves, or
        minimises a distance (whose value varies inside a leaf combination), has none to rank."""
        if goal is None or isinstance(goal, t.OptimizeOutputs | t.OptimizeWorst):
            return
        for statement in body:
            for engine in statement.engines if isinstance(statement, ast.SolveWith) else ():
                for option in engine.options:
                    if option.name == "solutions":
                        raise self.ctx.error(
                            "V502",
                            "`solutions` ranks the values of an objective of model outputs",
                            option.span,
                            help="use it with `maximize` or `minimize` of model outputs",
                        )

    def option_value(self, option: ast.Option):
        value = option.value
        expected = OPTIONS[option.name]
        if isinstance(value, ast.Quantity):
            units = {"timeout": DURATION_UNITS, "memory": SIZE_UNITS, "gap": SHARE_UNITS}
            units = units.get(option.name, {})
            if value.unit not in units:
                raise self.ctx.error("V502", f"`{option.name}` is {expected}", value.span)
            amount = value.value * units[value.unit]
        elif isinstance(value, ast.Text):
            raise self.ctx.error("V502", f"`{option.name}` is {expected}, not a string", value.span)
        else:
            amount = self.expressions.constant(value, Scope())
        if amount <= 0:
            raise self.ctx.error("V502", f"`{option.name}` must be positive", option.span)
        if not math.isfinite(amount):
            raise self.ctx.error("V502", f"`{option.name}` must be finite", option.span)
        if option.name == "gap":  # (absolute, relative): a share is relative
            share = isinstance(value, ast.Quantity)
            return (None, float(amount)) if share else (float(amount), None)
        if option.name in ("steps", "solutions"):
            if not float(amount).is_integer():
                raise self.ctx.error("V502", f"`{option.name}` is a whole number", option.span)
            return int(amount)
        return int(amount) if option.name == "memory" else float(amount)


def _conjuncts(conditions) -> list[t.Condition]:
    """The conditions that hold together: the query's `where`s and the parts of their `and`s.
    A loop, not a recursion: conditions nest as deep as the parser allows."""
    found, stack = [], list(reversed(conditions))
    while stack:
        c = stack.pop()
        if isinstance(c, t.AllOf):
            stack += reversed(c.parts)
        else:
            found.append(c)
    return found


def _distances(node) -> list[t.Distance]:
    """Every distance in ``node``, a typed value or a tuple or list of them (a loop, as
    :func:`_conjuncts`)."""
    found, stack = [], [node]
    while stack:
        node = stack.pop()
        if isinstance(node, t.Distance):
            found.append(node)
        elif isinstance(node, tuple | list):
            stack += node
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            stack += [getattr(node, f.name) for f in dataclasses.fields(node)]
    return found


def _names(node) -> list[ast.Name]:
    """The names an expression or a condition reads (not those after ``except``, which are
    features)."""
    if isinstance(node, ast.Name):
        return [node]
    if isinstance(node, tuple):
        return [name for item in node for name in _names(item)]
    if isinstance(node, ast.Compare):
        return _names(node.operands)
    if isinstance(node, ast.And | ast.Or):
        return _names(node.parts)
    if isinstance(node, ast.Not | ast.ForEach | ast.EachOf):
        return _names(node.part)
    if isinstance(node, ast.Attr | ast.Index):
        return _names(node.obj) + _names(getattr(node, "index", ()))
    if isinstance(node, ast.Call):
        return _names(node.args)
    if isinstance(node, ast.Neg):
        return _names(node.operand)
    if isinstance(node, ast.Arith):
        return _names(node.operands)
    return []
