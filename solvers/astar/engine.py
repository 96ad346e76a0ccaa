"""The anytime A* engine (the VERITAS search, Devos et al., ICML 2021), compiled with Numba.

A state is a box over the query's variables; its bound is the sum over trees of the best leaf
reachable in the box. Best-first order on that bound gives the upper bound at every moment, and
greedy dives give complete solutions (lower bounds and witnesses) early; the search is optimal
as soon as no open state can beat the best solution, ties included. Every input constraint is
lifted to boxes, so whole subtrees of the search are cut (see ``kernels/`` and ``problem.py``).

Goals:

* maximise / minimise a term: best-first on the term's bound;
* find, and prove (a search for a counterexample to the negated conclusion): best-first on the
  least slack of the output constraints, stopping at the first complete state that meets them;
* minimise an L1 distance, or an L-inf distance between instances: best-first on the distance
  of the box to the reference, output constraints cutting boxes that cannot meet them, and every
  box cut to the open ball of the best distance found (only closer points matter);
* minimise an L-inf distance to a row: a bisection over the exact candidate radii (a point's
  distance rounds to the largest rounded gap of one of its coordinates to the row, so the
  optimum is one of the cells' gaps). Each probe is a find inside the ball of one radius: a
  point bounds the optimum from above by its own distance, none rules every smaller radius out.
  Both bounds hold at every moment and the answer is exact. It measured about twice as fast as
  the search ordered by distance on the benchmark, which remains available
  (``AStarEngine(linf_distance="search")``).

A disjunction (:class:`AnyOf`, or the negation of a conclusion with several conditions) is
expanded to its disjunctive normal form; each conjunction is a branch searched on its own, and
the branches share the best value found.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path

from veritas_dsl.ir.query import (
    DomainKind,
    Find,
    Maximize,
    MaximizeMin,
    MinimizeDistance,
    Query,
)
from veritas_dsl.ir.reductions import (
    Chain,
    MergeTies,
    MinimizeToMaximize,
    ProveToFind,
    ReductionRefused,
    StaticBounds,
    ToDNF,
    branches,
)
from veritas_dsl.result import Result, Termination
from veritas_dsl.solvers.astar import CAPABILITIES, available
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.anytime import Run
from veritas_dsl.solvers.astar.problem import Plan, build_problem, build_structure
from veritas_dsl.solvers.astar.ready import kind, ready
from veritas_dsl.solvers.base import (
    ChainedEngine,
    Deadline,
    Limits,
    OutOfTime,
    UnsupportedQuery,
    unfinished,
    within_trivial,
)

#: Most conjunctions a disjunction may expand to.
MAX_BRANCHES = 256
#: What each branch (one conjunction) is built from: its variables and their static box.
BRANCH = Chain((MergeTies(), StaticBounds()))
#: Memory limit when none is given: this share of the memory available at the start.
DEFAULT_MEMORY_SHARE = 0.5
DEFAULT_MEMORY_BYTES = 2 << 30


class AStarEngine(ChainedEngine):
    """Anytime best-first search over leaf combinations, with every input constraint lifted.

    Declares every construct of the IR but hard voting. Within them it refuses, with
    :class:`UnsupportedQuery` naming the engines that can, the combinations whose least cost over
    a box it cannot decide exactly: linear equalities; linear inequalities sharing a feature with
    another linear inequality, a one-hot group, a change count or a distance; change counts and
    distances to different references in one conjunction; overlapping one-hot groups; and a
    one-hot group measured against a reference other than a row of 0s and 1s.
    """

    name = "astar"
    capabilities = CAPABILITIES
    available = staticmethod(available)
    #: Searches maximise and find: prove and minimise are rewritten, disjunctions expanded.
    chain = Chain((ProveToFind(), MinimizeToMaximize(), ToDNF(MAX_BRANCHES)))

    def __init__(self, linf_distance: str = "bisect", pair_trees: str = "auto") -> None:
        """``linf_distance``: how to answer an L-inf closest example to a row: ``"bisect"``
        (bisection over the exact candidate radii, each probe a find inside a ball; faster on
        the benchmark) or ``"search"`` (best-first on the distance, as for L1).
        ``pair_trees``: whether a maximisation (or minimisation) of one term, or a find (or
        prove) of one output constraint, searches pairs of trees merged into product trees, for
        a tighter bound: ``"auto"`` (when a tree is at least ``trees.PAIR_MIN_DEPTH`` deep),
        ``"always"`` or ``"never"``; a bisection's probe that runs long is built again for its
        ball with pairs, unless ``"never"``."""
        if linf_distance not in ("bisect", "search"):
            raise ValueError(f"linf_distance must be 'bisect' or 'search', not {linf_distance!r}")
        if pair_trees not in ("auto", "always", "never"):
            raise ValueError(f"pair_trees must be 'auto', 'always' or 'never', not {pair_trees!r}")
        self.linf_distance = linf_distance
        self.pair_trees = pair_trees

    def prepare(self, query: Query) -> float:
        """Build the per-model structures that ``query`` reads (cells and compacted trees,
        memoised per model and static box: :func:`.problem.build_structure`), so that the first
        query on a model costs what the later ones do; the seconds it took. Optional: a solve
        builds what is missing. Raises :class:`UnsupportedQuery` as :meth:`solve` does."""
        _refuse_large_integers(query)
        start = time.perf_counter()
        try:
            reduced, _ = self.chain.apply(query)
        except ReductionRefused as error:
            raise UnsupportedQuery(f"{error}; engine {self.name} refuses it") from None
        plan = _plan(reduced)
        for branch in branches(reduced):
            built, _ = BRANCH.apply(replace(reduced, constraints=branch))
            build_structure(built, plan)
        return time.perf_counter() - start

    def solve_reduced(self, query: Query, limits: Limits, *, progress=None) -> Result:
        """Answer ``query`` (rewritten by ``chain``) within ``limits``.

        ``progress``, when given, is called with a :class:`~outcome.Progress` at most ten times
        a second and once at the end (the CLI shows it as a live line). Raises
        :class:`UnsupportedQuery` for a query outside the engine's reach within its declared
        constructs; limits are reported in the Result, never raised.

        The clock of the limits starts once the kernels are ready (:func:`.ready.ready`): the
        first solve in a process may take longer in wall time than its limit, by the time it took
        to compile or load them (``stats["compile_s"]``, 0 once they are ready)."""
        _refuse_large_integers(query)
        try:
            compile_s = ready()
        except KeyboardInterrupt:
            return unfinished(query, self.name, Termination.INTERRUPTED, time.monotonic())
        start = time.monotonic()
        try:
            result = self._solve(query, limits, start, progress)
        except OutOfTime:  # while preparing, before any search
            result = unfinished(query, self.name, Termination.TIME_LIMIT, start)
        except KeyboardInterrupt:
            result = unfinished(query, self.name, Termination.INTERRUPTED, start)
        result.stats["compile_s"] = compile_s + result.stats.get("compile_s", 0.0)
        return result

    def _solve(self, query: Query, limits: Limits, start: float, progress) -> Result:
        deadline = Deadline.after(limits.timeout_s, start)
        plan = replace(_plan(query), pair_trees=self.pair_trees)
        problems = []
        for branch in branches(query):
            deadline.check()
            reduced, _ = BRANCH.apply(replace(query, constraints=branch))
            problems.append(build_problem(reduced, plan))
        prepare_s = time.monotonic() - start
        memory = limits.max_memory_bytes or _default_memory()
        # each kind of search the run starts is made ready (compiled) off its clock
        run = Run(
            problems, plan, start, limits.timeout_s, limits.max_steps, memory, progress,
            bisect_linf=self.linf_distance == "bisect",
            stop=None if limits.solutions else limits.stop, solutions=limits.solutions,
            ready=lambda problem: ready({kind(problem)}),
        )  # fmt: skip
        outcome = run.run()
        start = run.start  # moved on by the time spent compiling
        lower, upper = outcome.lower, outcome.upper
        if plan.mode == K.MODE_FIND:
            lower = upper = None
        stats = dict(outcome.stats)
        stats["prepare_s"] = prepare_s
        stats["compile_s"] = run.compile_s
        result = Result(
            query=query.name,
            engine=self.name,
            termination=outcome.termination,
            lower=lower,
            upper=upper,
            witnesses=[outcome.witness] if outcome.witness is not None else [],
            trace=outcome.trace,
            stats=stats,
            time_s=time.monotonic() - start,
        )
        if outcome.solutions is not None:  # the N best asked: best first, the best one first
            result.witnesses, result.solutions_proven = outcome.solutions, outcome.proven
        if outcome.termination is Termination.MEMORY_LIMIT:
            result.message = f"stopped at the memory limit of {memory} bytes"
        return within_trivial(query, result)


def _plan(query: Query) -> Plan:
    goal = query.goal
    if isinstance(goal, Maximize):
        return Plan(K.MODE_MAXIMIZE, objective=goal.term)
    if isinstance(goal, MaximizeMin):
        return Plan(K.MODE_MAXIMIZE, objective=goal.terms[0], worst_of=goal.terms[1:])
    if isinstance(goal, MinimizeDistance):
        return Plan(K.MODE_DISTANCE, distance=goal)
    if isinstance(goal, Find):
        return Plan(K.MODE_FIND)
    raise UnsupportedQuery(f"query {query.name}: unknown goal {goal!r}")


def _default_memory() -> int:
    """Half of the memory available now (Linux; read at most once a second: a batch of small
    queries would read it for each), else 2 GiB."""
    now = time.monotonic()
    if now - _AVAILABLE[0] > 1.0:
        _AVAILABLE[:] = [now, _read_available()]
    return _AVAILABLE[1]


#: When memory was last read, and the default limit it gave.
_AVAILABLE: list = [-math.inf, DEFAULT_MEMORY_BYTES]


def _read_available() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(int(line.split()[1]) * 1024 * DEFAULT_MEMORY_SHARE)
    except OSError:
        pass
    return DEFAULT_MEMORY_BYTES


#: Beyond this magnitude float32 does not hold every integer, and the search's integer cells
#: (one below a threshold, one above) would not be float32 values.
_EXACT_INTEGERS = 2.0**24


def _refuse_large_integers(query: Query) -> None:
    """Refuse int features bounded beyond ``2**24``, or split beyond it inside their domain; the
    MILP and the oracle take them.

    A split ``x < t`` of an int feature in ``[lo, hi]`` (integers) with ``t <= lo`` or ``t > hi``
    sends every value of the domain the same way: its cells lie outside the root box (the
    domain's cells), which every box the search enters is inside, so no witness or bound is read
    from them and their magnitude does not matter."""
    for f, feature in enumerate(query.features):
        if feature.kind is not DomainKind.INT:
            continue
        bounds = [b for b in (feature.lo, feature.hi) if math.isfinite(b)]
        for model in query.models.values():
            t = model.threshold[model.feature == f]
            bounds += t[(t > feature.lo) & (t <= feature.hi)].tolist()
        if any(abs(b) >= _EXACT_INTEGERS for b in bounds):
            raise UnsupportedQuery(
                f"query {query.name}: engine astar does not take int feature {feature.name} "
                f"beyond {_EXACT_INTEGERS:.0f} in its domain, where float32 skips integers"
            )
