"""The anytime loop: runs the branch searches of one query under its limits.

Branches (the conjunctions of the query's disjunctive normal form) are searched one after the
other, each in bounded kernel calls. Between calls this loop turns complete states into points
and checks them exactly, shares the best value found with every branch (so all of them cut what
cannot beat it), grows arenas within the memory limit, watches the clock and the step count,
records the trace and calls the progress hook.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from veritas_dsl.ir.evaluate import distance, reference_point, term_value
from veritas_dsl.result import Termination, TracePoint, Witness
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.bisection import (
    REBUILD_AFTER,
    ball_root,
    bisectable,
    cell_gaps,
    find_within,
    probe_for_ball,
)
from veritas_dsl.solvers.astar.nbest import Pool
from veritas_dsl.solvers.astar.outcome import InternalError, Outcome, Progress, run_stats
from veritas_dsl.solvers.astar.problem import Plan, Problem, cut_key, key_bound
from veritas_dsl.solvers.astar.repair import REPAIR_SECONDS, REPAIR_SHARE, Repairer, repair_bytes
from veritas_dsl.solvers.astar.search import (
    INITIAL_CAPACITY,
    BranchSearch,
    Solution,
    grown,
    planned_bytes,
)
from veritas_dsl.solvers.astar.witness import inputs_hold, inside, model_margins, point_of
from veritas_dsl.solvers.base import Stop
from veritas_dsl.solvers.lazy import broken_by, next_batch

#: Target wall time of one kernel call, so limits and progress stay responsive.
CALL_SECONDS = 0.005
#: Expansions the first kernel call may make; later calls scale it to CALL_SECONDS (one
#: expansion of a two-instance query on 300 trees of depth 6 took 3 ms).
FIRST_BUDGET = 4
#: Longest a kernel call may take if every expansion costs as much as the slowest seen: the
#: cost of one expansion jumped a thousandfold within a search (60 us to 40 ms).
LONGEST_CALL_SECONDS = 0.1
#: Shortest interval between two progress reports.
PROGRESS_SECONDS = 0.1


class Run:
    """One solve: ``problems`` (one per branch), the ``plan``, limits and the progress hook;
    ``solutions``: the N best distinct solutions asked of a maximisation (:mod:`.nbest`)."""

    def __init__(
        self,
        problems: list[Problem],
        plan: Plan,
        start: float,
        timeout_s: float | None,
        max_steps: int | None,
        memory_limit: int,
        progress: Callable[[Progress], None] | None,
        bisect_linf: bool = True,
        stop: Stop | None = None,
        solutions: int | None = None,
        ready: Callable[[Problem], float] | None = None,
    ) -> None:
        self.problems = problems
        self.plan = plan
        self.start = start
        self.deadline = None if timeout_s is None else start + timeout_s
        self.max_steps = max_steps
        self.memory_limit = memory_limit
        self.progress = progress
        self.stop = stop  # stop early once the bounds settle it (Limits.stop)
        self.pool = Pool(solutions, problems) if solutions else None
        self.ready = ready  # makes a problem's search ready (compiled); its seconds
        self.compile_s = 0.0  # spent in ready, off the clock
        self.searches: list[BranchSearch | None] = [None] * len(problems)
        self.open = [not p.infeasible for p in problems]
        self.bisect = [
            plan.mode == K.MODE_DISTANCE and bisect_linf and not p.infeasible and bisectable(p)
            for p in problems
        ]
        self.floor = [0.0] * len(problems)  # bisection: no point is closer than this
        self.probe_found = False
        self.retired = {"expanded": 0, "created": 0, "pruned": 0, "peak": 0}
        self.switched: dict[int, tuple[int, int]] = {}  # branch: constraints on, of those off
        self.best: float | None = None  # max form for optimisation, distance for distance goals
        self.witness: Witness | None = None
        self.found = False
        self.trace: list[TracePoint] = []
        self.budget = FIRST_BUDGET
        self.slowest = 0.0  # seconds per expansion, the most a kernel call took
        self.calls = 0
        self.accepted = 0
        self.rejected = 0
        self.peak_memory = 0
        self.last_progress = -math.inf
        self._eval_arrays: dict[str, tuple] = {}
        self._static_bytes = sum(p.nbytes() for p in problems)  # the problems never change
        self.probe_bytes = 0  # a bisection probe's own problem (bisection.probe_for_ball)
        self.repairers: dict[int, Repairer] = {}
        self.to_repair: tuple | None = None  # the last new best point (maximum or distance)

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> Outcome:
        try:
            stop = self._run()
        except KeyboardInterrupt:  # kernel calls are short: Ctrl-C lands between them
            stop = Termination.INTERRUPTED
            self.progress = None  # the user asked to stop: no more reports
        if stop is None:
            if self.plan.mode == K.MODE_FIND:
                stop = Termination.OPTIMAL if self.found else Termination.INFEASIBLE
            else:
                stop = Termination.OPTIMAL if self.best is not None else Termination.INFEASIBLE
        return self._stop(stop)

    def _run(self) -> Termination | None:
        for b, problem in enumerate(self.problems):
            if not self.open[b] or self.bisect[b]:
                continue
            if self.memory() + planned_bytes(problem, INITIAL_CAPACITY) > self.memory_limit:
                return Termination.MEMORY_LIMIT
            search = self.searches[b] = self._new_search(problem)
            self.open[b] = search.alive
        if self._settled(self._note_bounds()):  # the leaves' bounds may settle it at once
            return Termination.DECIDED
        for b in range(len(self.problems)):
            stop = self._bisect(b) if self.bisect[b] else self._search(b)
            if stop is not None:
                return stop
            if self.found:
                break
        return None

    def _search(self, b: int) -> Termination | None:
        """Search branch ``b`` to the end, or to a limit (returned)."""
        while self.open[b]:
            status, stop = self._call(b, self.searches[b])
            if self.found:
                self.open = [False] * len(self.open)
            elif status in (K.STATUS_EXHAUSTED, K.STATUS_OPTIMAL, K.STATUS_FOUND):
                self.open[b] = False
            if stop is not None:
                return stop
        return None

    def _bisect(self, b: int) -> Termination | None:
        """Closest example by bisection over the exact candidate radii of branch ``b``.

        Each probe is a find inside the ball of one candidate radius: a point there bounds the
        optimum from above (by its own distance), none proves every smaller candidate out.
        The first probe takes the largest radius, to get some point fast.
        """
        problem = self.problems[b]
        gaps = cell_gaps(problem)
        candidates = np.unique(gaps[np.isfinite(gaps)])
        lo, hi = 0, len(candidates)
        first = True
        search = None  # one search for every probe, restarted from the probe's root
        while self.open[b]:
            if self.best is not None:  # only strictly closer points matter
                hi = min(hi, int(np.searchsorted(candidates, self.best)))
            if lo >= hi:
                break
            self.floor[b] = float(candidates[lo])
            if self._settled(self.bounds()):  # a probe that found a point stops nothing itself
                return Termination.DECIDED
            if self.deadline is not None and time.monotonic() > self.deadline:
                return Termination.TIME_LIMIT  # probes that find a point never reach the check
            mid = hi - 1 if first else (lo + hi) // 2
            first = False
            root = ball_root(problem, gaps, float(candidates[mid]))
            self.probe_found = False
            if root is not None:
                self._retire(b)  # the last probe's search, the branch's or its own
                if search is None:
                    within = find_within(problem, root)
                    if self.memory() + planned_bytes(within, INITIAL_CAPACITY) > self.memory_limit:
                        return Termination.MEMORY_LIMIT
                    search = self._new_search(within)
                else:
                    search.restart(root)
                self.searches[b] = search
                stop, rebuilt = self._probe(b, search, root)
                if stop is not None:
                    return stop
                if rebuilt:  # the branch's search was dropped for the probe's own
                    search = None
            if not self.probe_found:
                lo = mid + 1
            elif self.best is not None and np.searchsorted(candidates, self.best) > mid:
                # The point lies beyond the probe's radius: the cell gaps miss the distances
                # this branch takes (a one-hot group or an integer moves a point off its cell's
                # closest end), so bisecting would not progress. Search by distance instead.
                return self._search_instead(b)
        self._retire(b)
        self.open[b] = False
        return None

    def _probe(self, b: int, search: BranchSearch, root: np.ndarray) -> tuple:
        """Run the probe of box ``root`` on branch ``b``'s ``search`` until it finds a point or
        proves there is none, after :data:`REBUILD_AFTER` expansions on trees built for its
        ball (:func:`probe_for_ball`). Returns a termination or None, and if it was rebuilt."""
        rebuilt = False
        while search.alive and not self.probe_found:
            if not rebuilt and search.expanded >= REBUILD_AFTER:
                rebuilt = True
                probe = probe_for_ball(self.problems[b], root, self.plan.pair_trees)
                self._retire(b)
                self.probe_bytes = probe.nbytes()
                if self.memory() + planned_bytes(probe, INITIAL_CAPACITY) > self.memory_limit:
                    return Termination.MEMORY_LIMIT, rebuilt
                search = self.searches[b] = self._new_search(probe)
                continue
            status, stop = self._call(b, search)
            if stop is not None or status in (K.STATUS_EXHAUSTED, K.STATUS_OPTIMAL, K.STATUS_FOUND):
                return stop, rebuilt
        return None, rebuilt

    def _new_search(self, problem: Problem) -> BranchSearch:
        """A search over ``problem``, its kind of search made ready first (:func:`.ready.ready`:
        compiled the first time in a process) off the clock."""
        if self.ready is not None:
            spent = self.ready(problem)
            self.compile_s += spent
            self.start += spent
            if self.deadline is not None:
                self.deadline += spent
        return BranchSearch(problem, INITIAL_CAPACITY)

    def _search_instead(self, b: int) -> Termination | None:
        """Give up bisecting branch ``b``: search it best-first by distance from here on."""
        problem = self.problems[b]
        self._retire(b)
        if self.memory() + planned_bytes(problem, INITIAL_CAPACITY) > self.memory_limit:
            return Termination.MEMORY_LIMIT
        self.bisect[b] = False
        self.searches[b] = self._new_search(problem)
        self.open[b] = self.searches[b].alive
        return self._search(b)

    def _call(self, b: int, search: BranchSearch) -> tuple[int, Termination | None]:
        """One kernel call on ``search`` (of branch ``b``): its status, and a termination when
        the whole run must stop at a limit."""
        budget = self.budget
        if self.max_steps is not None:
            budget = min(budget, self.max_steps - self._expanded())
            if budget <= 0:
                return K.STATUS_BUDGET, Termination.STEP_LIMIT
        began = time.monotonic()
        if self.slowest > 0:
            # as many expansions as the slowest seen fit in a short call and before the deadline,
            # so Ctrl-C is seen soon and the deadline passes by one expansion at most
            room = LONGEST_CALL_SECONDS
            if self.deadline is not None:
                room = min(room, self.deadline - began)
            budget = min(budget, max(1, int(room / self.slowest)))
        expanded = search.expanded
        status = search.run(budget)
        elapsed = time.monotonic() - began
        steps = search.expanded - expanded
        if steps > 0:
            self.slowest = max(self.slowest, elapsed / steps)
        self.calls += 1
        if status == K.STATUS_BUDGET and elapsed < CALL_SECONDS / 2:
            self.budget = min(self.budget * 2, 1 << 22)
        elif steps > 0 and elapsed > CALL_SECONDS * 2:  # at once to the size that fits
            self.budget = max(int(steps * CALL_SECONDS / elapsed), 1)
        for solution in search.take_solutions():
            self._accept(b, search, solution)
        stop = None
        if status == K.STATUS_MEMORY:
            extra = planned_bytes(search.problem, grown(search.capacity)) - search.nbytes()
            if self.memory() + extra > self.memory_limit:
                stop = Termination.MEMORY_LIMIT
            else:
                search.grow(grown(search.capacity))
        noted = self._note_bounds()
        finished = status in (K.STATUS_EXHAUSTED, K.STATUS_OPTIMAL, K.STATUS_FOUND)
        unfinished = not (finished or self.found)
        if self.to_repair is not None and unfinished and stop is None:
            self._repair()
            noted = self._note_bounds()
        self.to_repair = None
        self.peak_memory = max(self.peak_memory, self.memory())
        if stop is None and unfinished:
            if self._settled(noted):
                stop = Termination.DECIDED
            elif self.deadline is not None and time.monotonic() > self.deadline:
                stop = Termination.TIME_LIMIT
            elif self.max_steps is not None and self._expanded() >= self.max_steps:
                stop = Termination.STEP_LIMIT
        return status, stop

    def _retire(self, b: int) -> None:
        """Fold the statistics of branch ``b``'s finished probe into the totals, and let it go."""
        search = self.searches[b]
        if search is not None:
            self.retired["expanded"] += search.expanded
            self.retired["created"] += int(search.ctx[K.C_PUSHED])
            self.retired["pruned"] += int(search.ctx[K.C_PRUNED])
            self.retired["peak"] = max(self.retired["peak"], search.live_peak)
            self.note_switched(b, search)
            self.searches[b] = None
        self.probe_bytes = 0

    def note_switched(self, b: int, search: BranchSearch) -> None:
        lazy = len(search.problem.lazy)
        if lazy:
            self.switched[b] = (lazy - len(search.off_constraints()), lazy)

    # -- solutions ------------------------------------------------------------------------

    def _accept(
        self, b: int, search: BranchSearch, solution: Solution, repaired: bool = False
    ) -> None:
        problem = search.problem  # a probe's cells may be its own
        inputs = point_of(problem, solution.row)
        if not inside(problem, solution.row, inputs):
            raise InternalError(f"query {problem.query.name}: the point {inputs} leaves its box")
        margins = model_margins(problem.query, inputs, self._eval_arrays)
        if solution.state >= 0:  # output constraints are off: a point of the box, not the box
            off = search.off_constraints()
            broken = broken_by(problem.constraints, inputs, margins, off)
            if broken:
                # Switched on only from the best open state (the optimum of the constraints on,
                # as a round of solvers/lazy.py would): a dive's end breaks more, needlessly.
                if solution.top:
                    search.switch_on(next_batch(broken, len(problem.lazy) - len(off)))
                return
            search.settle(solution)
        if not inputs_hold(problem, inputs, margins):
            if solution.verified:
                raise InternalError(
                    f"query {problem.query.name}: the point {inputs} of a complete state breaks "
                    "a constraint the search proved"
                )
            self.rejected += 1  # an output condition decided by float64 rounding: not met
            return
        self.accepted += 1
        plan = self.plan
        if plan.mode == K.MODE_FIND:
            self.found = True
            self.witness = Witness(inputs)
            return
        if search.problem.params[K.P_MODE] == K.MODE_FIND:
            self.probe_found = True  # a bisection probe: it stops at its first point
        elif not (solution.verified or self.pool):
            search.raise_incumbent(solution.key)
        if plan.mode == K.MODE_DISTANCE:
            goal = plan.distance
            center = reference_point(goal.center, inputs)
            value = distance(goal.norm, inputs[goal.instance], center, goal.weights)
            improved = self.best is None or value < self.best
            shown = value
        else:
            shown = min(term_value(term, margins) for term in plan.objectives)
            value = shown
            improved = self.best is None or value > self.best
            if self.pool is not None and self.pool.add(problem.query, inputs, value):
                self._share_best()
        if improved:
            self.best = value
            self.witness = Witness(inputs, shown)
            # Not while constraints are off: a repaired point must meet them all, so every
            # move walks every variant's trees (a family of 50: 13 % slower with the repairs).
            searching = search.problem.params[K.P_MODE] != K.MODE_FIND
            if searching and not (repaired or search.problem.lazy or self.pool):
                self.to_repair = (b, search, inputs)
            self._share_best()

    def _repair(self) -> None:
        """Hill-climb from the last new best point of a maximisation or a distance search
        (towards the reference); accept what it reaches.
        Done after the point's bounds were noted, so the first solution is reported at once."""
        b, search, inputs = self.to_repair
        self.to_repair = None
        repairer = self.repairers.get(b)
        if repairer is None:
            if self.memory() + repair_bytes(search.problem) > self.memory_limit:
                return
            repairer = self.repairers[b] = Repairer(search.problem)
        # At most a share of the time searched so far: on a query the search finishes in a few
        # milliseconds, a fixed budget was most of its time (fairness on 100 x 6: 10 -> 15 ms).
        seconds = min(REPAIR_SECONDS, REPAIR_SHARE * (time.monotonic() - self.start))
        if self.deadline is not None:
            seconds = min(seconds, self.deadline - time.monotonic())
        if seconds <= 0:
            return
        better = repairer.repaired(inputs, seconds)
        if better is not None:
            self._accept(b, search, better, repaired=True)

    def _share_best(self) -> None:
        """Let every branch cut the states that cannot beat the best value found (the Nth best,
        when N are asked)."""
        best = self.best if self.pool is None else self.pool.cut()
        if best is None:
            return
        for problem, search in zip(self.problems, self.searches, strict=True):
            if search is None or search.problem.params[K.P_MODE] != self.plan.mode:
                continue
            search.raise_incumbent(cut_key(problem, self.plan.mode, best))

    # -- bounds ---------------------------------------------------------------------------

    def _open_bound(self) -> float | None:
        """The best bound of any open branch (max form, or least distance), None if none."""
        bounds = []
        for b, (problem, search) in enumerate(zip(self.problems, self.searches, strict=True)):
            if not self.open[b]:
                continue
            if self.bisect[b]:
                bounds.append(self.floor[b])
                continue
            if search is None:  # never started (the memory limit came first): nothing known
                bounds.append(0.0 if self.plan.mode == K.MODE_DISTANCE else math.inf)
                continue
            key = search.best_open_key()
            if key is not None:
                bounds.append(key_bound(problem, self.plan.mode, key))
        if not bounds:
            return None
        return min(bounds) if self.plan.mode == K.MODE_DISTANCE else max(bounds)

    def _settled(self, bounds: tuple[float | None, float | None]) -> bool:
        """Whether ``bounds`` (the run's, now) settle what ``stop`` asks (never for find and
        prove, which have none)."""
        return self.stop is not None and self.stop.reached(*bounds)

    def bounds(self) -> tuple[float | None, float | None]:
        """``(lower, upper)`` in the goal's own sense, None for find and prove."""
        plan = self.plan
        if plan.mode == K.MODE_FIND:
            return None, None
        open_bound = self._open_bound()
        if plan.mode == K.MODE_DISTANCE:
            upper = math.inf if self.best is None else self.best
            lower = upper if open_bound is None else min(open_bound, upper)
            return lower, upper
        lower = -math.inf if self.best is None else self.best
        upper = lower if open_bound is None else max(open_bound, lower)
        return lower, upper

    def _note_bounds(self) -> tuple[float | None, float | None]:
        """Record the run's bounds in the trace (and the progress hook); return them."""
        lower, upper = self.bounds()
        now = time.monotonic() - self.start
        if lower is not None and (
            not self.trace or (self.trace[-1].lower, self.trace[-1].upper) != (lower, upper)
        ):
            self.trace.append(TracePoint(now, lower, upper))
        if self.progress is not None and now - self.last_progress >= PROGRESS_SECONDS:
            self.last_progress = now
            self.progress(self._progress(now, lower, upper))
        return lower, upper

    def _progress(self, now: float, lower, upper) -> Progress:
        expanded = self._expanded()
        rate = expanded / now if now > 0 else 0.0
        return Progress(now, lower, upper, expanded, rate, self.memory())

    # -- bookkeeping ----------------------------------------------------------------------

    def _expanded(self) -> int:
        live = sum(s.expanded for s in self.searches if s is not None)
        return live + self.retired["expanded"]

    def memory(self) -> int:
        repairs = sum(repair_bytes(r.problem) for r in self.repairers.values())
        searches = sum(s.nbytes() for s in self.searches if s is not None)
        return self._static_bytes + self.probe_bytes + repairs + searches

    def _stop(self, termination: Termination) -> Outcome:
        if termination in (Termination.OPTIMAL, Termination.INFEASIBLE):
            self.open = [False] * len(self.open)
        lower, upper = self.bounds()
        now = time.monotonic() - self.start
        if lower is not None:
            self.trace.append(TracePoint(now, lower, upper))
        if self.progress is not None:
            self.progress(self._progress(now, lower, upper))
        stats = run_stats(self, self._expanded(), now)
        outcome = Outcome(termination, self.witness, self.trace, stats, lower, upper)
        if self.pool is not None:
            self.pool.report(outcome, self._open_bound())
        return outcome

