"""The search over one branch: the state arena the kernels work in, grown on demand.

Python owns every array, the kernels' work arrays included; :func:`kernels.search` runs a bounded
number of expansions on them and returns, so the caller can watch the clock, the memory and the
bounds between calls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.problem import Problem

#: States the arena starts with.
INITIAL_CAPACITY = 256
#: Complete states one kernel call may record before handing them over.
SOLUTION_CAPACITY = 32


@dataclass(frozen=True)
class Solution:
    """A complete state: its box, term bounds (its values), key, whether the bounds alone prove
    the output constraints (``verified``), the goal distance in distance mode, the state kept
    open until the caller settles it (:meth:`BranchSearch.settle`) or -1, and whether it was
    the best open state (``top``; else the end of a dive)."""

    row: np.ndarray
    units: np.ndarray
    key: int
    verified: bool
    cost: float
    state: int = -1
    top: bool = True


def grown(capacity: int) -> int:
    """The arena's next capacity: a quarter more. Doubling left up to half of the arena unused
    at the peak; a grow copies the arena, a memcpy that costs little against the expansions
    that filled it."""
    return capacity + max(capacity // 4, INITIAL_CAPACITY)


def box_dtype(problem: Problem) -> np.dtype:
    """The integer type of the arena's boxes: a cell index per end, so one byte when no variable
    has more than 256 cells (always so for XGBoost's histogram splits), else four. The box is
    most of a state's bytes; the search kernel is compiled once for each type
    (:func:`.ready.ready`)."""
    return np.dtype(np.uint8 if problem.most_cells <= 256 else np.int32)


def _box_bytes(problem: Problem) -> int:
    return box_dtype(problem).itemsize * 2 * problem.n_vars


def state_bytes(problem: Problem) -> int:
    """Arena bytes per state: its box, term bounds, tree pointer, epoch, free slot and heap
    entry."""
    return _box_bytes(problem) + 8 * problem.n_terms + 4 + 4 + 4 + 8 + 8 + 4


def planned_bytes(problem: Problem, capacity: int) -> int:
    """Bytes a search over ``problem`` holds with an arena of ``capacity`` states: the arena
    and heap, the solution buffer, its counters, and the kernels' per-call scratch."""
    solution = _box_bytes(problem) + 8 * problem.n_terms + 8 + 1 + 8 + 4 + 1
    scratch = 12 * n_columns(problem) + problem.n_trees * (8 + 8 + 4 + 1) + problem.n_terms
    return capacity * state_bytes(problem) + SOLUTION_CAPACITY * solution + 8 * K.N_CTX + scratch


def n_columns(problem: Problem) -> int:
    """The trees' columns, summed over trees (``tr_col[-1]``; see :func:`.trees.fill_trees`)."""
    return int(problem.trees[14][-1]) if problem.trees else 0


def scratch_arrays(problem: Problem) -> tuple[np.ndarray, ...]:
    """The work arrays of :func:`kernels.search`, allocated once per search (allocating them in
    the kernel would compile an ``np.empty`` for each dtype and shape): a tree walk's stack, a
    tree's reachable leaves, exact-sum partials, per-term bounds and best leaves, each tree's
    bounds and best leaves in the parent state (one slot per column, :func:`n_columns`), stamps
    and the affected trees of a step, the incumbent's ball, and spare exact-sum partials
    (weighted distances)."""
    n_terms, n_trees, n_vars = problem.n_terms, problem.n_trees, problem.n_vars
    return (
        np.empty(int(problem.params[K.P_MAX_DEPTH]) + 2, dtype=np.int32),
        np.empty(max(int(problem.params[K.P_MAX_LEAVES]), 1), dtype=np.int32),
        np.empty(K.N_PARTIALS),
        np.empty(n_terms, dtype=np.int64),
        np.empty(n_terms, dtype=np.int64),
        np.empty(n_terms, dtype=np.int32),
        np.empty(n_columns(problem), dtype=np.int64),
        np.empty(n_columns(problem), dtype=np.int32),
        np.zeros(n_trees, dtype=np.int64),
        np.zeros(n_trees, dtype=np.int64),
        np.empty(n_trees, dtype=np.int32),
        np.empty(n_vars, dtype=np.int32),
        np.empty(n_vars, dtype=np.int32),
        np.empty(K.N_PARTIALS),
    )


class BranchSearch:
    """Best-first search with dives over one :class:`Problem`; see :func:`kernels.search`.

    The output constraints of ``problem.lazy`` start off (:meth:`switch_on` adds them as the
    points found break them; they stay on across :meth:`restart`)."""

    def __init__(self, problem: Problem, capacity: int = INITIAL_CAPACITY) -> None:
        self.problem = problem
        self.root = problem.root
        self.capacity = 0
        width = 2 * problem.n_vars
        boxes = box_dtype(problem)
        n_terms = problem.n_terms
        thr, sure, cons, u_base = problem.terms
        term_ep = np.zeros(n_terms, dtype=np.int64)
        term_ep[list(problem.lazy.values())] = -1
        tr_ep = np.zeros(problem.n_trees, dtype=np.int64)
        self.terms = (thr, sure, cons.copy(), u_base, term_ep, tr_ep)
        self.ctx = np.zeros(K.N_CTX, dtype=np.int64)
        self._switched()
        self.ctx[K.C_DIVE] = -1
        self.ctx[K.C_INC] = K.NO_INCUMBENT
        self.solutions = (
            np.zeros((SOLUTION_CAPACITY, width), dtype=boxes),
            np.zeros((SOLUTION_CAPACITY, n_terms), dtype=np.int64),
            np.zeros(SOLUTION_CAPACITY, dtype=np.int64),
            np.zeros(SOLUTION_CAPACITY, dtype=np.int8),
            np.zeros(SOLUTION_CAPACITY, dtype=np.float64),
            np.zeros(SOLUTION_CAPACITY, dtype=np.int32),
            np.zeros(SOLUTION_CAPACITY, dtype=np.int8),
        )
        self.dynamic = (
            np.zeros((0, width), dtype=boxes),
            np.zeros((0, n_terms), dtype=np.int64),
            np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.int64),
            np.zeros(0, dtype=np.int64),
            np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.int32),
        )
        self.scratch = scratch_arrays(problem)
        self.grow(capacity)
        self.alive = self.run(0) != K.STATUS_EXHAUSTED  # pushes the root when it is alive

    def restart(self, root: np.ndarray) -> None:
        """Start over from box ``root`` (int32, like ``problem.root``) on the same arrays: every
        state, the incumbent and the counters go (fold the statistics in first); the root is
        pushed by the next :meth:`run`, which returns ``STATUS_EXHAUSTED`` when it is dead.
        Cheaper than a new search: a bisection's probes differ only in their root. The stamp
        counter goes on, as the scratch arrays keep the stamps of the search before."""
        stamp, epoch = self.ctx[K.C_STAMP], self.ctx[K.C_EPOCH]
        self.ctx[:] = 0
        self.ctx[K.C_EPOCH] = epoch  # constraints switched on stay on, at their epochs
        self._switched()
        self.ctx[K.C_DIVE] = -1
        self.ctx[K.C_INC] = K.NO_INCUMBENT
        self.ctx[K.C_STAMP] = stamp
        self.ctx[K.C_FREE] = self.capacity
        self.dynamic[3][:] = np.arange(self.capacity - 1, -1, -1, dtype=np.int32)
        self.root = root
        self.alive = True

    # -- memory ---------------------------------------------------------------------------

    def nbytes(self) -> int:
        """Bytes held now: the arena, the heap, the solution buffer and per-call scratch."""
        return planned_bytes(self.problem, self.capacity)

    def grow(self, capacity: int) -> None:
        """Enlarge the arena to ``capacity`` states, keeping every state and the heap."""
        old = self.capacity
        box, st_u, st_ptr, free, hp_key, hp_tie, hp_state, st_ep = self.dynamic
        n_free = int(self.ctx[K.C_FREE])

        def larger(a, shape):
            b = np.zeros(shape, dtype=a.dtype)
            b[: a.shape[0]] = a
            return b

        width = box.shape[1]
        new_free = np.empty(capacity, dtype=np.int32)
        added = capacity - old
        # new rows go to the bottom of the free stack, so recently freed rows are reused first
        new_free[:added] = np.arange(capacity - 1, old - 1, -1, dtype=np.int32)
        new_free[added : added + n_free] = free[:n_free]
        self.dynamic = (
            larger(box, (capacity, width)),
            larger(st_u, (capacity, st_u.shape[1])),
            larger(st_ptr, capacity),
            new_free,
            larger(hp_key, capacity),
            larger(hp_tie, capacity),
            larger(hp_state, capacity),
            larger(st_ep, capacity),
        )
        self.ctx[K.C_FREE] = n_free + added
        self.capacity = capacity

    # -- running --------------------------------------------------------------------------

    def run(self, budget: int) -> int:
        """Up to ``budget`` expansions; returns a kernel ``STATUS_*``."""
        p = self.problem
        return int(
            K.search(self.trees, p.lifted, p.lifted_resources, self.terms, p.params, self.root,
                     self.dynamic, self.solutions, self.scratch, self.ctx, int(budget))
        )  # fmt: skip

    def take_solutions(self) -> list[Solution]:
        """The complete states recorded since the last call, oldest first."""
        n = int(self.ctx[K.C_NSOL])
        rows, units, keys, flags, costs, states, tops = self.solutions
        found = [
            Solution(
                rows[i].astype(np.int32),  # int32, as every box outside the arena
                units[i].copy(),
                int(keys[i]),
                bool(flags[i]),
                float(costs[i]),
                int(states[i]),
                bool(tops[i]),
            )
            for i in range(n)
        ]
        self.ctx[K.C_NSOL] = 0
        return found

    # -- output constraints switched on as they are needed --------------------------------

    def off_constraints(self) -> list[int]:
        """Indices (in ``problem.constraints``) of the output constraints still off."""
        term_ep = self.terms[4]
        return [i for i, k in self.problem.lazy.items() if term_ep[k] < 0]

    def switch_on(self, constraints: list[int]) -> None:
        """Switch these output constraints on: every open state is stale from now on, and has
        their bounds added before it is expanded (``kernels.search``)."""
        self.ctx[K.C_EPOCH] += 1
        for i in constraints:
            self.terms[4][self.problem.lazy[i]] = self.ctx[K.C_EPOCH]
        self._switched()

    def settle(self, solution: Solution) -> None:
        """Drop the state a solution kept open: its point met every constraint (nothing in
        its box is better) or broke one that is on (so does every point of the box). One whose
        point breaks an off constraint stays open: stale once :meth:`switch_on` switched some
        on, else taken again as it is."""
        self.dynamic[7][solution.state] = K.DEAD

    def _switched(self) -> None:
        """``term_cons``, ``tr_ep`` and ``ctx[C_OFF]`` after constraints were switched on (or
        the search restarted)."""
        cons, term_ep, tr_ep = self.terms[2], self.terms[4], self.terms[5]
        off = term_ep < 0
        cons[:] = np.where(off, K.TERM_OFF, self.problem.terms[2])
        self.ctx[K.C_OFF] = int(off.sum())
        trees = self.trees = self.problem.trees
        if trees:  # a tree's epoch: the last its columns' terms went on
            tr_col, col_ptr, col_term = trees[14], trees[15], trees[16]
            col_ep = np.full(len(col_ptr) - 1, -1, dtype=np.int64)
            np.maximum.at(col_ep, np.repeat(np.arange(len(col_ep)), np.diff(col_ptr)),
                          term_ep[col_term])  # fmt: skip
            tr_ep[:] = -1
            np.maximum.at(tr_ep, np.repeat(np.arange(len(tr_ep)), np.diff(tr_col)), col_ep)
        on = tr_ep >= 0
        if trees and not np.all(on):
            self.trees = (*trees[:11], *_splits_of(trees, on), *trees[14:])

    def raise_incumbent(self, key: int) -> None:
        """Let the kernel cut every state whose key is at most ``key``."""
        if not self.ctx[K.C_HAVE_INC] or key > self.ctx[K.C_INC]:
            self.ctx[K.C_HAVE_INC] = 1
            self.ctx[K.C_INC] = key

    def best_open_key(self) -> int | None:
        """The best key among open states (the heap and the state being dived into)."""
        keys = []
        if self.ctx[K.C_HEAP] > 0:
            keys.append(int(self.dynamic[4][0]))
        if self.ctx[K.C_DIVE] >= 0:
            keys.append(int(self.ctx[K.C_DIVE_KEY]))
        if not keys:
            return None
        best = max(keys)
        if self.ctx[K.C_HAVE_INC] and best <= self.ctx[K.C_INC] - self.problem.params[K.P_MARGIN]:
            return None  # nothing open can improve
        return best

    @property
    def expanded(self) -> int:
        return int(self.ctx[K.C_EXPANDED])

    @property
    def live_peak(self) -> int:
        return int(self.ctx[K.C_LIVE_PEAK])


def _splits_of(trees, on: np.ndarray) -> tuple:
    """The index of splits by variable and rank (``vs_ptr``, ``vs_rank``, ``vs_tree``) of the
    trees that are ``on`` only: a step's affected trees are looked up there, and the splits of
    trees feeding only constraints that are off would be read and skipped at every step (with
    50 variants and 5 on, most of them)."""
    vs_ptr, vs_rank, vs_tree = trees[11:14]
    keep = on[vs_tree]
    n_vars = len(vs_ptr) - 1
    var = np.repeat(np.arange(n_vars), np.diff(vs_ptr))
    ptr = np.zeros_like(vs_ptr)
    np.cumsum(np.bincount(var[keep], minlength=n_vars), out=ptr[1:])
    return ptr, np.ascontiguousarray(vs_rank[keep]), np.ascontiguousarray(vs_tree[keep])
