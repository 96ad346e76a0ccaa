"""Run lowered queries on engines: choose engines, solve, validate witnesses, cross-check engines,
and judge expectations and properties.

The outcome of one lowered query is a :class:`~veritas_dsl.outcome.QueryRun`; reports render those.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from veritas_dsl import vacuity
from veritas_dsl.diagnostics import Diagnostic, SpecError
from veritas_dsl.errors import SoundnessError
from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.decided import StopRule, settled
from veritas_dsl.ir.empty import Emptiness
from veritas_dsl.ir.logic import compare
from veritas_dsl.ir.lowered import EngineChoice, Expectation, Lowered, Origin
from veritas_dsl.ir.probability import sigmoid
from veritas_dsl.ir.query import (
    Prove,
)
from veritas_dsl.ir.reductions import Chain
from veritas_dsl.outcome import NOT_RUN, Check, QueryRun, Verdict
from veritas_dsl.result import Result, Solution, Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.solve import SHARED, check
from veritas_dsl.solvers.solve import answer as run_engine
from veritas_dsl.validate import WitnessMismatch, validate_witnesses

#: Engines tried in order when a query names none: the first that supports the query runs.
DEFAULT_ENGINES = ("astar", "milp", "sat", "oracle")
DEFAULT_TIMEOUT_S = 60.0
#: Exact answers of two engines agree when they differ by at most this, relative to the larger;
#: values of any size are compared this way (an absolute tolerance below 1 hid a 2.7x
#: disagreement between distances of order 1e-11).
AGREEMENT = 1e-6
#: ... or by at most this, absolutely: engines add the same leaves in different orders, so an
#: exact 0 may come back as 5.6e-17 from one of them.
AGREEMENT_FLOOR = 1e-15


class EngineDisagreement(SoundnessError, RuntimeError):
    """Two engines gave different exact answers: one of them is wrong."""


@dataclass(frozen=True)
class RunOptions:
    """Choices from the command line that override or complete the spec's."""

    solver: str | None = None
    timeout_s: float | None = None
    progress: Callable | None = None
    #: Solve to the optimum even once the bounds settle every ``expect`` (:func:`stop_rule`).
    to_optimum: bool = False


def default_engines(lowered: Lowered) -> list[str]:
    """The default engines that declare every construct of ``lowered``, in preference order."""
    able = registry.able(lowered.query)
    return [name for name in DEFAULT_ENGINES if name in able and registry.ENGINES[name].available()]


@dataclass(frozen=True)
class Plan:
    """How one lowered query runs, chosen once before any query runs (:func:`plan`), so that
    nothing checks an engine's capabilities again (``--jobs`` workers and Dask tasks receive
    it). ``engines``: in order, with their limits; ``fallback``: the query names no engine,
    so the first of them answers, the next only when one refuses while solving; ``refusal``:
    the whole file's ``--solver`` and why it cannot take the query (reported unsupported)."""

    engines: tuple[tuple[str, Limits], ...]
    fallback: bool = False
    refusal: tuple[str, str] | None = None

    @property
    def engine(self) -> str:
        """The engine named first."""
        return self.engines[0][0] if self.engines else self.refusal[0]


def plan(lowered: Lowered, options: RunOptions) -> Plan:
    """The :class:`Plan` of ``lowered``; raises :class:`SpecError` when an engine choice cannot
    work, but for a ``--solver`` for the whole file lacking a construct of the query (the
    plan's ``refusal``: that query is reported unsupported and the others run)."""
    try:
        chosen = choose_engines(lowered, options)
    except SpecError as error:
        first = error.diagnostics[0]
        if not (options.solver and first.code == "V503"):
            raise  # an engine named in the spec that lacks a construct is a spec error
        return Plan((), refusal=(options.solver, first.message))
    return Plan(tuple(chosen), fallback=not (options.solver or lowered.origin.engines))


def choose_engines(lowered: Lowered, options: RunOptions) -> list[tuple[str, Limits]]:
    """The engines to run ``lowered`` on, with their limits; a clear error when none can. A
    query that names none gets every default engine that takes it (:func:`default_engines`)."""
    origin = lowered.origin
    timeout = options.timeout_s if options.timeout_s is not None else DEFAULT_TIMEOUT_S
    query = lowered.query
    if options.solver:
        choices = [EngineChoice(options.solver, None, None, None, origin.span)]
    elif origin.engines:
        choices = list(origin.engines)
    else:
        names = default_engines(lowered) or [DEFAULT_ENGINES[-1]]
        choices = [EngineChoice(name, None, None, None, origin.span) for name in names]
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
            # the N best solutions run until they are proven: no checks stop them
            stop=None if choice.solutions else stop_rule(lowered, choice, options.to_optimum),
            solutions=choice.solutions,
        )
        try:
            registry.check_limits(engine, limits)
        except UnsupportedQuery as error:
            raise SpecError([Diagnostic("V505", str(error), choice.span)]) from None
        chosen.append((choice.name, limits))
    return chosen


def preflight(lowered: list[Lowered], options: RunOptions) -> list[Plan]:
    """The plan of every lowered query (:func:`plan`), before anything runs; one
    :class:`SpecError` for every engine choice that cannot work. A ``--solver`` for the whole
    file that lacks a query's constructs is no error here: that query is reported unsupported
    and the others run (see :func:`run_lowered`)."""
    diagnostics: dict[tuple, Diagnostic] = {}
    plans = []
    for item in lowered:
        try:
            plans.append(plan(item, options))
        except SpecError as error:
            for d in error.diagnostics:
                diagnostics.setdefault((d.code, d.message, d.span), d)  # once per batch
    if diagnostics:
        raise SpecError(list(diagnostics.values()))
    return plans


def solve(
    lowered: Lowered,
    name: str,
    limits: Limits,
    progress=None,
    *,
    validate: bool = True,
    shared: Chain = SHARED,
) -> Result:
    """Solve ``lowered`` on engine ``name``, whose capabilities the caller checked (:func:`plan`,
    or :func:`~veritas_dsl.solvers.solve.check`), and validate every witness on the library
    models (``validate``: a ``--jobs`` worker leaves that to the parent, which holds them).

    ``progress(query_name, engine_name, report)`` sees the engine's progress reports. An engine
    that refuses the query while preparing gives an ``unsupported`` Result, and one that fails
    an ``error`` Result (:func:`veritas_dsl.solvers.solve.solve`); Ctrl-C that the engine
    lets through (or that lands while witnesses are validated) gives an ``interrupted`` Result
    with the trivial bounds and no witness. ``shared`` replaces the shared rewrites only to
    measure what they save.
    """
    engine = registry.get(name)
    report = None
    if progress is not None:
        query = lowered.query.name

        def report(state) -> None:
            progress(query, name, state)

    start = time.monotonic()
    try:
        result = run_engine(engine, lowered.query, limits, report, shared)
        if limits.solutions:
            note = result.solutions_note(limits.solutions)
            result.message = "; ".join(m for m in (result.message, note) if m)
        if validate:
            result = validated(lowered, result)
    except UnsupportedQuery as error:
        return _unsupported(lowered, name, str(error))
    except KeyboardInterrupt:
        return Result(
            lowered.query.name,
            name,
            Termination.INTERRUPTED,
            *trivial_bounds(lowered.query),
            time_s=time.monotonic() - start,
        )
    return result


def _solve_checked(lowered: Lowered, name: str, limits: Limits, progress) -> Result:
    """:func:`solve` for a query no plan checked (a premise): ``unsupported`` when ``name``
    lacks a construct of it or cannot honour ``limits``."""
    try:
        check(registry.get(name), lowered.query, limits)
    except UnsupportedQuery as error:
        return _unsupported(lowered, name, str(error))
    return solve(lowered, name, limits, progress)


def validated(lowered: Lowered, result: Result) -> Result:
    """``result``, once each of its witnesses reproduced on the library models of ``lowered``
    (:func:`~veritas_dsl.validate.validate_witnesses`: one predict for all); raises
    :class:`WitnessMismatch` naming the engine otherwise."""
    try:
        validate_witnesses(lowered.query, list(result.witnesses))
    except WitnessMismatch as error:
        raise WitnessMismatch(f"engine {result.engine}: {error}") from None
    return result


def run_lowered(
    lowered: Lowered, options: RunOptions, plan: Plan, *, validate: bool = True
) -> QueryRun:
    """Solve one lowered query on the engines of its ``plan``, cross-check them, and judge its
    checks (``validate``: see :func:`solve`).

    When the query names no engine and the default one refuses it (A* refuses a few
    combinations it cannot decide exactly), the next default engine answers, and says so.
    An engine that refuses the query (a ``--solver`` for the whole file lacking one of its
    constructs, or a refusal found while solving) gives an ``unsupported`` Result, so that the
    other queries still run. After an ``interrupted`` Result no further engine runs.
    """
    run = QueryRun(lowered)
    progress = options.progress
    if plan.refusal is not None:
        run.results.append(_unsupported(lowered, *plan.refusal))
    elif plan.fallback:
        answer = functools.partial(solve, validate=validate)
        run.results.append(_solve_with_fallback(lowered, plan.engines, progress, answer))
    else:
        for name, limits in plan.engines:
            run.results.append(solve(lowered, name, limits, progress, validate=validate))
            if run.results[-1].termination is Termination.INTERRUPTED:
                break
    cross_check(run.name, run.results)
    limits = plan.engines[0][1] if plan.engines else Limits()
    run.checks = _mind_the_premise(run, judge(lowered, run.result), limits, progress)
    return run


def _mind_the_premise(run: QueryRun, checks: list[Check], limits: Limits, progress) -> list[Check]:
    """``checks`` made vacuous when no input satisfies the premise (:mod:`veritas_dsl.vacuity`),
    which is asked when the static box shows it empty, or when a check holds with no input in
    hand (a property without a counterexample, `expect none`, a bound of nothing)."""
    box = vacuity.static_premise(run.lowered)
    found = any(r.witnesses for r in run.results)
    if box.empty and found:
        raise EngineDisagreement(
            f"query {run.name}: an engine found an input where the static box sees none"
        )
    if run.interrupted or run.errored:
        return checks
    if not box.empty and (found or all(c.verdict is not Verdict.HOLDS for c in checks)):
        return checks
    # the premise is a find: no bounds settle it, and it has no values to rank
    find = dataclasses.replace(limits, stop=None, solutions=None)
    satisfiable, why = _premise(run.lowered, box, run.result, find, progress)
    return [_qualify(c, satisfiable, why) for c in checks]


def _premise(lowered: Lowered, box: Emptiness, result: Result, limits: Limits, progress):
    """Whether some input satisfies the premise of ``lowered`` (True, False, or None when that
    could not be decided) and why: from the static box, else from a `find` of the premise alone
    on the engine that answered, with the same limits (immediate for the usual premises, which
    read no model)."""
    words = vacuity.premise_words(lowered)
    if box.empty is not None:
        return not box.empty, f"no input satisfies {words}"
    query = lowered.query
    premise = vacuity.premise(lowered)
    exact_premise = premise == query.constraints and not isinstance(query.goal, Prove)
    if result.termination is Termination.INFEASIBLE and exact_premise:
        return False, f"no input satisfies {words}"  # the engine has just shown it
    find = dataclasses.replace(lowered, query=vacuity.premise_query(lowered))
    answer = _solve_checked(find, result.engine, limits, progress)
    if answer.termination is Termination.UNSUPPORTED:  # the defaults may take the premise alone
        engines = [(name, limits) for name in default_engines(find) or [result.engine]]
        answer = _solve_with_fallback(find, engines, progress, _solve_checked)
    if answer.termination is Termination.UNSUPPORTED:
        return None, f"{words} could not be checked ({answer.message})"
    if answer.termination is Termination.INTERRUPTED:
        raise KeyboardInterrupt  # the run layer reports what finished
    if answer.termination is Termination.INFEASIBLE:
        return False, f"no input satisfies {words}"
    if answer.witnesses:
        return True, ""
    return None, f"{words} could not be shown satisfiable ({answer.termination.value})"


def _qualify(check: Check, satisfiable: bool | None, why: str) -> Check:
    """A check in the light of its premise: vacuous when none satisfies it; a check that holds
    is undecided when the premise could not be decided."""
    if satisfiable is False:
        return dataclasses.replace(check, verdict=Verdict.VACUOUS, detail=why)
    if satisfiable is None and check.verdict is Verdict.HOLDS:
        return dataclasses.replace(
            check, verdict=Verdict.UNDECIDED, detail=f"{check.detail}, but {why}"
        )
    return check


def _unsupported(lowered: Lowered, engine: str, message: str) -> Result:
    name = lowered.query.name
    return Result(
        name,
        engine,
        Termination.UNSUPPORTED,
        *trivial_bounds(lowered.query),
        message=message.removeprefix(f"query {name}: "),  # reports name the query already
    )


def _solve_with_fallback(lowered: Lowered, engines, progress, answer) -> Result:
    """The Result of the first of ``engines`` (names and limits) that does not refuse
    ``lowered``, each run by ``answer`` (:func:`solve`, or :func:`_solve_checked`)."""
    refusals = []
    for name, limits in engines:
        result = answer(lowered, name, limits, progress)
        if result.termination is Termination.UNSUPPORTED:
            refusals.append(f"{name} refused it ({result.message})")
            continue
        if refusals:
            result.message = "; ".join([*refusals, result.message] if result.message else refusals)
        return result
    return _unsupported(lowered, engines[0][0], "; ".join(refusals))


def cross_check(name: str, results: list[Result]) -> None:
    """Raise :class:`EngineDisagreement` when two exact answers differ (by what they found, not
    why they stopped)."""
    exact = [r for r in results if r.exact]
    for other in exact[1:]:
        first = exact[0]
        if first.solution != other.solution or not (
            _same(first.lower, other.lower) and _same(first.upper, other.upper)
        ):
            raise EngineDisagreement(
                f"query {name}: engines disagree: "
                f"{first.engine} says {first.solution.value} "
                f"[{first.lower}, {first.upper}], {other.engine} says {other.solution.value} "
                f"[{other.lower}, {other.upper}]"
            )


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= max(AGREEMENT * max(abs(a), abs(b)), AGREEMENT_FLOOR)


def stop_rule(lowered: Lowered, choice: EngineChoice, to_optimum: bool) -> StopRule | None:
    """What lets an engine stop before the optimum: its bounds settling every ``expect`` on a
    bound (:mod:`veritas_dsl.ir.decided`, the rule :func:`judge` applies too; not
    ``to_optimum``), or within the ``gap`` of ``choice``."""
    checks = []
    if not (lowered.origin.is_property or to_optimum):
        checks = [(e.op, e.bound) for e in lowered.expectations if e.subject in ("upper", "lower")]
    return StopRule.of(checks, choice.gap_abs, choice.gap_rel)


def judge(lowered: Lowered, result: Result) -> list[Check]:
    """The verdicts of a query's expectations (or, for a property, of the property)."""
    if lowered.origin.is_property:
        return [_property_check(lowered.origin, result)]
    return [_expectation_check(e, result) for e in lowered.expectations]


def _property_check(origin: Origin, result: Result) -> Check:
    text = f"property {origin.name}"
    if result.termination is Termination.INFEASIBLE:
        return Check(text, Verdict.HOLDS, "no counterexample exists", origin.span)
    if result.solution is Solution.OPTIMAL and result.witnesses:  # even one found at a limit
        return Check(text, Verdict.FAILED, "counterexample found", origin.span)
    return Check(
        text,
        Verdict.UNDECIDED,
        f"unknown: the engine stopped ({result.termination.value})",
        origin.span,
    )


def _expectation_check(e: Expectation, result: Result) -> Check:
    value = e.bound
    if e.subject in ("found", "none"):
        found = result.solution is Solution.OPTIMAL and bool(result.witnesses)
        text = f"expect {e.subject}"
        if result.termination is Termination.INFEASIBLE:
            detail = "no input satisfies the query"
            return Check(text, _verdict(e.subject == "none"), detail, e.span)
        if found:
            return Check(text, _verdict(e.subject == "found"), "an input was found", e.span)
        return Check(
            text,
            Verdict.UNDECIDED,
            f"unknown: the engine stopped ({result.termination.value})",
            e.span,
        )
    bound = result.upper if e.subject == "upper" else result.lower
    text = f"expect {e.subject} {e.op} {value if e.probability is None else e.probability:g}"
    detail = f"{e.subject} = {bound:.6g}"
    if e.probability is not None:  # decided on the margin, shown in both scales
        detail += f", probability {sigmoid(bound):.6g}"
    if result.exact:
        return Check(text, _verdict(compare(bound, e.op, value)), detail, e.span)
    if result.termination not in NOT_RUN:  # errors promise nothing
        holds = settled(e.op, value, result.lower, result.upper)
        if holds is not None:
            return Check(text, _verdict(holds), _why(detail, e, holds, result), e.span)
    return Check(
        text, Verdict.UNDECIDED, f"{detail}, not established ({result.termination.value})", e.span
    )


def _why(detail: str, e: Expectation, holds: bool, result: Result) -> str:
    """``detail``, with the other bound when it is the one that settled the check: a failed
    ``expect upper <= c`` that a witness above ``c`` decided before the optimum was proven."""
    other, value = ("lower", result.lower) if e.subject == "upper" else ("upper", result.upper)
    own = result.upper if e.subject == "upper" else result.lower
    if compare(own, e.op, e.bound) == holds:
        return detail
    return f"{detail}, and {other} = {value:.6g} settles it"


def _verdict(holds: bool) -> Verdict:
    return Verdict.HOLDS if holds else Verdict.FAILED
