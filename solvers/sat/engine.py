"""The exact SAT engine: CNF for the inputs and trees, an exact propagator for output sums.

How a query is answered
    The inputs, trees and input constraints become CNF (:mod:`.encode`). Output terms become
    sums over leaf literals with exact integer weights (:mod:`.linear`), propagated by
    :class:`~.propagate.SumPropagator` inside CaDiCaL 1.9.5. Every model is turned into float32
    inputs and evaluated in float64 exactly as ``Ensemble.eval`` and ``term_value`` do; a model
    whose float64 value breaks an output constraint (possible only within the float64 rounding
    error of the sum, see :func:`.linear.rounding_error`) is excluded by a clause over its leaves
    and the search goes on (:mod:`.solver`). Every witness returned satisfies the query under
    its reference semantics (``veritas_dsl.ir.evaluate.holds``).
Optimisation (:mod:`.maximize`)
    Maximise (a minimisation arrives as the maximisation of the negated term,
    ``ir.reductions.MinimizeToMaximize``) by bound tightening: each step adds ``Q >= mid`` on
    the integer sum ``Q`` under a fresh selector literal, assumed for that call only (and
    falsified for good after it). A model
    raises the lower bound to its float64 value; UNSAT lowers the upper bound. Both bounds are
    valid at every step and recorded in the trace; the answer is optimal when no combination of
    leaves can beat the best witness. Steps alternate a probe halfway to the upper bound, with a
    conflict budget, and the call for anything better than the best witness.
Distances (:mod:`.distance`)
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

import time
from fractions import Fraction

from veritas_dsl.ir.constructs import constructs
from veritas_dsl.ir.query import (
    Find,
    Maximize,
    MaximizeMin,
    MinimizeDistance,
    OutputTerm,
    Query,
)
from veritas_dsl.ir.reductions import Chain, MergeTies, MinimizeToMaximize, ProveToFind
from veritas_dsl.result import Result, Termination, TracePoint, Witness
from veritas_dsl.solvers.base import (
    ChainedEngine,
    Deadline,
    Limits,
    OutOfTime,
    unfinished,
    within_trivial,
)
from veritas_dsl.solvers.sat import CAPABILITIES, available
from veritas_dsl.solvers.sat.distance import Distances
from veritas_dsl.solvers.sat.encode import Encoding
from veritas_dsl.solvers.sat.linear import LinearForm
from veritas_dsl.solvers.sat.maximize import Maximizing
from veritas_dsl.solvers.sat.propagate import GroupSum, SumPropagator
from veritas_dsl.solvers.sat.solver import SolverCalls

#: The SAT solver: the one PySAT solver with the IPASIR-UP propagator interface.
SOLVER = "cadical195"


class SatEngine(ChainedEngine):
    """Exact answers by SAT with an exact propagator for sums of leaf values."""

    name = "sat"
    capabilities = CAPABILITIES
    available = staticmethod(available)
    #: The search maximises or finds: prove and minimise are rewritten; ties name variables.
    chain = Chain((ProveToFind(), MinimizeToMaximize(), MergeTies()))

    def solve_reduced(self, query: Query, limits: Limits, *, progress=None) -> Result:
        """Answer ``query`` (rewritten by ``chain``) exactly, or with valid bounds at the time
        limit. ``progress``, when given, receives each new point of the trace as it is found.
        The query's constructs are within the package's :data:`SUPPORTED` (checked before, by
        :func:`veritas_dsl.solvers.solve.solve`)."""
        start = time.monotonic()
        search = _Search(query, limits, progress, start)
        try:
            search.build()
            search.stats["build_s"] = time.monotonic() - start
            result = search.run()
        except OutOfTime:
            result = search.stopped(Termination.TIME_LIMIT)
        except _Settled:
            result = search.stopped(Termination.DECIDED)
        except KeyboardInterrupt:
            result = search.stopped(Termination.INTERRUPTED)
        finally:
            closing = time.monotonic()
            search.close()
        # Where a solve's time went, so that a late stop says which phase overran.
        result.stats.update(
            build_s=search.stats.get("build_s", closing - start),
            solver_s=search.stats["solver_s"],
            close_s=time.monotonic() - closing,
        )
        result.time_s = time.monotonic() - start
        return within_trivial(query, result)


class _Settled(Exception):
    """The bounds just noted settle what ``Limits.stop`` asks: the search stops there."""


class _Search(SolverCalls, Maximizing, Distances):
    """One solve: the encoding, the solver with its propagator, the bounds and the trace."""

    def __init__(self, query: Query, limits: Limits, progress, start: float) -> None:
        self.start = start
        self.deadline = Deadline.after(limits.timeout_s, start)
        self.progress = progress
        self.settle = limits.stop
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
        self.stats = {
            "solver_calls": 0,
            "excluded_by_rounding": 0,
            "excluded_ties": 0,
            "solver_s": 0.0,  # in CaDiCaL, whose deadline rests on its calls to the propagator
        }

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

    # -- the trace and the result ------------------------------------------------------------

    def _point(self, lower: float, upper: float) -> None:
        self.trace.append(TracePoint(time.monotonic() - self.start, lower, upper))
        if self.progress is not None and not self.interrupted:
            self.progress(self.trace[-1])
        if lower < upper and self.settle is not None and self.settle.reached(lower, upper):
            raise _Settled  # the best witness so far is the one behind ``lower``

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
        if isinstance(goal, MaximizeMin):
            return self._maximize_min(goal.terms)
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
