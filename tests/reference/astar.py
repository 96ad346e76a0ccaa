"""Plain-Python twins of the A* kernels (``veritas_dsl/solvers/astar/kernels/``).

Each twin reads the same arrays as its kernel but takes the obvious route: full traversals
instead of pruned ones, exact rationals instead of error-free float transformations, and a
best-first search that recomputes every bound from scratch. ``tests/solvers/test_astar_kernels.py``
checks the kernels against them.
"""

from __future__ import annotations

import heapq
import math
from fractions import Fraction

KIND_CHANGED, KIND_LINF, KIND_L1 = 0, 1, 2
FLT_MAX = 3.4028234663852886e38


def reachable_leaves(trees, t, row, n_vars) -> list[int]:
    """Every leaf of tree ``t`` (search order) reachable in box ``row``."""
    roots, nd_var, nd_rank, nd_left, nd_right = trees[:5]
    found, stack = [], [int(roots[t])]
    while stack:
        node = stack.pop()
        v = nd_var[node]
        if v < 0:
            found.append(node)
            continue
        if row[v] <= nd_rank[node]:
            stack.append(int(nd_left[node]))
        if row[n_vars + v] > nd_rank[node]:
            stack.append(int(nd_right[node]))
    return found


def leaf_value(trees, t, leaf, k) -> int:
    """Leaf ``leaf`` of tree ``t``'s contribution to term ``k``: its value in the tree's column
    of term ``k`` (``nd_max`` at leaves is the value), 0 when the tree has no such column."""
    root, nd_max, (tr_col, col_ptr, col_term, tr_val) = trees[0][t], trees[5], trees[14:18]
    n_cols = tr_col[t + 1] - tr_col[t]
    for j, c in enumerate(range(tr_col[t], tr_col[t + 1])):
        if k in col_term[col_ptr[c] : col_ptr[c + 1]]:
            return int(nd_max[tr_val[t] + (leaf - root) * n_cols + j])
    return 0


def tree_max(trees, t, row, n_vars, n_terms) -> list[int]:
    """Best value of every term over the reachable leaves."""
    leaves = reachable_leaves(trees, t, row, n_vars)
    return [max(leaf_value(trees, t, leaf, k) for leaf in leaves) for k in range(n_terms)]


def bounds(problem, row) -> list[int]:
    """Every term's bound over the box: the base plus each tree's best reachable leaf."""
    total = [int(u) for u in problem.u_base]
    for t in range(len(problem.trees[0])):
        for k, best in enumerate(tree_max(problem.trees, t, row, problem.n_vars, len(total))):
            total[k] += best
    return total


def var_range(problem, row, v) -> tuple[float, float]:
    base = int(problem.cell_ptr[v])
    return float(problem.cell_lo[base + row[v]]), float(
        problem.cell_hi[base + row[problem.n_vars + v]]
    )


def one_hot_alive(problem, row) -> bool:
    for group in problem.groups:
        ranges = [var_range(problem, row, v) for v in group]
        if sum(lo >= 1 for lo, _ in ranges) > 1 or not any(hi >= 1 for _, hi in ranges):
            return False
    return True


def linear_alive(problem, row) -> bool:
    for entries, rhs in problem.linear:
        total = Fraction(0)
        for v, a in entries:
            lo, hi = var_range(problem, row, v)
            x = min(max(lo if a > 0 else hi, -FLT_MAX), FLT_MAX)
            total += Fraction(a) * Fraction(x)
        if total > Fraction(rhs):
            return False
    return True


def _pair(problem, row, a, b, c) -> tuple[Fraction, int]:
    """Least exact distance of variable ``a`` to its reference, and whether it must differ."""
    lo_a, hi_a = var_range(problem, row, a)
    if b >= 0:
        lo_b, hi_b = var_range(problem, row, b)
        if hi_a < lo_b:
            return Fraction(lo_b) - Fraction(hi_a), 1
        if hi_b < lo_a:
            return Fraction(lo_a) - Fraction(hi_b), 1
        return Fraction(0), 0
    if c < lo_a:
        return Fraction(lo_a) - Fraction(c), 1
    if c > hi_a:
        return Fraction(c) - Fraction(hi_a), 1
    if problem.integral[a] and c != math.floor(c):
        f = Fraction(c)
        return min(f - math.floor(f), math.ceil(f) - f), 1
    return Fraction(0), 0


def resource_cost(problem, r, row) -> Fraction:
    """Least exact value of resource ``r`` over the box (one-hot groups costed as a whole; a
    change count counts the units, ``res.units``, with a member that differs)."""
    res = problem.resources[r]
    unit = dict(zip((a for a, _, _ in res.pairs), res.units, strict=True))
    grouped = {v: g for g, group in enumerate(problem.groups) for v in group}
    parts: list[Fraction] = []
    for g, group in enumerate(problem.groups):
        block = [(a, c) for a, _, c in res.pairs if grouped.get(a) == g]
        if not block:
            continue
        ranges = {v: var_range(problem, row, v) for v in group}
        forced = [v for v in group if ranges[v][0] >= 1]
        able = forced or [v for v in group if ranges[v][1] >= 1]
        costs = []
        for w in able:
            gaps = [abs(Fraction(int(a == w)) - Fraction(c)) for a, c in block]
            if res.kind == KIND_LINF:
                costs.append(max(gaps))
            elif res.kind == KIND_L1:
                costs.append(sum(gaps))
            else:
                off = {unit[a] for (a, _), gap in zip(block, gaps, strict=True) if gap != 0}
                costs.append(Fraction(len(off)))
        parts.append(min(costs, default=Fraction(10**9)))  # no choice: the group is dead
    changed = set()
    for (a, b, c), weight in zip(res.pairs, res.weights, strict=True):
        if a in grouped:
            continue
        gap, differs = _pair(problem, row, a, b, c)
        if res.kind != KIND_CHANGED:
            parts.append(gap * Fraction(weight))
        elif differs:
            changed.add(unit[a])
    if res.kind == KIND_CHANGED:
        parts.append(Fraction(len(changed)))
    if res.kind == KIND_LINF:
        return max(parts, default=Fraction(0))
    return sum(parts, Fraction(0))


def box_alive(problem, row) -> bool:
    """Every lifted input constraint can still be met in the box."""
    if not (one_hot_alive(problem, row) and linear_alive(problem, row)):
        return False
    for r, res in enumerate(problem.resources):
        if not res.goal and resource_cost(problem, r, row) > Fraction(res.bound):
            return False
    return True


def maximum(problem) -> int | None:
    """The best objective (term 0) in units over complete states whose terms all meet their
    thresholds, by plain best-first search in tree order with bounds recomputed from scratch;
    None when no complete state is feasible. Ties between sure and unsure thresholds are
    treated as met."""
    thr, _, cons, _ = problem.terms
    n = problem.n_vars
    n_trees = len(problem.trees[0])

    def feasible_bounds(row):
        if not box_alive(problem, row):
            return None
        u = bounds(problem, row)
        if any(cons[k] and u[k] < thr[k] for k in range(len(u))):
            return None
        return u

    root = [int(x) for x in problem.root]
    u = feasible_bounds(root)
    if u is None:
        return None
    heap = [(-u[0], 0, root)]
    counter = 0
    while heap:
        negative, t, row = heapq.heappop(heap)
        while t < n_trees and len(reachable_leaves(problem.trees, t, row, n)) == 1:
            t += 1
        if t == n_trees:
            return -negative
        lf_start, lf_end, lf_var, lf_lo, lf_hi = problem.trees[6:11]
        for leaf in reachable_leaves(problem.trees, t, row, n):
            child = list(row)
            for e in range(lf_start[leaf], lf_end[leaf]):
                v = lf_var[e]
                child[v] = max(child[v], int(lf_lo[e]))
                child[n + v] = min(child[n + v], int(lf_hi[e]))
            cu = feasible_bounds(child)
            if cu is not None:
                counter += 1
                heapq.heappush(heap, (-cu[0], t + 1, child))
    return None
