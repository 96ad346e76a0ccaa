"""Many output constraints, added as they are needed: the rounds of a lazy solve.

A robust counterfactual over a family (``where class(m, x) == 1 for m in V``, 50 variants of a
100-tree forest) is a conjunction of one output constraint per model, and an engine given all of
them pays for every tree of every variant at every step. Yet the variants agree almost
everywhere: the optimum under a few of the constraints usually satisfies all the others.

So an engine first answers the *relaxed* query, without the output constraints (goal and other
constraints unchanged); the witness is checked on every constraint left out (the reference
semantics, :mod:`veritas_dsl.ir.evaluate`), and the ones it breaks, most broken first, join the
query: one a round while fewer than four were added, then half as many as were added before (a
round's cost grows with the constraints it carries, and an optimum usually needs few; measured in
docs/reductions.md). Why it stays exact: the relaxed query's
inputs include the original's, so a bound on the relaxed optimum on the goal's own side (lower
for a minimisation, upper for a maximisation) bounds the original's, and an infeasible relaxation
proves the original infeasible. The other side comes only from witnesses that meet every
constraint; a relaxed optimum reached at such a witness is the original optimum.

The oracle never solves lazily: it answers the whole query, so the tests compare the rounds with
an independent answer. A* does not solve in rounds either: its searches switch the constraints
on themselves, by the same rule (:func:`broken_by`, :func:`next_batch`). Nor does a query with
a ``steps`` limit (the rounds would each count from zero), or one that proves (its conclusion is
a constraint of the search for a counterexample).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

from veritas_dsl.ir.evaluate import holds, model_outputs, term_value
from veritas_dsl.ir.goals import Find, Prove, infeasible_optimum, maximizes
from veritas_dsl.ir.query import OutputConstraint, Query, models_read
from veritas_dsl.result import Result, Termination, TracePoint, Witness
from veritas_dsl.solvers.base import ALONE, Availability, Capabilities, Engine, Limits, route

#: A query with fewer output constraints than this is solved at once: the rounds pay off when
#: most constraints are never needed.
LAZY_FROM = 8


def lazily(engine: Engine, query: Query, limits: Limits) -> bool:
    """Whether ``engine`` answers ``query`` in rounds (see the module docstring)."""
    return (
        engine.capabilities.lazy
        and limits.max_steps is None
        and lazy_constraints(query) is not None
    )


class Lazy:
    """``engine`` answering in rounds: an engine itself (:class:`~veritas_dsl.solvers.base.Engine`),
    so the solving route wraps ``engine`` in it when :func:`lazily` says so and runs it like any
    other. The route's chain (the shared steps) rewrites the whole query once; each round then
    goes through ``engine``'s own chain. It honours ``engine``'s limits but steps (the rounds
    would each count from zero), and is never wrapped again."""

    chain = ALONE

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.name = engine.name
        own = engine.capabilities
        self.capabilities = Capabilities(own.constructs, own.limits - {"steps"}, lazy=False)

    def available(self) -> Availability:
        return self.engine.available()

    def solve_reduced(self, query: Query, limits: Limits, *, progress=None) -> Result:
        return solve_lazily(self.engine, query, limits, progress, route)

    def solve(self, query: Query, limits: Limits | None = None, *, progress=None) -> Result:
        return route(self, query, limits, progress)


def lazy_constraints(query: Query) -> list[int] | None:
    """Indices of the top-level output constraints a lazy solve may leave out, or None when
    ``query`` is solved at once (a proof, or fewer than :data:`LAZY_FROM` of them)."""
    if isinstance(query.goal, Prove):
        return None
    found = [i for i, c in enumerate(query.constraints) if isinstance(c, OutputConstraint)]
    return found if len(found) >= LAZY_FROM else None


def solve_lazily(
    engine: Engine,
    query: Query,
    limits: Limits,
    progress: Callable | None,
    solve_once: Callable[[Engine, Query, Limits, Callable | None], Result],
) -> Result:
    """``engine``'s answer to ``query`` by rounds of relaxed queries, each solved by
    ``solve_once`` (see the module docstring); ``lazy_constraints(query)`` must not be None."""
    left_out = lazy_constraints(query)
    assert left_out is not None
    start = time.monotonic()
    deadline = None if limits.timeout_s is None else start + limits.timeout_s
    bounds = _Bounds(query)
    added: list[int] = []
    rounds = 0
    while True:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            result = bounds.result(engine.name, Termination.TIME_LIMIT, [])
            break
        rounds += 1
        offset = time.monotonic() - start
        answer = solve_once(
            engine,
            _relaxed(query, set(left_out) - set(added)),
            # A round's own bounds are of a relaxed query: its witness may break a left-out
            # constraint, so they may not stop it (Limits.stop).
            dataclasses.replace(limits, timeout_s=remaining, stop=None),
            bounds.progress(progress, offset),
        )
        if answer.termination in (Termination.ERROR, Termination.UNSUPPORTED):
            result = answer  # the relaxed query's fault is the query's
            break
        bounds.note(answer, offset)
        if answer.termination is Termination.INFEASIBLE:
            result = answer  # no input meets part of the constraints: none meets them all
            break
        broken, met = _check(query, answer.witnesses, [i for i in left_out if i not in added])
        for witness in met:
            bounds.met(witness)
        if answer.termination is not Termination.OPTIMAL:  # a limit: the bounds known so far
            result = bounds.result(engine.name, answer.termination, met)
            result.stats.update(answer.stats)
            break
        if not broken:  # the relaxed optimum, reached where every constraint holds
            result = dataclasses.replace(answer, witnesses=met, trace=[])
            break
        added += next_batch(broken, len(added))
    result.time_s = time.monotonic() - start
    result.trace = bounds.points
    if result.lower is not None or result.upper is not None:
        result.trace.append(TracePoint(result.time_s, result.lower, result.upper))
    result.stats["lazy_rounds"] = rounds
    result.stats["lazy_constraints"] = f"{len(added)}/{len(left_out)}"
    return result


def _relaxed(query: Query, dropped: set[int]) -> Query:
    """``query`` without the constraints ``dropped``, reading only the models it still reads."""
    constraints = tuple(c for i, c in enumerate(query.constraints) if i not in dropped)
    relaxed = dataclasses.replace(query, constraints=constraints)
    read = models_read(relaxed)
    models = {name: m for name, m in query.models.items() if name in read}
    return dataclasses.replace(relaxed, models=models)


def next_batch(broken: list[int], added: int) -> list[int]:
    """The constraints to add of ``broken`` (most broken first) when ``added`` were added
    before: one while fewer than four were, then half as many as before."""
    return broken[: max(1, added // 2)]


def broken_by(constraints, inputs, margins, candidates: list[int]) -> list[int]:
    """The ``candidates`` (indices in ``constraints``) that ``inputs`` break, most broken
    first (``margins``: the model outputs at ``inputs``)."""
    misses = [i for i in candidates if not holds(constraints[i], inputs, margins)]
    return sorted(misses, key=lambda i: -_shortfall(constraints[i], margins))


def _check(query: Query, witnesses: list[Witness], candidates: list[int]):
    """The constraints of ``candidates`` the first witness breaks, most broken first, and the
    witnesses that meet every one of them."""
    broken: list[int] = []
    feasible = []
    for n, witness in enumerate(witnesses):
        margins = model_outputs(query, witness.inputs)
        misses = broken_by(query.constraints, witness.inputs, margins, candidates)
        if not misses:
            feasible.append(witness)
        if n == 0:
            broken = misses
    return broken, feasible


def _shortfall(c: OutputConstraint, margins) -> float:
    """How far the term is on the wrong side of its right-hand side."""
    gap = term_value(c.term, margins) - c.rhs
    return -gap if c.op in (">", ">=") else gap


class _Bounds:
    """The original query's bounds through the rounds: the goal's side from the relaxed
    answers, the other side from witnesses that meet every constraint."""

    def __init__(self, query: Query) -> None:
        self.query = query
        self.up = maximizes(query.goal)
        self.find = isinstance(query.goal, Find)
        worst = infeasible_optimum(query.goal)
        # Relaxed side (an upper bound when maximising), witnessed side (the best met value).
        self.relaxed_side = None if self.find else -worst
        self.witnessed = worst
        self.points: list[TracePoint] = []

    def note(self, answer: Result, offset: float) -> None:
        """Take the relaxed answer's bound on the goal's side, and its trace (started at
        ``offset``) as bounds of the original query."""
        if self.find:
            return
        for point in answer.trace:
            self._take(point.upper if self.up else point.lower)
            self.points.append(TracePoint(offset + point.time_s, *self.bounds()))
        self._take(answer.upper if self.up else answer.lower)

    def _take(self, side: float | None) -> None:
        if side is not None and not math.isnan(side):
            self.relaxed_side = (min if self.up else max)(self.relaxed_side, side)

    def met(self, witness: Witness) -> None:
        if self.find or witness.value is None:
            return
        pick = max if self.up else min
        self.witnessed = pick(self.witnessed, witness.value)

    def bounds(self) -> tuple[float | None, float | None]:
        if self.find:
            return None, None
        if self.up:
            return self.witnessed, self.relaxed_side
        return self.relaxed_side, self.witnessed

    def result(self, engine: str, termination: Termination, witnesses: list) -> Result:
        return Result(self.query.name, engine, termination, *self.bounds(), list(witnesses))

    def progress(self, progress: Callable | None, offset: float) -> Callable | None:
        """``progress`` seeing the relaxed answer's reports as bounds of the original query."""
        if progress is None:
            return None

        def report(state) -> None:
            changes = {}
            if hasattr(state, "time_s"):
                changes["time_s"] = state.time_s + offset
            if not self.find and hasattr(state, "lower"):
                self._take(getattr(state, "upper" if self.up else "lower"))
                changes["lower"], changes["upper"] = self.bounds()
            progress(dataclasses.replace(state, **changes) if changes else state)

        return report
