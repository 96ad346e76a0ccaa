"""What a MILP solve has so far: the solver's running bounds for a live display (:class:`Live`),
and the best checked witness, the best bound and the trace that make its Result
(:class:`Progress`)."""

from __future__ import annotations

import math
import time

from veritas_dsl.ir.query import MinimizeDistance, Query, infeasible_optimum
from veritas_dsl.result import Result, Termination, TracePoint, Witness
from veritas_dsl.solvers.milp.formulation import Formulation
from veritas_dsl.solvers.milp.outcome import Outcome
from veritas_dsl.solvers.milp.witness import Cuts, read

#: A solver's bound is a floating-point sum with tolerances; it is loosened by this much
#: (relative, at least absolute) before it is reported, so that it stays a bound.
BOUND_SLACK = 1e-9

#: A limit or Ctrl-C: a witness found before it is the best known, not a proven optimum (the
#: check for anything closer did not finish).
_STOPPED = (
    Termination.TIME_LIMIT,
    Termination.STEP_LIMIT,
    Termination.MEMORY_LIMIT,
    Termination.INTERRUPTED,
)


def _loosen(bound: float) -> float:
    """A solver's lower bound (program sense), moved down by :data:`BOUND_SLACK`."""
    return bound - BOUND_SLACK * max(1.0, abs(bound))


class Live:
    """The solver's running bounds, turned into the goal's sense for a progress callback.

    In a box of a closest-example search (``cap = (known, radius)``) the lower bound is the
    box's own, capped at the radius and at least what earlier boxes proved.
    """

    def __init__(self, start: float, progress) -> None:
        self.start = start
        self.progress = progress
        self.sense = 0
        self.cap: tuple[float, float] | None = None
        self.shown = 0.0

    def __call__(self, incumbent: float, bound: float) -> None:
        now = time.monotonic()
        if not self.sense or now - self.shown < 0.1:
            return
        self.shown = now
        lower, upper = (bound, incumbent) if self.sense > 0 else (-incumbent, -bound)
        if self.cap is not None:
            known, radius = self.cap
            lower = max(known, min(lower, radius))
        self.progress(TracePoint(now - self.start, lower, upper))


class Progress:
    """The best checked witness and the best bound over the whole run, and the trace."""

    def __init__(self, query: Query, form: Formulation) -> None:
        self.query = query
        self.form = form
        self.best: Witness | None = None
        self.final: Witness | None = None
        self.bound = -math.inf  # program sense: a lower bound on the minimum
        self.trace: list[TracePoint] = []
        self._read: dict[bytes, Witness | Cuts] = {}

    def read(self, solution) -> Witness | Cuts:
        key = solution.tobytes()
        if key not in self._read:
            self._read[key] = read(self.query, self.form, solution)
        return self._read[key]

    def absorb(self, outcome: Outcome, offset: float) -> None:
        """Check the run's solutions and record its bounds, in time order."""
        events = [(t, 0, b) for t, b in outcome.bounds]
        events += [(t, 1, x) for t, _, x in outcome.solutions]
        for t, kind, payload in sorted(events, key=lambda e: (e[0], e[1])):
            if kind == 0:
                self.bound = max(self.bound, _loosen(payload))
            else:
                reading = self.read(payload)
                if isinstance(reading, Witness):
                    self._offer(reading)
            self._point(offset + t)
        if outcome.bound is not None and outcome.status is not Termination.INFEASIBLE:
            self.bound = max(self.bound, _loosen(outcome.bound))

    def attains(self, witness: Witness) -> bool:
        """Whether ``witness`` can be the optimum: always, unless it is a distance measured on
        value columns (rounded onto float32, see :mod:`.witness`), which must then meet the
        solver's bound; either way it is offered as the best so far."""
        self._offer(witness)
        if not (isinstance(self.query.goal, MinimizeDistance) and self.form.complex):
            return True
        lower, upper = self.bounds()
        return upper - lower <= 4 * BOUND_SLACK * max(1.0, abs(upper))

    def _offer(self, witness: Witness) -> None:
        if self.best is None or (
            witness.value is not None
            and self.form.sense * witness.value < self.form.sense * self.best.value
        ):
            self.best = witness

    def bounds(self) -> tuple[float, float]:
        """``(lower, upper)`` of the goal's optimum from the best witness and the best bound."""
        sense = self.form.sense
        found = math.inf if self.best is None else sense * self.best.value
        bound = min(self.bound, found)  # tolerances may leave the bound a hair above a witness
        if sense > 0:
            return bound, found
        return -found, -bound

    def _point(self, time_s: float) -> None:
        if not self.form.sense:
            return
        lower, upper = self.bounds()
        if not self.trace or (self.trace[-1].lower, self.trace[-1].upper) != (lower, upper):
            self.trace.append(TracePoint(time_s, lower, upper))

    def result(self, engine: str, outcome: Outcome, time_s: float) -> Result:
        query = self.query
        if self.final is not None and outcome.status not in _STOPPED:
            self._offer(self.final)
            witness = self.final
            value = witness.value
            result = Result(query.name, engine, Termination.OPTIMAL, value, value, [witness])
            if self.form.sense:
                self.trace.append(TracePoint(time_s, value, value))
        elif not self.form.sense and self.best is not None:
            # Find and prove are answered by any checked witness, even one found before a limit
            # (which is still why the solver stopped: the Result's solution says it is answered).
            termination = outcome.status if outcome.status in _STOPPED else Termination.OPTIMAL
            result = Result(query.name, engine, termination, None, None, [self.best])
        elif outcome.status is Termination.INFEASIBLE and self.best is None:
            bound = infeasible_optimum(query.goal)
            result = Result(query.name, engine, Termination.INFEASIBLE, bound, bound)
        else:
            termination = outcome.status
            if outcome.status in (Termination.OPTIMAL, Termination.INFEASIBLE):
                # The solver's last word contradicts a checked witness: trust only the witness.
                termination = Termination.ERROR
            lower, upper = self.bounds() if self.form.sense else (None, None)
            witnesses = [self.best] if self.best is not None else []
            result = Result(query.name, engine, termination, lower, upper, witnesses)
            if self.form.sense:
                self._point(time_s)
        result.trace = self.trace
        return result
