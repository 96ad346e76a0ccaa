"""Repair of an incumbent: the point of a solution, improved by single-cell moves
(:func:`kernels.repair`), handed back as a complete state for the usual exact check."""

from __future__ import annotations

import time

import numpy as np

from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.problem import Problem
from veritas_dsl.solvers.astar.search import Solution, box_dtype

#: Most sweeps over the variables one repair may make.
SWEEPS = 4
#: Longest a repair may take (it stops after the tree walks that fit, at the rate last seen).
REPAIR_SECONDS = 0.05
#: ... and at most this share of the time the solve has taken so far.
REPAIR_SHARE = 0.5
#: Tree walks per second assumed before the first repair measured it (a low guess).
FIRST_RATE = 2e6


def repair_bytes(problem: Problem) -> int:
    """Bytes of a repair's work arrays."""
    return problem.n_trees * (4 + 8 + 4) + 2 * 8 * problem.n_terms + 2 * 8 * K.N_PARTIALS


class Repairer:
    """Work arrays for repairing the solutions of one :class:`Problem` (a maximisation, or a
    closest example searched by distance)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        n_trees, n_terms = problem.n_trees, problem.n_terms
        self.leaf = np.empty(n_trees, dtype=np.int32)
        self.u = np.empty(n_terms, dtype=np.int64)
        self.cand = np.empty(n_terms, dtype=np.int64)
        self.mark = np.zeros(n_trees, dtype=np.int64)
        self.touched = np.empty(n_trees, dtype=np.int32)
        self.parts = np.empty(K.N_PARTIALS)
        self.spare = np.empty(K.N_PARTIALS)
        self.counters = np.zeros(2, dtype=np.int64)  # stamps, tree walks
        self.rate = FIRST_RATE

    def repaired(self, inputs: dict[str, np.ndarray], seconds: float) -> Solution | None:
        """A better complete state near the point ``inputs`` (one cell per variable), found in
        about ``seconds`` (at most :data:`REPAIR_SECONDS`), or None."""
        p = self.problem
        # in the search's integer type, so that the kernels it shares with the search (box_alive)
        # are compiled once
        row = _cells_of(p, inputs).astype(box_dtype(p))
        budget = max(int(self.rate * min(seconds, REPAIR_SECONDS)), 1)
        began = time.monotonic()
        key = K.repair(p.trees, p.lifted, p.lifted_resources, p.terms, p.params, p.root, row,
                       SWEEPS, budget, self.leaf, self.u, self.cand, self.mark, self.touched,
                       self.parts, self.spare, self.counters)  # fmt: skip
        elapsed = time.monotonic() - began
        if self.counters[1] > 1000 and elapsed > 0:
            self.rate = self.counters[1] / elapsed
        if key == K.NO_INCUMBENT:
            return None
        return Solution(row.astype(np.int32), self.u.copy(), int(key), False, 0.0)


def _cells_of(problem: Problem, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The box of one cell per variable that holds the point ``inputs``."""
    n = problem.n_vars
    values = np.zeros(n)
    for i, name in enumerate(problem.query.instances):
        values[problem.var[i]] = inputs[name]
    row = np.empty(2 * n, dtype=np.int32)
    ptr, lo = problem.cell_ptr, problem.cell_lo
    for v in range(n):
        row[v] = np.searchsorted(lo[ptr[v] : ptr[v + 1]], values[v], side="right") - 1
    row[n:] = row[:n]
    return row
