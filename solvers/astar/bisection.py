"""Closest examples by bisection on the radius: for an L-inf distance to a row, the candidate
radii are the cells' gaps to the row, and each probe is a find inside the ball of one radius
(``anytime.Anytime._bisect`` drives it).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from veritas_dsl.ir.query import Find
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.lifted import lifted_arrays
from veritas_dsl.solvers.astar.problem import Plan, Problem, build_problem

#: Expansions a probe makes on the branch's own trees before it is built again for its ball
#: (:func:`probe_for_ball`); most probes end well before.
REBUILD_AFTER = 1000


def bisectable(problem: Problem) -> bool:
    """Whether the goal is an unweighted L-inf distance to a row, which bisection answers
    exactly (weighted, its gaps would round twice; the best-first search takes it)."""
    goal = next((res for res in problem.resources if res.goal), None)
    return (
        goal is not None
        and goal.kind == K.KIND_LINF
        and all(b < 0 for _, b, _ in goal.pairs)
        and all(w == 1.0 for w in goal.weights)
    )


def cell_gaps(problem: Problem) -> np.ndarray:
    """Per cell, the distance (float64, correctly rounded) of its nearest value to the goal's row
    value for its variable (0 for variables the goal does not measure, inf outside the root
    box).

    A point's L-inf distance rounds to the largest rounded gap of its coordinates (rounding is
    monotone), so the optimum is one of these gaps.
    """
    n_cells = len(problem.cell_lo)
    cell_var = np.repeat(np.arange(problem.n_vars), np.diff(problem.cell_ptr))
    center = np.full(problem.n_vars, np.nan)
    goal = next(res for res in problem.resources if res.goal)
    for a, _, c in goal.pairs:
        center[a] = c
    c = center[cell_var]
    lo, hi = problem.cell_lo, problem.cell_hi
    with np.errstate(invalid="ignore"):
        gap = np.where(c < lo, lo - c, np.where(c > hi, c - hi, 0.0))
        fraction = np.minimum(c - np.floor(c), np.ceil(c) - c)
    inside_int = problem.integral[cell_var] & (c >= lo) & (c <= hi) & (fraction > 0)
    gap = np.where(inside_int, fraction, gap)
    gap = np.where(np.isnan(c), 0.0, gap)
    first = problem.cell_ptr[:-1] + problem.root[: problem.n_vars]
    last = problem.cell_ptr[:-1] + problem.root[problem.n_vars :]
    cell = np.arange(n_cells)
    reachable = (cell >= first[cell_var]) & (cell <= last[cell_var])
    return np.where(reachable, gap, np.inf)


def ball_root(problem: Problem, gaps: np.ndarray, radius: float):
    """The root box cut to the cells within ``radius`` of the row (contiguous, since a cell's
    gap falls then rises along the line); None when some variable keeps no cell."""
    n = problem.n_vars
    within = gaps <= radius
    count = np.add.reduceat(within, problem.cell_ptr[:-1])  # every variable owns a cell
    if not count.all():
        return None
    inside = np.flatnonzero(within)  # sorted, so grouped by variable
    last = np.cumsum(count) - 1
    row = np.empty(2 * n, dtype=np.int32)
    row[:n] = inside[last - count + 1] - problem.cell_ptr[:-1]
    row[n:] = inside[last] - problem.cell_ptr[:-1]
    return row


def find_within(problem: Problem, root: np.ndarray) -> Problem:
    """The same problem as a find from ``root`` (the goal's distance no longer a resource of the
    kernels; ``resources`` keeps it, so that a point is chosen nearest the row)."""
    resources = tuple(res for res in problem.resources if not res.goal)
    lifted, lifted_resources = lifted_arrays(
        problem.n_vars, problem.cell_ptr, problem.cell_lo, problem.cell_hi, problem.integral,
        problem.groups, resources, problem.linear,
    )  # fmt: skip
    params = problem.params.copy()
    params[K.P_MODE] = K.MODE_FIND
    params[K.P_GOAL] = -1
    return replace(
        problem, root=root, lifted=lifted, lifted_resources=lifted_resources, params=params
    )


def probe_for_ball(problem: Problem, root: np.ndarray, pair_trees: str) -> Problem:
    """The probe of box ``root`` built afresh: the branch's query as a find whose static box is
    the ball, so that its trees are compacted to the ball and, unless ``pair_trees`` is
    ``"never"``, pairs of them merged into product trees. A probe that proves a ball empty
    needs its trees' bounds over that ball; built for it, they are far tighter (a 300-tree
    model of depth 8: 526 expansions where the branch's own trees took 120,000).
    ``resources`` is the branch's, as in :func:`find_within`."""
    n = problem.n_vars
    query = problem.query
    table = query.variables  # MergeTies and StaticBounds attached it
    lo = problem.cell_lo[problem.cell_ptr[:-1] + root[:n]]
    hi = problem.cell_hi[problem.cell_ptr[:-1] + root[n:]]
    ball = replace(table, lo=np.maximum(table.lo, lo), hi=np.minimum(table.hi, hi))
    plan = Plan(K.MODE_FIND, pair_trees="never" if pair_trees == "never" else "always")
    probe = build_problem(replace(query, goal=Find(), variables=ball), plan)
    return replace(probe, resources=problem.resources)
