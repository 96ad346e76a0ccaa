"""The exact SAT engine: CNF for the inputs and trees, an exact propagator for output sums.

How a query is answered
    The inputs, trees and input constraints become CNF (:mod:`.encode`). Output terms become
    sums over leaf literals with exact integer weights (:mod:`.linear`), propagated by
    :class:`~.propagate.SumPropagator` inside CaDiCaL 1.9.5. Every model is turned into float32
    inputs and evaluated in float64 exactly as ``Ensemble.eval`` and ``term_value`` do; a model
    whose float64 value breaks an output constraint (possible only within the float64 rounding
    error of the sum, see :func:`.linear.rounding_error`) is excluded by a clause over its leaves
    and the search goes on. Every witness returned satisfies the query under its reference
    semantics (``veritas_dsl.ir.evaluate.holds``).
Optimisation
    Maximise (a minimisation arrives as the maximisation of the negated term,
    ``ir.reductions.MinimizeToMaximize``) by bound tightening: each step adds ``Q >= mid`` on
    the integer sum ``Q`` under a fresh selector literal, assumed for that call only (and
    falsified for good after it). A model
    raises the lower bound to its float64 value; UNSAT lowers the upper bound. Both bounds are
    valid at every step and recorded in the trace; the answer is optimal when no combination of
    leaves can beat the best witness. Steps alternate a probe halfway to the upper bound, with a
    conflict budget, and the call for anything better than the best witness.
Distances
    ``minimize linf(x, c)``: a cell's distance to a center (to its closest value: an integer in
    an integral cell) or to another instance's cell is exact, so the optimum is one of finitely
    many such distances; a binary search over them, each step an L-inf ball of that radius under
    a selector, finds it exactly.
Time limit and Ctrl-C
    Building the encoding watches the deadline. The propagator falsifies an assumed ``alive``
    literal once the deadline passes; the bounds known then are reported with status
    ``time_limit``. CaDiCaL runs in a worker thread, so that Ctrl-C reaches Python in the main
    one (in the main thread PySAT's own handler jumps out of CaDiCaL, which then aborts the
    process when it is closed); the main thread stops it through ``alive`` too, and the bounds
    known are reported with status ``interrupted``.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.constructs import CONSTRUCTS, constructs
from veritas_dsl.ir.evaluate import holds, model_outputs, model_votes, term_value
from veritas_dsl.ir.query import (
    Find,
    Maximize,
    MinimizeDistance,
    OutputConstraint,
    OutputTerm,
    Query,
    Row,
    infeasible_optimum,
)
from veritas_dsl.ir.reductions import Chain, MergeTies, MinimizeToMaximize, ProveToFind
from veritas_dsl.result import Result, Termination, TracePoint, Witness
from veritas_dsl.solvers.base import (
    Availability,
    Capabilities,
    Deadline,
    Limits,
    OutOfTime,
    UnsupportedQuery,
    solve_with,
    unfinished,
    within_trivial,
)
from veritas_dsl.solvers.interrupt import run_interruptible
from veritas_dsl.solvers.sat.encode import Encoding
from veritas_dsl.solvers.sat.linear import LinearForm, linear_form, scale_of
from veritas_dsl.solvers.sat.propagate import GroupSum, SumPropagator, ladder_clauses

#: What the SAT engine answers exactly. Refused: ``l1`` (a sum of real distances) and
#: ``linear`` (real-valued linear constraints over inputs): their exact float32 semantics has
#: no finite encoding on the threshold grid; the MILP engine and the oracle take them.
SUPPORTED = CONSTRUCTS - {"l1", "linear"}

#: Conflicts a probe for a better upper bound may spend (see ``_maximize``); None: no limit.
PROBE_CONFLICTS: int | None = 20_000
#: Probe while the gap between the bounds is above this, relative to the best value (at least
#: 1); then only ask for anything better than the best.
PROBE_WHILE = Fraction(1, 1000)

#: What a call with a conflict budget returns when the budget runs out.
_UNKNOWN = "unknown"

#: The SAT solver: the one PySAT solver with the IPASIR-UP propagator interface.
SOLVER = "cadical195"
#: Clauses handed to the solver between two looks at the clock.
CLAUSE_CHUNK = 20_000


class SatEngine:
    """Exact answers by SAT with an exact propagator for sums of leaf values."""

    name = "sat"
    capabilities = Capabilities(constructs=SUPPORTED, exact=True, anytime=True)
    #: The search maximises or finds: prove and minimise are rewritten; ties name variables.
    chain = Chain((ProveToFind(), MinimizeToMaximize(), MergeTies()))

    def available(self) -> Availability:
        try:
            from pysat.solvers import Cadical195  # noqa: F401
        except ImportError:
            return Availability.NOT_INSTALLED
        return Availability.AVAILABLE

    def solve(
        self,
        query: Query,
        limits: Limits | None = None,
        *,
        progress=None,
    ) -> Result:
        """Answer ``query`` exactly, or with valid bounds at the time limit.

        ``progress``, when given, receives each new point of the trace as it is found. The
        query's constructs are within :data:`SUPPORTED` (checked before, by
        :func:`veritas_dsl.solvers.solve.solve`).
        """
        return solve_with(self, query, limits, progress)

    def solve_reduced(self, query: Query, limits: Limits, *, progress=None) -> Result:
        """:meth:`solve` for a query ``chain`` rewrote."""
        start = time.monotonic()
        search = _Search(query, limits, progress, start)
        try:
            search.build()
            result = search.run()
        except OutOfTime:
            result = search.stopped(Termination.TIME_LIMIT)
        except KeyboardInterrupt:
            result = search.stopped(Termination.INTERRUPTED)
        finally:
            search.close()
        result.time_s = time.monotonic() - start
        return within_trivial(query, result)


class _Search:
    """One solve: the encoding, the solver with its propagator, the bounds and the trace."""

    def __init__(self, query: Query, limits: Limits, progress, start: float) -> None:
        self.start = start
        self.deadline = Deadline.after(limits.timeout_s, start)
        self.progress = progress
        self.query = query
        self.encoding: Encoding | None = None
        self.solver = None
        self.propagator: SumPropagator | None = None
        self.interrupted = False
        self.witness: Witness | None = None  # the best so far, for a stop
        self.forms: dict[OutputTerm, LinearForm] = {}
        self.sums: dict[tuple[OutputTerm, bool], tuple[GroupSum, Fraction]] = {}
        self.flushed = 0
        self.trace: list[TracePoint] = []
        self.stats = {"solver_calls": 0, "excluded_by_rounding": 0, "excluded_ties": 0}

    def build(self) -> None:
        """The encoding, the solver and its propagator; :class:`OutOfTime` at the deadline."""
        from pysat.solvers import Solver

        query = self.query
        goal = query.goal
        self.required = query.constraints
        self.votes = "hard_vote" in constructs(query)
        self.encoding = Encoding(query, self.deadline)
        self.encoding.check_pairs()
        if isinstance(goal, MinimizeDistance):
            self._check_distance_goal(goal)
        self.solver = Solver(name=SOLVER)
        self._flush()
        self.solver.configure({"chrono": 0})
        self.alive = self.encoding.new_var()
        self.propagator = SumPropagator(self.alive)
        self.propagator.attach(self.solver)
        self.propagator.deadline = self.deadline.at
        for guarded in self.encoding.outputs:
            self._output_constraint(guarded.constraint, guarded.guard or self.encoding.true)
        for s, _ in self.sums.values():
            self.propagator.guide(s)  # toward satisfying the output constraints
        self._flush()

    def close(self) -> None:
        if self.propagator is not None:
            self.solver.disconnect_propagator()
        if self.solver is not None:
            self.solver.delete()

    def stopped(self, termination: Termination) -> Result:
        """The Result of a stop outside a solver call: the last bounds of the trace (the trivial
        ones before any) and the best witness."""
        if not self.trace:
            result = unfinished(self.query, SatEngine.name, termination, self.start)
            result.witnesses = [self.witness] if self.witness is not None else []
            return result
        last = self.trace[-1]
        return self._result(termination, last.lower, last.upper, self.witness)

    @property
    def stop(self) -> Termination:
        """Why a solver call returned without an answer."""
        return Termination.INTERRUPTED if self.interrupted else Termination.TIME_LIMIT

    # -- clauses, sums and calls -------------------------------------------------------------

    def _flush(self) -> None:
        """Move clauses the encoding produced since the last call into the solver, watching the
        deadline between chunks."""
        clauses = self.encoding.clauses
        while self.flushed < len(clauses):
            self.deadline.check()
            chunk = clauses[self.flushed : self.flushed + CLAUSE_CHUNK]
            self.solver.append_formula(chunk)
            self.flushed += len(chunk)

    def _form(self, term: OutputTerm) -> LinearForm:
        if term not in self.forms:
            self.forms[term] = linear_form(term, self.query, self.encoding)
        return self.forms[term]

    def _sum(self, term: OutputTerm, up: bool) -> tuple[GroupSum, Fraction]:
        """The propagator sum of ``term`` with its integer scale: ``Q = S (E - offset)`` when
        ``up``, else its complement ``S span - Q``, both exact integers, over a ladder per tree."""
        key = (term, up)
        if key not in self.sums:
            form = self._form(term)
            scale = scale_of(form)
            groups = []
            for group in form.groups:
                self.deadline.check()
                weights = {lit: int(w * scale) for lit, w in group}
                if not up:
                    top = max(weights.values())
                    weights = {lit: top - w for lit, w in weights.items()}
                levels = sorted(set(weights.values()))
                position = {w: k for k, w in enumerate(levels)}
                leaves: list[list[int]] = [[] for _ in levels]
                for lit, w in weights.items():
                    leaves[position[w]].append(lit)
                ladder = [self.encoding.new_var() for _ in levels[1:]]
                for clause in ladder_clauses(levels, leaves, ladder):
                    self.encoding.clause(clause)
                groups.append((ladder, levels))
            self._flush()
            self.sums[key] = (self.propagator.add_sum(groups), scale)
        return self.sums[key]

    def _threshold(
        self, term: OutputTerm, at_least: bool, bound: Fraction, strict: bool, guard: int
    ) -> None:
        """``guard -> E > bound`` (``>=`` unless strict) when ``at_least``, else ``E < bound``."""
        form = self._form(term)
        s, scale = self._sum(term, at_least)
        target = scale * (bound - form.offset)
        if at_least:
            k = math.floor(target) + 1 if strict else math.ceil(target)
        else:
            top = math.ceil(target) - 1 if strict else math.floor(target)
            k = s.maximum - top
        if k <= 0:
            return
        if k > s.maximum:
            self.encoding.clause([-guard])
            return
        self.propagator.add_threshold(s, guard, k)

    def _output_constraint(self, c: OutputConstraint, guard: int) -> None:
        """The rounding-safe relaxation of ``c``: ``F op rhs`` implies ``E op' rhs -+ error``."""
        form = self._form(c.term)
        rhs = Fraction(c.rhs)
        exact = form.error == 0
        if c.op in (">", ">="):
            strict = c.op == ">" and exact
            self._threshold(c.term, True, rhs - form.error, strict, guard)
        else:
            strict = c.op == "<" and exact
            self._threshold(c.term, False, rhs + form.error, strict, guard)

    def _call(self, assumptions: list[int], budget: int | None = None):
        """Solve under ``assumptions``: the model's truth array, False, None at the deadline, or
        ``_UNKNOWN`` when ``budget`` (conflicts) runs out first."""
        self._flush()
        if self.deadline.passed():
            return None
        self.stats["solver_calls"] += 1
        assumptions = [self.alive, *assumptions]
        if budget is None:
            answer = self._in_thread(lambda: self.solver.solve(assumptions=assumptions))
        else:
            self.solver.conf_budget(budget)
            answer = self._in_thread(lambda: self.solver.solve_limited(assumptions=assumptions))
            if answer is None and not self.propagator.expired:
                return _UNKNOWN
        if not answer:
            return None if self.propagator.expired else False
        return self.encoding.truth(self.solver.get_model())

    def _in_thread(self, call):
        """``call()`` in a worker thread; Ctrl-C meanwhile stops the solver through ``alive``."""

        def interrupt() -> None:
            self.interrupted = True
            self.propagator.expired = True

        return run_interruptible(call, interrupt)

    def _witness(self, assumptions: list[int], budget: int | None = None):
        """A model under ``assumptions`` turned into inputs that satisfy the query in float64.

        Models whose float64 outputs break a guarded output constraint are excluded, one leaf
        combination at a time, and the search repeats. Returns (inputs, outputs, truth) for the
        model, False when there is none, None at the deadline, ``_UNKNOWN`` past ``budget``.
        """
        while True:
            truth = self._call(assumptions, budget)
            if truth is None or truth is False or truth is _UNKNOWN:
                return truth
            inputs = self.encoding.witness(truth)
            outputs = model_outputs(self.query, inputs)
            votes = model_votes(self.query, inputs) if self.votes else None
            self._check_sums(truth, outputs)
            if all(holds(c, inputs, outputs, votes) for c in self.required):
                return inputs, outputs, truth
            excluded = 0
            for guarded in self.encoding.outputs:
                guard = guarded.guard or self.encoding.true
                if truth[guard] and not holds(guarded.constraint, inputs, outputs):
                    chosen = self._form(guarded.constraint.term).chosen(truth)
                    self.encoding.clause([-guard, *(-lit for lit in chosen)])
                    excluded += 1
            if not excluded:
                broken = next(c for c in self.required if not holds(c, inputs, outputs, votes))
                raise AssertionError(f"sat engine: witness {inputs} breaks {broken}")
            self.stats["excluded_by_rounding"] += excluded

    def _check_sums(self, truth: np.ndarray, outputs) -> None:
        """Every exact sum must lie within its error bound of the float64 value (else the leaf
        literals disagree with the inputs: a bug)."""
        for term, form in self.forms.items():
            exact = form.value(truth)
            value = term_value(term, outputs)
            if abs(Fraction(value) - exact) > form.error:
                raise AssertionError(
                    f"sat engine: leaves of the model give {float(exact)}, the inputs {value}"
                )

    def _point(self, lower: float, upper: float) -> None:
        self.trace.append(TracePoint(time.monotonic() - self.start, lower, upper))
        if self.progress is not None and not self.interrupted:
            self.progress(self.trace[-1])

    def _result(self, termination: Termination, lower=None, upper=None, witness=None) -> Result:
        stats = dict(self.stats)
        stats.update(
            variables=self.encoding.top,
            clauses=len(self.encoding.clauses),
            propagator_calls=self.propagator.calls,
            propagated=self.propagator.propagations,
            explanations=self.propagator.explanations,
            paired_trees=sum(form.paired for form in self.forms.values()),
        )
        return Result(
            query=self.query.name,
            engine=SatEngine.name,
            termination=termination,
            lower=lower,
            upper=upper,
            witnesses=[witness] if witness is not None else [],
            trace=self.trace,
            stats=stats,
        )

    # -- goals -------------------------------------------------------------------------------

    def run(self) -> Result:
        goal = self.query.goal
        if isinstance(goal, Find):
            return self._find()
        if isinstance(goal, Maximize):
            return self._maximize(goal.term)
        if isinstance(goal, MinimizeDistance):
            return self._min_distance(goal)
        raise TypeError(f"unknown goal {goal!r}")

    def _find(self) -> Result:
        found = self._witness([])
        if found is None:
            return self._result(self.stop)
        if found is False:
            return self._result(Termination.INFEASIBLE)
        return self._result(Termination.OPTIMAL, witness=Witness(found[0]))

    def _maximize(self, term: OutputTerm) -> Result:
        """Maximise ``term``."""

        def report(termination, lower, upper, best=None):
            witness = None if best is None else Witness(best, best_value)
            return self._result(termination, lower, upper, witness)

        point = self._point

        found = self._witness([])
        if found is None:
            return report(self.stop, -math.inf, math.inf)
        if found is False:
            bound = infeasible_optimum(Maximize(term))
            point(bound, bound)
            return report(Termination.INFEASIBLE, bound, bound)
        best, best_value = found[0], term_value(term, found[1])
        self.witness = Witness(best, best_value)
        _, upper = trivial_bounds(self.query)  # until the sum of the term gives better
        point(best_value, max(best_value, upper))
        form = self._form(term)
        s, scale = self._sum(term, True)
        self.propagator.guides.clear()
        self.propagator.guide(s)
        q_max = s.maximum

        def upper_of(q_max: int) -> float:
            return _float_up(form.offset + Fraction(q_max) / scale + form.error)

        point(best_value, max(best_value, upper_of(q_max)))
        probing = True
        while True:
            q_need = math.floor(scale * (Fraction(best_value) - form.error - form.offset)) + 1
            if q_need > q_max:
                point(best_value, best_value)
                return report(Termination.OPTIMAL, best_value, best_value, best)
            # Ask for anything better than the best witness: the one call that can prove it
            # optimal. Before it, a probe halfway to the upper bound, with a budget: when it
            # is cheap it lowers the upper bound (or finds a much better point); bisecting
            # without a budget repeats the hardest calls, those near the optimum (on 100 trees
            # of depth 6 it took 219 s where this takes about 30).
            mid, budget = q_need, None
            wide = q_max - q_need > PROBE_WHILE * scale * max(1, abs(Fraction(best_value)))
            if probing and wide:
                mid, budget = q_need + (q_max - q_need + 1) // 2, PROBE_CONFLICTS
            selector = self.encoding.new_var()
            self.propagator.add_threshold(s, selector, mid)
            found = self._witness([selector], budget)
            self.encoding.clause([-selector])
            s.thresholds.remove((selector, mid))
            if found is _UNKNOWN:
                probing = False
                continue
            probing = True
            if found is None:
                return report(self.stop, best_value, max(best_value, upper_of(q_max)), best)
            if found is False:
                q_max = mid - 1
            else:
                truth = found[2]
                value = term_value(term, found[1])
                if value > best_value:
                    best, best_value = found[0], value
                    self.witness = Witness(best, best_value)
                else:
                    # Within the float64 error of the sum, this combination scores no better
                    # than the best witness: it need not be seen again.
                    self.encoding.clause([-lit for lit in form.chosen(truth)])
                    self.stats["excluded_ties"] += 1
            point(best_value, max(best_value, upper_of(q_max)))

    # -- distances ---------------------------------------------------------------------------

    def _check_distance_goal(self, goal: MinimizeDistance) -> None:
        """The witness takes each variable closest to the goal's center, unless the variable is
        tied to another instance's (a tie, change count or ball in a disjunction); then it
        cannot do both, so such queries are refused."""
        if isinstance(goal.center, Row):
            paired = {v for pair in self.encoding.pairs for v in pair}
            i = self.query.instances.index(goal.instance)
            if paired & {int(v) for v in self.encoding.var[i]}:
                raise UnsupportedQuery(
                    f"query {self.query.name}: engine sat cannot minimise a distance to a row "
                    "for an instance also compared with another instance"
                )

    def _min_distance(self, goal: MinimizeDistance) -> Result:
        candidates = self._gap_candidates(goal)
        found = self._witness([])
        if found is None:
            return self._result(self.stop, 0.0, math.inf)
        if found is False:
            self._point(math.inf, math.inf)
            return self._result(Termination.INFEASIBLE, math.inf, math.inf)
        best, best_gap = found[0], self._gap_of(goal, found[0])
        self.witness = Witness(best, float(best_gap))
        lo, hi = 0, candidates.index(best_gap)  # the optimum is candidates[lo..hi]
        self._point(_float_down(candidates[lo]), _float_up(best_gap))
        while lo < hi:
            mid = (lo + hi) // 2
            selector = self.encoding.new_var()
            self._within(goal, candidates[mid], selector)
            found = self._witness([selector])
            self.encoding.clause([-selector])
            if found is None:
                return self._distance_result(self.stop, candidates[lo], best, best_gap)
            if found is False:
                lo = mid + 1
            else:
                best, best_gap = found[0], self._gap_of(goal, found[0])
                self.witness = Witness(best, float(best_gap))
                hi = candidates.index(best_gap)
            self._point(_float_down(candidates[lo]), _float_up(best_gap))
        return self._distance_result(Termination.OPTIMAL, best_gap, best, best_gap)

    def _distance_result(self, termination, lower: Fraction, best, best_gap: Fraction) -> Result:
        value = float(best_gap)  # the exact distance, to the nearest float64, as reported
        lower_value = value if lower == best_gap else _float_down(lower)
        return self._result(termination, lower_value, value, Witness(best, value))

    def _gap_of(self, goal: MinimizeDistance, inputs) -> Fraction:
        from veritas_dsl.ir.evaluate import exact_distance, reference_point

        return exact_distance("linf", inputs[goal.instance], reference_point(goal.center, inputs))

    def _gap_candidates(self, goal: MinimizeDistance) -> list[Fraction]:
        """Every value the distance can take at a closest pair of points of two cells."""
        enc = self.encoding
        values = {Fraction(0)}
        for f in range(self.query.n_features):
            grid = enc.grids[f]
            cells = [grid.cell(j) for j in range(grid.n_cells)]
            if isinstance(goal.center, Row):
                c = goal.center.values[f]
                values.update(grid.distance(j, c) for j in range(grid.n_cells))
            elif enc.variable(goal.instance, f) != enc.variable(goal.center, f):
                values.update(_gap(a, b) for a in cells for b in cells)
        return sorted(v for v in values if v is not None)

    def _within(self, goal: MinimizeDistance, radius: Fraction, guard: int) -> None:
        """``guard -> every feature's cell lies within radius of the center``."""
        enc = self.encoding
        for f in range(self.query.n_features):
            a = enc.variable(goal.instance, f)
            if isinstance(goal.center, Row):
                c = goal.center.values[f]
                grid = enc.grids[f]
                near = [j for j in range(grid.n_cells) if grid.distance(j, c) <= radius]
                if not near:
                    enc.clause([], guard)
                    return
                if near[0] > 0:
                    enc.clause([enc.order[a][near[0] - 1]], guard)
                if near[-1] < grid.n_cells - 1:
                    enc.clause([-enc.order[a][near[-1]]], guard)
            else:
                enc.cell_gap_at_most(f, a, enc.variable(goal.center, f), radius, guard)


def _gap(a: tuple[float, float], b: tuple[float, float]) -> Fraction | None:
    """The exact distance between the closest points of two closed intervals (None: infinite)."""
    if a[1] < b[0]:
        low, high = a[1], b[0]
    elif b[1] < a[0]:
        low, high = b[1], a[0]
    else:
        return Fraction(0)
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return Fraction(high) - Fraction(low)


def _float_up(value: Fraction) -> float:
    """The smallest float64 not below ``value``."""
    rounded = float(value)
    if Fraction(rounded) < value:
        rounded = math.nextafter(rounded, math.inf)
    return rounded


def _float_down(value: Fraction) -> float:
    """The largest float64 not above ``value``."""
    rounded = float(value)
    if Fraction(rounded) > value:
        rounded = math.nextafter(rounded, -math.inf)
    return rounded
