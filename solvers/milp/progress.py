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
#: (relative, and at least this much of the program's unit) before it is reported, so that it
#: stays a bound.
BOUND_SLACK = 1e-9
#: The bound check: an optimum is claimed only when the witness's exact value lies within this
#: much (relative) of the solver's bound (:meth:`Progress.check_bound`).
CLAIM_RESOLUTION = 4 * BOUND_SLACK

#: The solver's incumbent, unchecked, is taken this much worse (relative, and at least this much
#: of the program's unit) before its bounds may stop a solve early (``Limits.stop``): the
#: witness read from it, checked exactly, then still settles what the solver's value did.
STOP_MARGIN = 1e-6

#: A limit, a settled check or Ctrl-C: a witness found before it is the best known, not a proven
#: optimum (the check for anything closer did not finish).
_STOPPED = (
    Termination.DECIDED,
    Termination.TIME_LIMIT,
    Termination.STEP_LIMIT,
    Termination.MEMORY_LIMIT,
    Termination.INTERRUPTED,
)


def _loosen(bound: float, unit: float) -> float:
    """A solver's lower bound (program sense, goal units), moved down by :data:`BOUND_SLACK` of
    the larger of its magnitude and the program's ``unit``: its tolerances are absolute in the
    program's units."""
    return bound - BOUND_SLACK * max(unit, abs(bound))


def _root(square: float, down: bool = False) -> float:
    """The distance of a squared objective (``Formulation.squared``): its square root, rounded
    down for a bound; 0 for a square a solver's tolerance left below 0."""
    if square <= 0.0:
        return 0.0
    root = math.sqrt(square)  # within half an ulp: a step down keeps it a bound
    return math.nextafter(root, -math.inf) if down else root


class Live:
    """The solver's running bounds, turned into the goal's sense for a progress callback (at
    most ten times a second) and for ``stop`` (``Limits.stop``, asked at every call).

    In a box of a closest-example search (``cap = (known, radius)``) the lower bound is the
    box's own, capped at the radius and at least what earlier boxes proved.
    """

    def __init__(self, start: float, progress, stop=None) -> None:
        self.start = start
        self.progress = progress
        self.stop = stop
        self.sense = 0
        self.unit = 1.0  # the goal value of one unit of the program's objective
        self.cap: tuple[float, float] | None = None
        self.squared = False  # the objective is the square of the goal's value
        self.shown = 0.0

    def __call__(self, incumbent: float, bound: float) -> bool:
        """Note the solver's ``incumbent`` and ``bound`` (program sense and units); True when
        they settle ``stop``, with the bound loosened and the incumbent taken worse by margins
        (:data:`STOP_MARGIN`), so that the checked witness settles it too."""
        if not self.sense:
            return False
        incumbent, bound = incumbent * self.unit, bound * self.unit
        now = time.monotonic()
        if self.progress is not None and now - self.shown >= 0.1:
            self.shown = now
            self.progress(TracePoint(now - self.start, *self._goal(incumbent, bound)))
        if self.stop is None:
            return False
        worse = incumbent + STOP_MARGIN * max(self.unit, abs(incumbent))
        return self.stop.reached(*self._goal(worse, _loosen(bound, self.unit)))

    def _goal(self, incumbent: float, bound: float) -> tuple[float, float]:
        """``(lower, upper)`` in the goal's sense from program-sense values in goal units."""
        if self.squared:
            incumbent, bound = _root(incumbent), _root(bound, down=True)
        lower, upper = (bound, incumbent) if self.sense > 0 else (-incumbent, -bound)
        if self.cap is not None:
            known, radius = self.cap
            lower = max(known, min(lower, radius))
        return lower, upper


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
                self.bound = max(self.bound, self._lower(payload))
            else:
                reading = self.read(payload)
                if isinstance(reading, Witness):
                    self._offer(reading)
            self._point(offset + t)
        if outcome.bound is not None and outcome.status is not Termination.INFEASIBLE:
            self.bound = max(self.bound, self._lower(outcome.bound))

    def _lower(self, bound: float) -> float:
        """A solver's lower bound (program sense, goal units) as a bound on the goal."""
        loose = _loosen(bound, self.form.unit)
        return _root(loose, down=True) if self.form.squared else loose

    def check_bound(self, witness: Witness, outcome: Outcome) -> str | None:
        """The bound check of an optimal solution's ``witness``: why it may not be called
        optimal, or None. Either way it is offered as the best so far.

        The solver's bound for this solve must lie within :data:`CLAIM_RESOLUTION` of the
        witness's exact value: relative to the value itself for a distance (none is below 0),
        to the larger of the value and the program's unit for a term (which may be 0), plus,
        for a term, the rounding of the semantics' float64 sum (``Formulation.rounding``). This
        catches a bound, or an objective, that rests on values the solver accepted within its
        absolute tolerances and exact arithmetic rejects (a distance column a hair below its
        pieces made every distance under 1e-9 look like 0), and a float32 point rounded from a
        real solution (variables with value columns) that lies beyond the solver's optimum. It
        cannot see a better solution the solver pruned by less than its resolution, 1e-9 of the
        program's unit: writing the objective in units of the goal's own magnitude
        (``Formulation.unit``) is what keeps that small.
        """
        self._offer(witness)
        if not self.form.sense:
            return None
        distance = isinstance(self.query.goal, MinimizeDistance)
        value = self.form.sense * witness.value
        if self.form.squared:  # the solver's bound is a square: compare squares
            value *= value
        bound = outcome.bound if outcome.bound is not None else outcome.objective
        scale = abs(value) if distance else max(self.form.unit, abs(value))
        allowed = CLAIM_RESOLUTION * scale + self.form.rounding
        if bound is not None and value - bound <= allowed:
            return None
        if distance and self.form.complex:
            return (
                "the closest float32 point found lies beyond the solver's bound (variables with "
                "value columns); the bounds hold, the optimum is unknown"
            )
        if distance:
            return (
                f"the distance found, {witness.value:.6g}, lies beyond the solver's bound by more "
                f"than it resolves (1e-9 of {self.form.unit:g}); the bounds hold, the optimum is "
                "unknown"
            )
        return (
            "the exact value of the solver's solution lies beyond its bound by more than the "
            "solver resolves; the bounds hold, the optimum is unknown"
        )

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
            value = lower = witness.value
            if self.form.squared:
                # Squares of distances a float32 step apart differ by 1e-15 of them, far below
                # the solver's resolution: its bound, not the witness, is the lower bound.
                lower = min(value, max(self.bound, 0.0))  # no distance is below 0
            result = Result(query.name, engine, Termination.OPTIMAL, lower, value, [witness])
            if self.form.sense:
                self.trace.append(TracePoint(time_s, lower, value))
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
