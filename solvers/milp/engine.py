"""The MILP engine: the formulation solved by HiGHS or Gurobi, with exact float32 witnesses.

A solve builds the program once (:mod:`~veritas_dsl.solvers.milp.formulation`), then runs the
solver; every solution it reports is turned into a witness and checked exactly
(:mod:`~veritas_dsl.solvers.milp.witness`). A solution that cannot be made one is cut off and the
program solved again, so a reported witness always reproduces. The trace pairs the best checked
witness with the solver's bound at every moment the callbacks report.

Two engines share this class: ``milp`` runs Gurobi when its licence allows the model's size and
HiGHS otherwise (saying why in ``Result.message`` when Gurobi is installed but too small), and
``gurobi`` runs Gurobi only, reporting ``licence_limit`` for a model its licence refuses.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.query import (
    Ball,
    MinimizeDistance,
    Query,
    Row,
    infeasible_optimum,
)
from veritas_dsl.ir.reductions import (
    Chain,
    MergeTies,
    MinimizeToMaximize,
    ProveToFind,
    StaticBounds,
)
from veritas_dsl.result import Result, Termination, TracePoint, Witness
from veritas_dsl.solvers.base import (
    Availability,
    ChainedEngine,
    Deadline,
    Limits,
    OutOfTime,
    unfinished,
    within_trivial,
)
from veritas_dsl.solvers.milp import Driver, available, capabilities, gurobi, highs
from veritas_dsl.solvers.milp.formulation import (
    Formulation,
    check_weights,
    formulate,
    hull_size,
    used_pairs,
)
from veritas_dsl.solvers.milp.outcome import Outcome
from veritas_dsl.solvers.milp.program import Infeasible, Program
from veritas_dsl.solvers.milp.progress import Live, Progress
from veritas_dsl.solvers.milp.witness import Cuts

logger = logging.getLogger("veritas_dsl")

#: Cuts (solutions that could not be made a witness) allowed before the engine gives up.
MAX_REPAIRS = 50
#: The smallest improvement (relative) a check of a closest distance asks the solver for.
CHECK_RESOLUTION = 1e-8


class MilpEngine(ChainedEngine):
    """Exact answers by mixed-integer programming; anytime through the solver's bounds.

    Parameters
    ----------
    name : str
        The engine's name in the registry.
    driver : {"auto", "highs", "gurobi"}
        ``auto`` uses Gurobi when its licence allows the model and HiGHS otherwise; the others
        use one solver only.
    """

    #: The program minimises or maximises a term or finds a point: prove and minimise are
    #: rewritten; the variable table gives the program's columns and their bounds.
    chain = Chain((ProveToFind(), MinimizeToMaximize(), MergeTies(), StaticBounds()))

    def __init__(self, name: str = "milp", driver: Driver = "auto") -> None:
        self.name = name
        self.driver = driver
        self.capabilities = capabilities(driver)

    def available(self) -> Availability:
        return available(self.driver)

    def solve_reduced(self, query: Query, limits: Limits, *, progress=None) -> Result:
        """Answer ``query`` (rewritten by ``chain``) exactly within ``limits``; bounds stream into
        the Result's trace.

        ``progress``, when given, sees the solver's own bounds while it runs, at most ten times a
        second: unchecked values, for a live display; the Result holds only checked ones.
        """
        start = time.monotonic()
        watching = progress is not None or limits.stop is not None
        live = Live(start, progress, limits.stop) if watching else None
        budget = _Budget.of(limits, start)
        try:
            result = self._solve(query, limits, budget, live)
        except KeyboardInterrupt:  # outside the solver, which stops itself with what it has
            result = unfinished(query, self.name, Termination.INTERRUPTED, start)
        result.time_s = time.monotonic() - start
        return within_trivial(query, result)

    # -- choosing a solver ----------------------------------------------------------------------

    def _choose(self, program: Program) -> tuple[str | None, str]:
        """The driver to run ``program`` with, and a note for the Result (or why none can)."""
        if self.driver == "highs":
            return "highs", ""
        licence = gurobi.licence()
        if self.driver == "gurobi":
            if not licence:
                return None, f"gurobi cannot run here ({licence.value})"
            if licence is Availability.LIMITED_LICENCE and not gurobi.fits_limited_licence(program):
                return None, gurobi.size_message(program)
            return "gurobi", ""
        if licence is Availability.AVAILABLE:
            return "gurobi", ""
        if licence is Availability.LIMITED_LICENCE:
            if gurobi.fits_limited_licence(program):
                return "gurobi", ""
            # the same words for every model: a note about the machine, shown once a file
            return "highs", (
                f"solved with HiGHS: the model is beyond the {gurobi.SIZE_LIMIT} variables or "
                "linear constraints that Gurobi's size-limited licence allows"
            )
        if licence is Availability.BAD_LICENCE:
            return "highs", "solved with HiGHS: gurobipy is installed but has no usable licence"
        return "highs", ""

    def _run(self, driver: str, program: Program, budget: _Budget, limits: Limits, live):
        remaining, nodes = budget.deadline.remaining(), budget.nodes
        if driver == "gurobi":
            return gurobi.solve(program, remaining, nodes, limits.max_memory_bytes, live)
        return highs.solve(program, remaining, nodes, live)

    # -- the solve loop -------------------------------------------------------------------------

    def _solve(self, query: Query, limits: Limits, budget: _Budget, live) -> Result:
        check_weights(query)
        goal = query.goal
        if isinstance(goal, MinimizeDistance) and isinstance(goal.center, Row):
            return self._solve_by_radius(query, goal, limits, budget, live)
        return self._solve_program(query, limits, budget, live)

    def _solve_by_radius(
        self, query: Query, goal: MinimizeDistance, limits: Limits, budget: _Budget, live
    ) -> Result:
        """A closest example, searched in growing L-inf boxes around the centre.

        Inside a box of radius ``r`` only the leaves the box reaches remain, so the programs are
        much smaller than the whole ensemble's. A box without a solution proves the optimum
        beyond ``r``; an optimum ``d <= r`` in the box is the optimum overall, since every closer
        point lies in the box (for L1 too: L1 below ``d`` means L-inf below ``d``). An L1 optimum
        above ``r`` is solved once more in the box of radius ``d``.
        """
        radius = _first_radius(query, goal)
        # A box whose every feature reaches twice the hull around the centre holds every input
        # that matters: the last box is none. Radii are weighted, as the distance is.
        heaviest = max(goal.weights or (1.0,))
        everything = 2.0 * hull_size(query, used_pairs(query), query.constraints) * heaviest
        known = 0.0  # the optimum is known to lie beyond this
        trace: list[TracePoint] = []
        phases = 0
        while True:
            phases += 1
            restricted = query
            if math.isfinite(radius):
                box = Ball("linf", goal.instance, goal.center, radius, goal.weights)
                restricted = replace(query, constraints=(*query.constraints, box))
            if live is not None:
                live.cap = (known, radius)
            result = self._solve_program(restricted, limits, budget, live)
            # Outside the box lies nothing closer than the radius: a global lower bound is the
            # box's own, capped at the radius.
            for point in result.trace:
                lower = max(known, min(point.lower, radius))
                trace.append(TracePoint(point.time_s, lower, point.upper))
            result.query = query.name
            result.trace = trace
            result.stats["radius_phases"] = phases
            if result.termination is Termination.INFEASIBLE and math.isfinite(radius):
                known = radius
                radius = 4.0 * radius if 4.0 * radius < everything else math.inf
                continue
            if result.termination is Termination.OPTIMAL and result.upper > radius:
                radius = result.upper
                continue
            if result.termination is not Termination.OPTIMAL and result.lower is not None:
                result.lower = max(known, min(result.lower, radius))
            return result

    def _solve_program(
        self, query: Query, limits: Limits, budget: _Budget | None = None, live=None
    ) -> Result:
        """One program (one box of a closest-example search); ``budget`` is what the solve's
        limits leave, the whole of ``limits`` when None."""
        budget = budget or _Budget.of(limits, time.monotonic())
        built = time.monotonic()
        try:
            form = formulate(query, budget.deadline)
        except Infeasible:
            bound = infeasible_optimum(query.goal)
            result = Result(query.name, self.name, Termination.INFEASIBLE, bound, bound)
            result.stats = {"driver": "none", "note": "infeasible on the bounds alone"}
            return result
        except OutOfTime:
            result = unfinished(query, self.name, Termination.TIME_LIMIT, budget.start)
            result.message = "the time limit passed while the program was being built"
            return result
        except KeyboardInterrupt:
            return unfinished(query, self.name, Termination.INTERRUPTED, budget.start)
        built = time.monotonic() - built
        driver, note = self._choose(form.program)
        if driver is None:
            termination = (
                Termination.LICENCE_LIMIT
                if gurobi.licence() is Availability.LIMITED_LICENCE
                else Termination.ERROR
            )
            result = Result(query.name, self.name, termination, *trivial_bounds(query))
            result.message = f"query {query.name}: {note}"
            result.stats = _size_stats(form.program)
            return result

        attempt = _Attempt(driver, form.program, [note] if note else [])
        progress = Progress(query, form)
        try:  # Ctrl-C outside the solver: report what the checked solutions gave
            outcome = self._attempt(attempt, form, progress, budget, limits, live)
        except KeyboardInterrupt:
            outcome = Outcome(Termination.INTERRUPTED)
        result = progress.result(self.name, outcome, time.monotonic() - budget.start)
        result.stats.update(_size_stats(attempt.program))
        result.stats.update(
            driver=attempt.driver, repairs=attempt.repairs, nodes=attempt.nodes, hull=form.hull
        )
        # where the time went: building the program, inside the solver, the rest reading
        result.stats.update(build_s=built, solver_s=attempt.solver_s)
        if attempt.checks:
            result.stats["optimality_checks"] = attempt.checks
        if outcome.objective is not None and form.sense:
            result.stats["solver_objective"] = form.sense * outcome.objective
        messages = attempt.notes + form.notes
        if outcome.message:
            messages.append(outcome.message)
        if attempt.repairs:
            reasons = "; ".join(set(attempt.reasons))
            logger.info("query %s: %d cuts (%s)", query.name, attempt.repairs, reasons)
        result.message = "; ".join(messages)
        return result

    def _attempt(
        self,
        attempt: _Attempt,
        form: Formulation,
        progress: Progress,
        budget: _Budget,
        limits: Limits,
        live,
    ) -> Outcome:
        """Solve, read the solution, cut or check, and solve again until an answer or a limit;
        the last solver outcome (or the limit's)."""
        while True:
            elapsed = time.monotonic() - budget.start
            if budget.deadline.passed():
                return Outcome(Termination.TIME_LIMIT)
            if budget.nodes is not None and budget.nodes <= 0:
                return Outcome(Termination.STEP_LIMIT)
            if (
                attempt.driver == "gurobi"
                and self.driver == "auto"
                and gurobi.licence() is Availability.LIMITED_LICENCE
                and not gurobi.fits_limited_licence(attempt.program)
            ):
                attempt.driver = "highs"
                attempt.notes.append(
                    f"continued with HiGHS: {gurobi.size_message(attempt.program)}"
                )
            if live is not None:
                live.sense, live.unit, live.squared = form.sense, form.unit, form.squared
            outcome = self._run(attempt.driver, attempt.program, budget, limits, live)
            outcome = outcome.in_units(form.unit)
            attempt.nodes += int(outcome.stats.get("nodes", 0))
            attempt.solver_s += float(outcome.stats.get("solver_s", 0.0))
            budget.spend(int(outcome.stats.get("nodes", 0)))
            if outcome.status is Termination.LICENCE_LIMIT and self.driver == "auto":
                attempt.driver = "highs"
                attempt.notes.append(f"solved with HiGHS: {outcome.message}")
                continue
            progress.absorb(outcome, elapsed)
            if outcome.status is not Termination.OPTIMAL:
                return outcome
            stop = _read(attempt, form, progress, outcome)
            if stop is not None:
                return stop


@dataclass
class _Attempt:
    """One program's solve as it goes: the driver, the program with the rows added so far (cuts
    and optimality checks), and the counts its stats report."""

    driver: str
    program: Program
    notes: list[str]
    repairs: int = 0
    reasons: list[str] = field(default_factory=list)
    nodes: int = 0
    checks: int = 0
    solver_s: float = 0.0


def _read(
    attempt: _Attempt, form: Formulation, progress: Progress, outcome: Outcome
) -> Outcome | None:
    """Read an optimal solution: the outcome to stop with, or None after adding the rows (a cut,
    or a check for anything closer) that the next solve needs."""
    reading = progress.read(outcome.solution)
    if isinstance(reading, Cuts) and reading.undecided:
        return Outcome(Termination.ERROR, message=f"{reading.reason}; the answer is unknown")
    if isinstance(reading, Witness):
        problem = progress.check_bound(reading, outcome)
        if problem is not None:
            return Outcome(Termination.ERROR, message=problem)
        previous, progress.final = progress.final, reading
        if previous is not None and reading.value >= previous.value:
            # The confirming solve's point lies below the target by the solver's count, and
            # not by exact arithmetic: its numbers cannot confirm anything.
            progress.final = None
            return Outcome(
                Termination.ERROR,
                message="the solver's check for a closer point returned one that is not "
                "closer; the bounds hold, the optimum is unknown",
            )
        if form.step is None or reading.value == 0.0:  # no distance is below 0
            return outcome
        # Ask once more for anything closer by half a grid step (see highs.OPTIONS); "infeasible"
        # confirms the answer, a solution improves it. A step below the solver's resolution
        # cannot be asked for: the bound check (Progress.check_bound) is then all there is.
        target = reading.value - form.step / 2
        if reading.value - target < CHECK_RESOLUTION * max(form.unit, reading.value):
            return outcome
        if not _checks_distances(attempt.driver):
            return outcome
        if not np.any(attempt.program.cost):  # a constant distance: nothing is closer (HiGHS
            return outcome  # takes a row without columns as holding, whatever its bound)
        attempt.checks += 1
        row = _objective_row(attempt.program, target / form.unit)
        attempt.program = attempt.program.with_rows([row])
        return None
    attempt.repairs += 1
    attempt.reasons.append(reading.reason)
    if attempt.repairs > MAX_REPAIRS:
        return Outcome(
            Termination.ERROR,
            message=f"no reproducing witness after {MAX_REPAIRS} cuts ({reading.reason})",
        )
    attempt.program = attempt.program.with_rows(reading.rows)
    return None


class _Budget:
    """What is left of a solve's limits, shared by its programs (boxes, cuts, checks)."""

    def __init__(self, start: float, deadline: Deadline, nodes: int | None) -> None:
        self.start = start
        self.deadline = deadline
        self.nodes = nodes

    @classmethod
    def of(cls, limits: Limits, start: float) -> _Budget:
        return cls(start, Deadline.after(limits.timeout_s, start), limits.max_steps)

    def spend(self, nodes: int) -> None:
        if self.nodes is not None:
            self.nodes -= nodes


def _first_radius(query: Query, goal: MinimizeDistance) -> float:
    """The smallest move from the centre that crosses a split of a model: the first box."""
    center = np.asarray(goal.center.values, dtype=np.float64)
    weights = np.ones(query.n_features) if goal.weights is None else np.array(goal.weights)
    least = math.inf
    for model_name, instance in used_pairs(query):
        if instance != goal.instance:
            continue
        model = query.models[model_name]
        inner = model.feature >= 0
        f = model.feature[inner]
        t = model.threshold[inner].astype(np.float64)
        with np.errstate(over="ignore"):  # below the lowest float32: -inf, as next_down
            below = np.nextafter(model.threshold[inner], np.float32(-np.inf)).astype(np.float64)
        c = center[f]
        steps = np.where(t > c, t - c, c - below) * weights[f]
        if len(steps):
            least = min(least, float(steps.min()))
    return least


def _checks_distances(driver: str) -> bool:
    return driver == "highs" and highs.CHECKS_DISTANCES


def _objective_row(program: Program, target: float) -> tuple[dict[int, float], float, float]:
    """The row ``objective <= target``."""
    cols = np.nonzero(program.cost)[0]
    coefs = {int(j): float(program.cost[j]) for j in cols}
    return coefs, -math.inf, target - program.offset


def _size_stats(program: Program) -> dict[str, int]:
    return {
        "columns": program.n_cols,
        "rows": program.n_rows,
        "nonzeros": program.n_nonzeros,
        "integer_columns": int(program.integer.sum()),
    }
