"""Run lowered queries on engines: choose engines, solve, validate witnesses, cross-check engines,
and judge expectations and properties.

The outcome of one lowered query is a :class:`QueryRun`; reports render those.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from veritas_dsl.diagnostics import Diagnostic, Span, SpecError
from veritas_dsl.ir.lower import Lowered
from veritas_dsl.ir.query import Find, Maximize, Minimize, MinimizeDistance, Prove, constructs
from veritas_dsl.lang import typed as t
from veritas_dsl.result import Result, Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.validate import WitnessMismatch, validate_witness

#: Engines tried in order when a query names none: the first that supports the query runs.
DEFAULT_ENGINES = ("astar", "milp", "sat", "oracle")
DEFAULT_TIMEOUT_S = 60.0
#: Exact answers of two engines agree when they differ by at most this, relative above 1.
AGREEMENT = 1e-6


class EngineDisagreement(RuntimeError):
    """Two engines gave different exact answers: one of them is wrong."""


@dataclass(frozen=True)
class Check:
    """The verdict of one expectation or property: ``holds`` is True, False, or None when the
    engine stopped before it could tell."""

    text: str
    holds: bool | None
    detail: str
    span: Span


@dataclass
class QueryRun:
    """One lowered query, its results (one per engine; the first is reported), and its checks."""

    lowered: Lowered
    results: list[Result] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.lowered.query.name

    @property
    def result(self) -> Result:
        return self.results[0]

    @property
    def kind(self) -> str:
        return goal_kind(self.lowered.query.goal)

    @property
    def failed(self) -> bool:
        return any(check.holds is not True for check in self.checks)


def goal_kind(goal) -> str:
    return {
        Maximize: "maximize",
        Minimize: "minimize",
        MinimizeDistance: "minimize_distance",
        Find: "find",
        Prove: "prove",
    }[type(goal)]


@dataclass(frozen=True)
class RunOptions:
    """Choices from the command line that override or complete the spec's."""

    solver: str | None = None
    timeout_s: float | None = None
    progress: Callable | None = None


def default_engines(lowered: Lowered) -> list[str]:
    """The default engines that declare every construct of ``lowered``, in preference order."""
    query = lowered.query
    return [
        name
        for name in DEFAULT_ENGINES
        if name in registry.ENGINES
        and registry.ENGINES[name].available()
        and constructs(query) <= registry.ENGINES[name].capabilities.constructs
    ]


def choose_engines(lowered: Lowered, options: RunOptions) -> list[tuple[str, Limits]]:
    """The engines to run ``lowered`` on, with their limits; a clear error when none can."""
    checked = lowered.source
    timeout = options.timeout_s if options.timeout_s is not None else DEFAULT_TIMEOUT_S
    query = lowered.query
    if options.solver:
        choices = [t.EngineChoice(options.solver, None, None, None, checked.span)]
    elif checked.engines:
        choices = list(checked.engines)
    else:
        names = default_engines(lowered) or [DEFAULT_ENGINES[-1]]
        choices = [t.EngineChoice(names[0], None, None, None, checked.span)]
    chosen = []
    for choice in choices:
        try:
            engine = registry.get(choice.name)
            registry.check_supports(engine, query)
        except UnsupportedQuery as error:
            raise SpecError([Diagnostic("V503", str(error), choice.span)]) from None
        if not engine.available():
            raise SpecError(
                [
                    Diagnostic(
                        "V504",
                        f"engine `{choice.name}` is not available here "
                        f"({engine.available().value})",
                        choice.span,
                    )
                ]
            )
        limits = Limits(
            timeout_s=choice.timeout_s if choice.timeout_s is not None else timeout,
            max_steps=choice.max_steps,
            max_memory_bytes=choice.max_memory_bytes,
        )
        try:
            registry.check_limits(engine, limits)
        except UnsupportedQuery as error:
            raise SpecError([Diagnostic("V505", str(error), choice.span)]) from None
        chosen.append((choice.name, limits))
    return chosen


def solve(lowered: Lowered, name: str, limits: Limits, progress=None) -> Result:
    """Solve ``lowered`` on engine ``name`` and validate every witness on the library models.

    ``progress(query_name, engine_name, report)`` sees the engine's progress reports.
    """
    engine = registry.get(name)
    report = None
    if progress is not None:
        query = lowered.query.name

        def report(state) -> None:
            progress(query, name, state)

    try:
        result = engine.solve(lowered.query, limits, progress=report)
    except UnsupportedQuery as error:
        raise SpecError([Diagnostic("V503", str(error), lowered.source.span)]) from None
    for witness in result.witnesses:
        try:
            validate_witness(lowered.query, witness)
        except WitnessMismatch as error:
            raise WitnessMismatch(f"engine {name}: {error}") from None
    return result


def run_lowered(lowered: Lowered, options: RunOptions) -> QueryRun:
    """Solve one lowered query on its engines, cross-check them, and judge its checks.

    When the query names no engine and the default one refuses it (A* refuses a few
    combinations it cannot decide exactly), the next default engine answers, and says so.
    """
    run = QueryRun(lowered)
    chosen = choose_engines(lowered, options)
    if not options.solver and not lowered.source.engines:
        run.results.append(_solve_with_fallback(lowered, chosen[0][1], options.progress))
    else:
        for name, limits in chosen:
            run.results.append(solve(lowered, name, limits, options.progress))
    cross_check(run.name, run.results)
    run.checks = judge(lowered, run.result)
    return run


def _solve_with_fallback(lowered: Lowered, limits: Limits, progress) -> Result:
    refusals = []
    for name in default_engines(lowered):
        try:
            result = solve(lowered, name, limits, progress)
        except SpecError as error:
            if error.diagnostics[0].code != "V503":
                raise
            refusals.append(f"{name} refused it ({error.diagnostics[0].message})")
            continue
        if refusals:
            result.message = "; ".join([*refusals, result.message] if result.message else refusals)
        return result
    raise SpecError([Diagnostic("V503", "; ".join(refusals), lowered.source.span)])


def cross_check(name: str, results: list[Result]) -> None:
    """Raise :class:`EngineDisagreement` when two exact answers differ."""
    exact = [r for r in results if r.exact]
    for other in exact[1:]:
        first = exact[0]
        if first.termination != other.termination or not (
            _same(first.lower, other.lower) and _same(first.upper, other.upper)
        ):
            raise EngineDisagreement(
                f"query {name}: engines disagree: "
                f"{first.engine} says {first.termination.value} "
                f"[{first.lower}, {first.upper}], {other.engine} says {other.termination.value} "
                f"[{other.lower}, {other.upper}]"
            )


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= AGREEMENT * max(1.0, abs(a))


def judge(lowered: Lowered, result: Result) -> list[Check]:
    """The verdicts of a query's expectations (or, for a property, of the property)."""
    checked = lowered.source
    if checked.is_property:
        return [_property_check(checked, result)]
    return [_expectation_check(e, value, result) for e, value in lowered.expectations]


def _property_check(checked: t.CheckedQuery, result: Result) -> Check:
    text = f"property {checked.name}"
    if result.termination is Termination.INFEASIBLE:
        return Check(text, True, "no counterexample exists", checked.span)
    if result.termination is Termination.OPTIMAL and result.witnesses:
        return Check(text, False, "counterexample found", checked.span)
    return Check(
        text, None, f"unknown: the engine stopped ({result.termination.value})", checked.span
    )


def _expectation_check(e: t.Expectation, value: float | None, result: Result) -> Check:
    if e.subject in ("found", "none"):
        found = result.termination is Termination.OPTIMAL and bool(result.witnesses)
        text = f"expect {e.subject}"
        if result.termination is Termination.INFEASIBLE:
            return Check(text, e.subject == "none", "no input satisfies the query", e.span)
        if found:
            return Check(text, e.subject == "found", "an input was found", e.span)
        return Check(
            text, None, f"unknown: the engine stopped ({result.termination.value})", e.span
        )
    bound = result.upper if e.subject == "upper" else result.lower
    text = f"expect {e.subject} {e.op} {value:g}"
    detail = f"{e.subject} = {bound:.6g}"
    holds = _compare(bound, e.op, value)
    if holds or result.exact:
        return Check(text, holds, detail, e.span)
    return Check(text, None, f"{detail}, not established ({result.termination.value})", e.span)


def _compare(a: float, op: str, b: float) -> bool:
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
