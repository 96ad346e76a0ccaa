"""AST to checked spec: load models and data, resolve every name, type every expression.

Errors are collected, each as one located :class:`Diagnostic`, and raised together at the end as a
:class:`SpecError`; an error that only follows from an earlier one is not reported again.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Collection
from pathlib import Path

import numpy as np

from veritas_dsl.data import DataError, Dataset, read_csv, read_libsvm
from veritas_dsl.diagnostics import Diagnostic, Span, SpecError, suggest
from veritas_dsl.ir.logic import MIRRORED, NEGATED
from veritas_dsl.ir.query import DomainKind, Feature
from veritas_dsl.lang import arith, ast
from veritas_dsl.lang import typed as t
from veritas_dsl.model.ensemble import Ensemble, ModelError
from veritas_dsl.model.load import FORMAT_OPTIONS, FORMATS, load_model

BUILTINS = ("class", "vote", "linf", "l1", "changed")
DATA_FORMATS = {
    "csv": {},
    "libsvm": {"features": "a whole number of features", "first_index": "a whole number, 0 or 1"},
}
#: Upper ends of count options: a typo like `features = 1e30` is an error, not an allocation.
COUNT_LIMITS = {"features": 1_000_000, "classes": 100_000, "first_index": 1}
OPTIONS = {
    "timeout": "a duration such as 10s",
    "steps": "a whole number",
    "memory": "a size such as 2GB",
}
_SECONDS = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
_BYTES = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


class _Failed(Exception):
    """An expression already reported an error; stop checking the enclosing construct."""


def check(
    spec: ast.SpecFile, engines: Collection[str], trust_pickle: bool = False
) -> t.CheckedSpec:
    """Resolve and type ``spec``; raise :class:`SpecError` listing every problem found."""
    return _Checker(spec, tuple(engines), trust_pickle).run()


class _Checker:
    def __init__(self, spec: ast.SpecFile, engines: tuple[str, ...], trust_pickle: bool) -> None:
        self.spec = spec
        self.base = Path(spec.path).resolve().parent if spec.path != "<string>" else Path.cwd()
        self.engines = engines
        self.trust_pickle = trust_pickle
        self.diagnostics: list[Diagnostic] = []
        self.declared: dict[str, Span] = {}
        self.models: dict[str, Ensemble] = {}
        self.model_paths: dict[str, str] = {}
        self.broken: set[str] = set()  # declared names whose declaration failed
        self.broken_groups: set[str] = set()  # one-hot groups that failed, and their members
        # No model loaded: the features are unknown, and so is whether a name is one.
        self.features_unknown = False
        self.datasets: dict[str, Dataset] = {}
        self.constants: dict[str, float] = {"inf": math.inf}
        self.features: tuple[Feature, ...] = ()
        self.feature_index: dict[str, int] = {}
        self.groups: dict[str, tuple[int, ...]] = {}
        self.members: dict[str, tuple[str, int]] = {}

    # -- reporting --------------------------------------------------------------------------

    def error(self, code, message, span, label="", help="", notes=()) -> _Failed:
        self.diagnostics.append(Diagnostic(code, message, span, label, tuple(notes), help))
        return _Failed()

    def declare(self, name: str, span: Span, what: str) -> bool:
        if name in self.declared or name in BUILTINS or name == "inf":
            first = self.declared.get(name)
            notes = [f"first declared at {first}"] if first else [f"`{name}` is a built-in name"]
            self.error(
                "V201", f"`{name}` is declared twice", span, f"this {what}", help="", notes=notes
            )
            return False
        self.declared[name] = span
        return True

    # -- declarations -----------------------------------------------------------------------

    def run(self) -> t.CheckedSpec:
        items = self.spec.items
        for item in items:
            if isinstance(item, ast.ModelDecl):
                self.model_decl(item)
        self.feature_space([i for i in items if isinstance(i, ast.ModelDecl)])
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
                with contextlib.suppress(_Failed):  # already reported
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

    def resolve_path(self, text: ast.Text) -> Path:
        path = Path(text.value)
        return path if path.is_absolute() else self.base / path

    def model_decl(self, decl: ast.ModelDecl) -> None:
        if not self.declare(decl.name, decl.span, "model"):
            return
        if decl.kind not in FORMATS:
            self.broken.add(decl.name)
            self.error(
                "V402",
                f"unknown model format `{decl.kind}`",
                decl.kind_span,
                "not a model format",
                help=suggest(decl.kind, FORMATS) or f"formats are {', '.join(FORMATS)}",
            )
            return
        path = self.resolve_path(decl.path)
        try:
            options = self.options(decl.options, FORMAT_OPTIONS.get(decl.kind, {}))
        except _Failed:
            self.broken.add(decl.name)
            return
        try:
            self.models[decl.name] = load_model(path, decl.kind, self.trust_pickle, options)
            self.model_paths[decl.name] = str(path)
        except ModelError as error:
            self.broken.add(decl.name)
            message = str(error).replace(f"{path}: ", "")
            self.error(
                "V401",
                f"cannot load model `{decl.name}`: {message}",
                decl.path.span,
                help=("trust_pickle" in message and "pass --trust-pickle to `ver`") or "",
            )

    def feature_space(self, decls: list[ast.ModelDecl]) -> None:
        loaded = [d for d in decls if d.name in self.models]
        if not decls:
            self.error(
                "V203",
                "a spec needs at least one model",
                Span(self.spec.path, 1, 1, 1, 2),  # where a declaration would go
                "this file declares no model",
                help='declare one: model clf = xgboost "models/model.json"',
            )
            return
        if not loaded:
            self.features_unknown = True
            return
        first = loaded[0]
        names = self.models[first.name].feature_names
        for decl in loaded[1:]:
            other = self.models[decl.name].feature_names
            if set(other) != set(names):
                missing = sorted(set(names) - set(other))
                extra = sorted(set(other) - set(names))
                notes = []
                if missing:
                    notes.append(f"`{decl.name}` lacks {', '.join(missing)}")
                if extra:
                    notes.append(f"`{decl.name}` has {', '.join(extra)} that `{first.name}` lacks")
                self.error(
                    "V404",
                    f"models `{first.name}` and `{decl.name}` have different features",
                    decl.span,
                    notes=notes,
                )
        self.features = tuple(Feature(n) for n in names)
        self.feature_index = {n: i for i, n in enumerate(names)}
        # Every model is re-expressed over the first model's feature order.
        for decl in loaded[1:]:
            if set(self.models[decl.name].feature_names) == set(names):
                self.models[decl.name] = self.models[decl.name].reindex(names)

    def data_decl(self, decl: ast.DataDecl) -> None:
        if not self.declare(decl.name, decl.span, "data set"):
            return
        if decl.kind not in DATA_FORMATS:
            self.broken.add(decl.name)
            self.error(
                "V405",
                f"unknown data format `{decl.kind}`",
                decl.kind_span,
                help=suggest(decl.kind, DATA_FORMATS) or f"formats are {', '.join(DATA_FORMATS)}",
            )
            return
        path = self.resolve_path(decl.path)
        try:
            options = self.options(decl.options, DATA_FORMATS[decl.kind])
            if decl.kind == "libsvm":
                if "features" not in options:
                    raise self.error(
                        "V409",
                        "a libsvm data set needs its feature count",
                        decl.span,
                        help=f'data {decl.name} = libsvm "{decl.path.value}" (features = 10)',
                    )
                dataset = read_libsvm(
                    decl.name, path, int(options["features"]), int(options.get("first_index", 1))
                )
            else:
                dataset = read_csv(decl.name, path)
        except _Failed:
            self.broken.add(decl.name)
            return
        except DataError as error:
            self.broken.add(decl.name)
            span = Span(
                error.path, error.line, error.column, error.line, error.column + error.width
            )
            self.error("V408", error.message, span, help=error.help)
            return
        except OSError as error:
            self.broken.add(decl.name)
            self.error(
                "V406", f"cannot read data `{decl.name}`: {error.strerror or error}", decl.path.span
            )
            return
        missing = [f.name for f in self.features if f.name not in dataset.columns]
        if missing:
            self.broken.add(decl.name)
            self.error(
                "V407",
                f"data `{decl.name}` lacks columns for features {', '.join(missing)}",
                decl.path.span,
                help="columns are matched to the models' features by name",
            )
            return
        self.datasets[decl.name] = dataset

    def options(self, options: tuple[ast.Option, ...], allowed: dict[str, str]) -> dict[str, float]:
        """Numeric options of a declaration, checked against ``allowed`` (name -> description)."""
        values = {}
        for option in options:
            if option.name not in allowed:
                hint = suggest(option.name, allowed) or (
                    f"options are {', '.join(allowed)}" if allowed else "it takes no options"
                )
                raise self.error("V403", f"unknown option `{option.name}`", option.span, help=hint)
            if isinstance(option.value, ast.Text | ast.Quantity):
                raise self.error("V403", f"`{option.name}` is {allowed[option.name]}", option.span)
            value = self.constant(option.value, _Scope())
            if "whole" in allowed[option.name] and (not value.is_integer() or value < 0):
                raise self.error("V403", f"`{option.name}` is {allowed[option.name]}", option.span)
            limit = COUNT_LIMITS.get(option.name)
            if limit is not None and value > limit:
                raise self.error(
                    "V403", f"`{option.name}` is at most {limit:,}, not {value:g}", option.span
                )
            values[option.name] = value
        return values

    def const_decl(self, decl: ast.ConstDecl) -> None:
        if not self.declare(decl.name, decl.span, "constant"):
            return
        try:
            value = self.constant(decl.value, _Scope())
        except _Failed:
            self.broken.add(decl.name)
            return
        self.constants[decl.name] = value

    def features_block(self, block: ast.FeaturesBlock) -> None:
        features = list(self.features)
        seen: dict[str, Span] = {}
        for decl in block.decls:
            if decl.name in seen:
                self.error(
                    "V201",
                    f"feature `{decl.name}` is declared twice",
                    decl.span,
                    notes=[f"first declared at {seen[decl.name]}"],
                )
                continue
            seen[decl.name] = decl.span
            try:
                if decl.kind == "onehot":
                    self.onehot_decl(decl, features)
                else:
                    self.domain_decl(decl, features)
            except _Failed:
                if decl.kind == "onehot":
                    self.broken_groups.update([decl.name, *(m.id for m in decl.members)])
        self.features = tuple(features)

    def feature_of(self, name: str, span: Span) -> int:
        if self.features_unknown:
            raise _Failed  # the failed model's error says it all
        if name not in self.feature_index:
            raise self.error(
                "V204",
                f"unknown feature `{name}`",
                span,
                "not a feature of the models",
                help=suggest(name, self.feature_index),
            )
        return self.feature_index[name]

    def domain_decl(self, decl: ast.FeatureDecl, features: list[Feature]) -> None:
        f = self.feature_of(decl.name, decl.span)
        kind = {"real": DomainKind.REAL, "int": DomainKind.INT, "bool": DomainKind.BOOL}[decl.kind]
        lo, hi = (0.0, 1.0) if kind is DomainKind.BOOL else (-math.inf, math.inf)
        if decl.lo is not None:
            lo, hi = self.constant(decl.lo, _Scope()), self.constant(decl.hi, _Scope())
            if kind is DomainKind.INT:
                for bound, expr in ((lo, decl.lo), (hi, decl.hi)):
                    if math.isfinite(bound) and not bound.is_integer():
                        raise self.error(
                            "V302",
                            f"int feature `{decl.name}` has a fractional bound {bound:g}",
                            expr.span,
                            "not a whole number",
                            help=f"write {math.floor(bound):g} or {math.ceil(bound):g}",
                        )
            if lo > hi:
                raise self.error(
                    "V303",
                    f"the range of `{decl.name}` is empty",
                    decl.span,
                    f"{lo:g} > {hi:g}",
                    help="write the lower bound first",
                )
        features[f] = Feature(decl.name, kind, lo, hi)

    def onehot_decl(self, decl: ast.FeatureDecl, features: list[Feature]) -> None:
        if decl.name in self.feature_index or decl.name in self.groups:
            raise self.error(
                "V205",
                f"one-hot group `{decl.name}` has the name of a feature",
                decl.span,
                help="name the group after what it encodes, e.g. `housing`",
            )
        if len(decl.members) < 2:
            raise self.error("V304", "a one-hot group needs at least two features", decl.span)
        indices = []
        for member in decl.members:
            f = self.feature_of(member.id, member.span)
            if member.id in self.members:
                raise self.error(
                    "V304",
                    f"`{member.id}` is already in group `{self.members[member.id][0]}`",
                    member.span,
                )
            self.members[member.id] = (decl.name, f)
            features[f] = Feature(member.id, DomainKind.BOOL, 0.0, 1.0)
            indices.append(f)
        self.groups[decl.name] = tuple(indices)

    # -- queries ----------------------------------------------------------------------------

    def query(self, decl: ast.QueryDecl) -> t.CheckedQuery:
        scope = _Scope()
        batch = self.batch(decl.batch, scope) if decl.batch else None
        body = decl.body
        inputs = [s for s in body if isinstance(s, ast.Input)]
        foralls = [s for s in body if isinstance(s, ast.Forall)]
        for extra in inputs[1:]:
            self.error("V206", "instances are declared once, with one `input`", extra.span)
        for extra in foralls[1:]:
            self.error("V206", "a property has one `forall`", extra.span)
        if decl.is_property and not foralls:
            raise self.error(
                "V207",
                f"property `{decl.name}` states no `forall`",
                decl.span,
                help="write: forall x: <premise> => <conclusion>",
            )
        if foralls and not decl.is_property:
            raise self.error(
                "V207",
                "`forall` belongs in a `property`",
                foralls[0].span,
                help=f"write `property {decl.name}` instead of `query {decl.name}`",
            )
        if inputs and foralls:
            raise self.error(
                "V206",
                "the instances of a property are those of its `forall`",
                inputs[0].span,
                help="remove this `input`",
            )
        names = inputs[0].names if inputs else foralls[0].names if foralls else ()
        if not names:
            raise self.error(
                "V208",
                f"query `{decl.name}` declares no input",
                decl.span,
                help="add `input x` (or `input x1, x2` for two instances)",
            )
        instances = []
        for name in names:
            if name.id in scope.instances or name.id in self.declared or name.id == scope.batch:
                raise self.error(
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
        for statement in body:
            try:
                if isinstance(statement, ast.Where):
                    constraints.append(self.condition(statement.cond, scope))
                elif isinstance(statement, ast.Forall):
                    if statement.premise is not None:
                        constraints.append(self.condition(statement.premise, scope))
                    conclusion = self.condition(statement.conclusion, scope)
                    self.outputs_only(conclusion, statement.conclusion.span)
                    goal = t.ProveThat(conclusion, statement.span)
                elif isinstance(statement, ast.Objective | ast.FindStmt):
                    if goal is not None:
                        raise self.error(
                            "V209",
                            "a query has one objective",
                            statement.span,
                            help="split it into two queries",
                        )
                    goal = self.objective(statement, scope)
                elif isinstance(statement, ast.SolveWith):
                    engines = self.solve_with(statement)
            except _Failed:
                failed = True
                goal_failed = goal_failed or not isinstance(statement, ast.Where | ast.SolveWith)
        # A goal that failed is unknown (None): expectations are not judged against a guess.
        goal = goal or (None if goal_failed else t.FindAny(None))
        for statement in body:
            if isinstance(statement, ast.Expect):
                try:
                    expects.append(self.expectation(statement, goal, decl, scope))
                except _Failed:
                    failed = True
        if failed:
            raise _Failed
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

    def batch(self, batch: ast.Batch, scope: _Scope) -> t.Batch:
        data = batch.data.id
        if data not in self.datasets:
            if data in self.broken:
                raise _Failed
            raise self.error(
                "V210",
                f"unknown data set `{data}`",
                batch.data.span,
                help=suggest(data, self.datasets) or 'declare it: data d = csv "file.csv"',
            )
        n = len(self.datasets[data])
        start = 0 if batch.start is None else self.row_index(batch.start, n + 1)
        stop = n if batch.stop is None else self.row_index(batch.stop, n + 1)
        if start >= stop:
            raise self.error("V305", f"the rows {data}[{start}:{stop}] are empty", batch.span)
        scope.batch = batch.name
        scope.batch_data = data
        return t.Batch(batch.name, data, start, stop)

    def row_index(self, expr: ast.Expr, limit: int) -> int:
        value = self.constant(expr, _Scope())
        if not value.is_integer() or not 0 <= value < limit:
            raise self.error("V306", f"row index {value:g} is not in 0..{limit - 1}", expr.span)
        return int(value)

    def objective(self, statement, scope: _Scope) -> t.Goal:
        if isinstance(statement, ast.FindStmt):
            return t.FindAny(statement.span)
        value = self.value(statement.expr, scope)
        if isinstance(value, t.Distance):
            if statement.sense == "maximize":
                raise self.error(
                    "V307",
                    "maximizing a distance is not supported",
                    statement.expr.span,
                    help="minimize a distance, or bound it in `where`",
                )
            return t.ClosestDistance(value, statement.span)
        if isinstance(value, t.Lin) and value.kind == "outputs":
            if any(math.isinf(c) for _, c in value.coefs):
                raise self.error(
                    "V308",
                    f"cannot {statement.sense} an infinite value",
                    statement.expr.span,
                    help="leave inf out of objectives",
                )
            return t.OptimizeOutputs(statement.sense, value, statement.span)
        raise self.error(
            "V308",
            f"cannot {statement.sense} {self.describe(value)}",
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
            raise self.error("V309", "a property needs no `expect`: it must hold", statement.span)
        if subject in ("upper", "lower"):
            if statement.op is None:
                raise self.error(
                    "V310",
                    f"`expect {subject}` needs a comparison",
                    statement.span,
                    help=f"e.g. expect {subject} <= 0.5",
                )
            if statement.op in ("==", "!="):
                raise self.error(
                    "V310",
                    f"compare a bound with <, <=, > or >=, not {statement.op}",
                    statement.span,
                )
            if isinstance(goal, t.FindAny | t.ProveThat):
                raise self.error(
                    "V310",
                    f"`{subject}` is a bound of an objective; this query has none",
                    statement.subject_span,
                    help="add maximize/minimize, or use `expect found`",
                )
            value = self.value(statement.value, scope)
            if not isinstance(value, t.Lin) or value.kind != "constant":
                raise self.error("V310", "a bound is compared with a number", statement.value.span)
            return t.Expectation(subject, statement.op, value, text, statement.span)
        if subject in ("found", "none"):
            if statement.op is not None:
                raise self.error("V310", f"`expect {subject}` takes no comparison", statement.span)
            if goal is not None and not isinstance(goal, t.FindAny):
                raise self.error(
                    "V310",
                    f"`expect {subject}` is for queries that find an input",
                    statement.subject_span,
                    help="bound an objective with `expect upper <= ...`",
                )
            return t.Expectation(subject, None, None, text, statement.span)
        raise self.error(
            "V311",
            f"unknown expectation `{subject}`",
            statement.subject_span,
            help=suggest(subject, ("upper", "lower", "found", "none"))
            or "expect upper|lower <op> <number>, expect found, or expect none",
        )

    def solve_with(self, statement: ast.SolveWith) -> tuple[t.EngineChoice, ...]:
        choices = []
        for engine in statement.engines:
            if engine.name not in self.engines:
                raise self.error(
                    "V501",
                    f"unknown engine `{engine.name}`",
                    engine.span,
                    help=suggest(engine.name, self.engines)
                    or f"engines are {', '.join(self.engines)}",
                )
            limits = {"timeout": None, "steps": None, "memory": None}
            for option in engine.options:
                if option.name not in OPTIONS:
                    raise self.error(
                        "V502",
                        f"unknown engine option `{option.name}`",
                        option.span,
                        help=suggest(option.name, OPTIONS) or f"options are {', '.join(OPTIONS)}",
                    )
                limits[option.name] = self.option_value(option)
            choices.append(
                t.EngineChoice(
                    engine.name, limits["timeout"], limits["steps"], limits["memory"], engine.span
                )
            )
        return tuple(choices)

    def option_value(self, option: ast.Option):
        value = option.value
        expected = OPTIONS[option.name]
        if isinstance(value, ast.Quantity):
            units = (
                _SECONDS if option.name == "timeout" else _BYTES if option.name == "memory" else {}
            )
            if value.unit not in units:
                raise self.error("V502", f"`{option.name}` is {expected}", value.span)
            amount = value.value * units[value.unit]
        elif isinstance(value, ast.Text):
            raise self.error("V502", f"`{option.name}` is {expected}, not a string", value.span)
        else:
            amount = self.constant(value, _Scope())
        if amount <= 0:
            raise self.error("V502", f"`{option.name}` must be positive", option.span)
        if not math.isfinite(amount):
            raise self.error("V502", f"`{option.name}` must be finite", option.span)
        if option.name == "steps":
            if not float(amount).is_integer():
                raise self.error("V502", "`steps` is a whole number", option.span)
            return int(amount)
        return int(amount) if option.name == "memory" else float(amount)

    # -- conditions -------------------------------------------------------------------------

    def condition(self, cond: ast.Cond, scope: _Scope, negated: bool = False) -> t.Condition:
        if isinstance(cond, ast.Not):
            return self.condition(cond.part, scope, not negated)
        if isinstance(cond, ast.And | ast.Or):
            parts = tuple(self.condition(p, scope, negated) for p in cond.parts)
            conjunctive = isinstance(cond, ast.And) != negated
            return t.AllOf(parts) if conjunctive else t.EitherOf(parts)
        values = [self.value(operand, scope) for operand in cond.operands]
        if cond.excepted and (len(cond.ops) != 1 or cond.ops[0] != "=="):
            raise self.error("V312", "`except` follows `a == b` between two instances", cond.span)
        pairs = []
        for k, op in enumerate(cond.ops):
            span = _join(cond.operands[k].span, cond.operands[k + 1].span)
            pairs.append(self.compare(values[k], op, values[k + 1], span, cond, scope, negated))
        if len(pairs) == 1:
            return pairs[0]
        # not (a < b < c) is (a >= b) or (b >= c)
        return t.EitherOf(tuple(pairs)) if negated else t.AllOf(tuple(pairs))

    def compare(self, left, op, right, span, cond: ast.Compare, scope, negated) -> t.Condition:
        movable = t.Distance | t.Changed | t.ClassOf | t.GroupRef | t.Instance
        if isinstance(right, movable) and not isinstance(left, type(right)):
            left, right, op = right, left, MIRRORED[op]
        if negated:
            op = NEGATED[op]
        if isinstance(left, t.Lin) and isinstance(right, t.Lin):
            diff = self.arith(arith.plus, span, left, right, -1.0)
            if diff.kind == "mixed":
                raise self.error(
                    "V313",
                    "this compares model outputs with input features",
                    span,
                    help="compare outputs with numbers, and features with numbers",
                )
            return t.LinCompare(diff, op, span)
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
                raise self.error(
                    "V314", f"a distance can be bounded with <=, not {op}", span, help=help
                )
            return t.DistanceAtMost(left, right, span)
        if isinstance(left, t.Changed):
            self.need_constant(right, span, "a count of changed features")
            if op not in ("<=", "<"):
                raise self.error(
                    "V314", f"a count of changed features is bounded with <= or <, not {op}", span
                )
            return t.ChangedAtMost(left, right, op == "<", span)
        if isinstance(left, t.ClassOf):
            if op not in ("==", "!="):
                raise self.error("V315", f"classes are compared with == or !=, not {op}", span)
            if isinstance(right, t.Lin):
                self.need_constant(right, span, "a class")
                if not right.row_dependent:
                    k = right.constant_value()
                    n = max(2, self.n_outputs(left.model))
                    if not k.is_integer() or not 0 <= k < n:
                        raise self.error("V315", f"class {k:g} is not one of 0..{n - 1}", span)
            elif not isinstance(right, t.ClassOf):
                raise self.error(
                    "V315",
                    f"a class is compared with a class or a number, not {self.describe(right)}",
                    span,
                )
            return t.ClassCompare(left, right, op == "==", span)
        if isinstance(left, t.Instance) and isinstance(right, t.Instance | t.RowValue):
            if op != "==":
                raise self.error(
                    "V316",
                    f"an instance is tied with ==, not compared with {op}",
                    span,
                    help="compare features instead, e.g. x1.age < x2.age",
                )
            if right == left:
                raise self.error("V316", "an instance is always equal to itself", span)
            excepted = set()
            for name in cond.excepted:
                if name.id in self.groups:
                    excepted.update(self.groups[name.id])
                elif name.id in self.members:  # its tied partners would pin it: nothing freed
                    group = self.members[name.id][0]
                    raise self.error(
                        "V317",
                        f"`{name.id}` is a member of one-hot group `{group}`, "
                        "which `except` frees as a whole",
                        name.span,
                        help=f"write `except {group}`",
                    )
                else:
                    excepted.add(self.feature_of(name.id, name.span))
            if isinstance(right, t.RowValue):
                return t.SameAsRow(left.name, right, frozenset(excepted), span)
            return t.TieAll(left.name, right.name, frozenset(excepted), span)
        if isinstance(left, t.GroupRef) and isinstance(right, t.Member):
            if right.group != left.group:
                raise self.error(
                    "V317",
                    f"`{self.features[right.feature].name}` is not in group `{left.group}`",
                    span,
                    help=suggest(
                        self.features[right.feature].name,
                        [self.features[f].name for f in self.groups[left.group]],
                    ),
                )
            if op not in ("==", "!="):
                raise self.error(
                    "V317", f"a one-hot group is compared with == or !=, not {op}", span
                )
            return t.GroupIs(left.instance, right.feature, op == "==", span)
        raise self.error(
            "V318", f"cannot compare {self.describe(left)} with {self.describe(right)}", span
        )

    def need_constant(self, value, span, what) -> None:
        if not isinstance(value, t.Lin) or value.kind != "constant":
            raise self.error("V319", f"{what} is compared with a number", span)

    def outputs_only(self, cond: t.Condition, span: Span) -> None:
        if isinstance(cond, t.AllOf | t.EitherOf):
            for part in cond.parts:
                self.outputs_only(part, span)
        elif isinstance(cond, t.LinCompare) and cond.lin.kind in ("outputs", "constant"):
            return
        elif not isinstance(cond, t.ClassCompare):
            raise self.error(
                "V320",
                "the conclusion of a property may only constrain model outputs",
                getattr(cond, "span", span),
                help="move conditions on inputs before `=>`",
            )

    # -- expressions ------------------------------------------------------------------------

    def constant(self, expr: ast.Expr, scope: _Scope) -> float:
        value = self.value(expr, scope)
        if not isinstance(value, t.Lin) or value.kind != "constant" or value.row_dependent:
            raise self.error(
                "V321", "a number is expected here", expr.span, f"this is {self.describe(value)}"
            )
        return value.constant_value()

    def value(self, expr: ast.Expr, scope: _Scope) -> t.Value:
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
        raise AssertionError(f"unknown expression {expr!r}")

    def arithmetic(self, expr: ast.Arith, scope: _Scope) -> t.Lin:
        """A chain, left to right, in a loop: a sum of 10,000 terms is no deeper than one."""
        first = expr.operands[0]
        result = self.linear(first, scope)
        for op, operand in zip(expr.ops, expr.operands[1:], strict=True):
            right = self.linear(operand, scope)
            span = _join(first.span, operand.span)
            if op in "+-":
                result = self.arith(arith.plus, span, result, right, 1.0 if op == "+" else -1.0)
            elif op == "*":
                if not (arith.is_number(right) or arith.is_number(result)):
                    raise self.error(
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
                    raise self.error("V322", "division is by a non-zero number", operand.span)
                divisor = right.constant_value()
                at = operand.span if divisor == 0 or math.isinf(divisor) else span
                result = self.arith(arith.divide, at, result, divisor)
        return result

    def arith(self, operation, span: Span, *args):
        """``operation(*args)`` (one of :mod:`arith`'s), its problem located at ``span``."""
        try:
            return operation(*args)
        except arith.NumberError as error:
            raise self.error(error.code, error.message, span, help=error.help) from None

    def linear(self, expr: ast.Expr, scope: _Scope) -> t.Lin:
        value = self.value(expr, scope)
        if not isinstance(value, t.Lin):
            raise self.error(
                "V323", f"{self.describe(value)} cannot be used in arithmetic", expr.span
            )
        return value

    def name(self, expr: ast.Name, scope: _Scope) -> t.Value:
        name = expr.id
        if name in scope.instances:
            return t.Instance(name)
        if name == scope.batch:
            return t.RowValue(scope.batch_data, None, name)
        if name in self.constants:
            return t.Lin.constant(self.constants[name])
        if name in self.models:
            return t.ModelRef(name)
        if name in self.datasets:
            raise self.error(
                "V211", f"`{name}` is a data set; pick a row", expr.span, help=f"e.g. {name}[0]"
            )
        if name in self.members:
            group, f = self.members[name]
            return t.Member(group, f)
        if name in self.broken or name in self.broken_groups or self.features_unknown:
            raise _Failed  # a failed declaration, or maybe a feature of a model that failed
        if name in self.feature_index:
            raise self.error(
                "V212",
                f"`{name}` is a feature; say whose",
                expr.span,
                help=f"e.g. {min(scope.instances, default='x')}.{_written(name)}",
            )
        known = [*scope.instances, *self.constants, *self.models, *self.datasets, *self.members]
        if scope.batch:
            known.append(scope.batch)
        raise self.error(
            "V213", f"unknown name `{name}`", expr.span, "not declared", help=suggest(name, known)
        )

    def attr(self, expr: ast.Attr, scope: _Scope) -> t.Value:
        obj = self.value(expr.obj, scope)
        if isinstance(obj, t.Instance):
            if expr.name in self.groups:
                return t.GroupRef(obj.name, expr.name)
            if expr.name in self.broken_groups and expr.name not in self.feature_index:
                raise _Failed
            f = self.feature_of(expr.name, expr.name_span)
            return t.Lin.of({("feat", obj.name, f): 1.0})
        if isinstance(obj, t.RowValue):
            dataset = self.datasets[obj.data]
            if expr.name not in dataset.columns:
                raise self.error(
                    "V214",
                    f"data `{obj.data}` has no column `{expr.name}`",
                    expr.name_span,
                    help=suggest(expr.name, dataset.columns),
                )
            if obj.index is None:
                return t.Lin.of({("rowcol", expr.name): 1.0})
            return t.Lin.constant(
                float(dataset.values[obj.index, dataset.columns.index(expr.name)])
            )
        raise self.error("V215", f"{self.describe(obj)} has no features", expr.span)

    def index(self, expr: ast.Index, scope: _Scope) -> t.Value:
        if isinstance(expr.obj, ast.Call) and expr.obj.func in self.models:
            k = self.constant(expr.index, scope)
            n = self.n_outputs(expr.obj.func)
            if not k.is_integer() or not 0 <= k < n:
                raise self.error(
                    "V324", f"model `{expr.obj.func}` has outputs 0..{n - 1}", expr.index.span
                )
            return self.call(expr.obj, scope, output=int(k))
        if isinstance(expr.obj, ast.Name) and expr.obj.id in self.datasets:
            data = expr.obj.id
            i = self.row_index(expr.index, len(self.datasets[data]))
            return t.RowValue(data, i, f"{data}[{i}]")
        if isinstance(expr.obj, ast.Name) and expr.obj.id in self.broken:
            raise _Failed
        if isinstance(expr.obj, ast.Call) and expr.obj.func in self.broken:
            raise _Failed
        raise self.error(
            "V325",
            "only data sets (rows) and model outputs can be indexed",
            expr.span,
            help="e.g. test[3], or clf(x)[2] for output 2",
        )

    def call(self, expr: ast.Call, scope: _Scope, output: int | None) -> t.Value:
        func = expr.func
        args = expr.args
        if func in self.broken:
            raise _Failed
        if func in self.models:
            if len(args) != 1:
                raise self.error("V326", f"model `{func}` takes one input", expr.span)
            subject = self.value(args[0], scope)
            if output is None:
                if self.n_outputs(func) > 1:
                    raise self.error(
                        "V324",
                        f"model `{func}` has {self.n_outputs(func)} outputs; pick one",
                        expr.span,
                        help=f"e.g. {func}({_text(args[0])})[0]",
                    )
                output = 0
            if isinstance(subject, t.Instance):
                return t.Lin.of({("out", func, subject.name, output): 1.0})
            if isinstance(subject, t.RowValue):
                if subject.index is None:
                    return t.Lin.of({("rowout", func, output): 1.0})
                row = self.row_point(subject)
                return t.Lin.constant(float(np.atleast_1d(self.models[func].eval(row))[output]))
            raise self.error(
                "V326",
                f"model `{func}` takes an instance or a data row, not {self.describe(subject)}",
                args[0].span,
            )
        if func in ("class", "vote"):
            if len(args) != 2:
                raise self.error(
                    "V326", f"{func} takes a model and an input: {func}(clf, x)", expr.span
                )
            model = self.value(args[0], scope)
            if not isinstance(model, t.ModelRef):
                raise self.error("V326", f"the first argument of {func} is a model", args[0].span)
            if self.models[model.name].task == "regression":
                raise self.error(
                    "V327",
                    f"model `{model.name}` is a regression model; it has no class",
                    args[0].span,
                )
            subject = self.value(args[1], scope)
            if not isinstance(subject, t.Instance | t.RowValue):
                raise self.error(
                    "V326",
                    f"the second argument of {func} is an instance or a data row",
                    args[1].span,
                )
            return t.ClassOf(model.name, subject, vote=func == "vote")
        if func in ("linf", "l1", "changed"):
            if len(args) != 2:
                raise self.error("V326", f"{func} takes two inputs: {func}(x, test[0])", expr.span)
            a, b = self.value(args[0], scope), self.value(args[1], scope)
            if isinstance(b, t.Instance) and not isinstance(a, t.Instance):
                a, b = b, a
            if not isinstance(a, t.Instance) or not isinstance(b, t.Instance | t.RowValue):
                raise self.error(
                    "V326", f"{func} relates an instance with an instance or a data row", expr.span
                )
            if func == "changed":
                return t.Changed(a.name, b)
            return t.Distance(func, a.name, b)
        known = [*self.models, *BUILTINS]
        raise self.error(
            "V216",
            f"unknown function `{func}`",
            expr.func_span,
            help=suggest(func, known) or f"models are {', '.join(self.models) or 'none'}",
        )

    def row_point(self, row: t.RowValue) -> np.ndarray:
        dataset = self.datasets[row.data]
        columns = [dataset.columns.index(f.name) for f in self.features]
        model_order = dataset.values[row.index, columns]
        return model_order[None, :]

    def n_outputs(self, model: str) -> int:
        return self.models[model].n_outputs

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
        }.get(type(value), "this")


class _Scope:
    """Names local to one query: its instances and the batch row variable."""

    def __init__(self) -> None:
        self.instances: set[str] = set()
        self.batch: str | None = None
        self.batch_data: str | None = None


def _join(a: Span, b: Span) -> Span:
    return Span(a.file, a.line, a.column, b.end_line, b.end_column)


def _written(name: str) -> str:
    """A name as a spec writes it: in backquotes unless it is a plain identifier."""
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", name) else f"`{name}`"


def _text(expr: ast.Expr) -> str:
    if isinstance(expr, ast.Name):
        return expr.id
    return "x"
