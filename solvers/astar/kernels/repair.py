"""Repairing an incumbent: hill climbing over single cells from a solution's point.

A dive ends at a complete state that is the best of its path, seldom the best near it. Moving one
variable to another cell changes only the trees that split on it, so every cell of every
variable can be tried at the cost of a few tree walks each, on exact integer units.
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.jit import inlined, kernel
from veritas_dsl.solvers.astar.kernels.arrays import copy_into
from veritas_dsl.solvers.astar.kernels.feasibility import box_alive
from veritas_dsl.solvers.astar.kernels.keys import state_key, terms_verdict
from veritas_dsl.solvers.astar.kernels.layout import MODE_DISTANCE, NO_INCUMBENT, P_GOAL, P_MODE


@inlined
def _leaf(root, row, n_vars, nd_var, nd_rank, nd_left, nd_right):
    """The leaf a box of one cell per variable reaches."""
    node = root
    while nd_var[node] >= 0:
        node = nd_left[node] if row[nd_var[node]] <= nd_rank[node] else nd_right[node]
    return node


@inlined
def _move(t, root, new, old, u, tr_col, col_ptr, col_term, tr_val, nd_max):
    """Add to ``u`` what tree ``t`` (root ``root``) changes when its leaf goes from ``old`` to
    ``new``."""
    n_cols = tr_col[t + 1] - tr_col[t]
    for c in range(tr_col[t], tr_col[t + 1]):
        j = c - tr_col[t]
        delta = (
            nd_max[tr_val[t] + (new - root) * n_cols + j]
            - nd_max[tr_val[t] + (old - root) * n_cols + j]
        )
        for e in range(col_ptr[c], col_ptr[c + 1]):
            u[col_term[e]] += delta


@kernel
def repair(trees, problem, resources, terms, params, root, row, sweeps, budget, leaf, u, cand, mark,
           touched, parts, spare, counters):  # fmt: skip
    """Improve the single-cell box ``row`` (``row[v] == row[n_vars + v]``, in the static box
    ``root``) by best-improvement moves of one variable to another cell, for at most ``sweeps``
    sweeps over the variables and about ``budget`` tree walks; return the improved key, or
    ``NO_INCUMBENT`` when no move improved it. A move is taken only when the box
    stays alive (:func:`box_alive`) and every output constraint surely holds; the key is
    :func:`state_key`'s, so it maximises the least objective, or in distance mode brings the
    point closer to its reference (the goal resource ``params[P_GOAL]``). On return ``u`` holds
    the terms' exact values at ``row``.

    Work arrays: ``leaf`` (int32, one per tree), ``u`` and ``cand`` (int64, one per term),
    ``mark`` (int64 stamps, one per tree), ``touched`` (int32, one per tree), ``parts`` and
    ``spare`` (partials); ``counters[0]`` numbers the stamps, ``counters[1]`` counts the walks.
    """
    tr_root, nd_var, nd_rank, nd_left, nd_right, nd_max = trees[0:6]
    vs_ptr, vs_tree = trees[11], trees[13]
    tr_col, col_ptr, col_term, tr_val = trees[14:18]
    term_thr, term_sure, term_cons, u_base = terms
    n_vars = problem[0]
    mode = params[P_MODE]
    goal = params[P_GOAL]
    copy_into(u, u_base)
    for t in range(tr_root.shape[0]):
        leaf[t] = _leaf(tr_root[t], row, n_vars, nd_var, nd_rank, nd_left, nd_right)
        n_cols = tr_col[t + 1] - tr_col[t]
        for c in range(tr_col[t], tr_col[t + 1]):
            value = nd_max[tr_val[t] + (leaf[t] - tr_root[t]) * n_cols + c - tr_col[t]]
            for e in range(col_ptr[c], col_ptr[c + 1]):
                u[col_term[e]] += value
    _, cost = box_alive(row, goal, problem, resources, parts, spare)
    key, _ = state_key(mode, u, cost, np.int64(0), term_thr, term_cons)
    improved = False
    counters[1] = 0
    for _ in range(sweeps):
        moved = False
        for v in range(n_vars):
            if counters[1] >= budget:
                break
            counters[0] += 1
            stamp = counters[0]
            n_t = 0
            for i in range(vs_ptr[v], vs_ptr[v + 1]):
                t = vs_tree[i]
                if mark[t] != stamp:
                    mark[t] = stamp
                    touched[n_t] = t
                    n_t += 1
            if n_t == 0:
                continue
            here = row[v]
            best_cell = here
            best_key = key
            for c in range(root[v], root[n_vars + v] + 1):
                if c == here:
                    continue
                if counters[1] >= budget:
                    break
                row[v] = c
                row[n_vars + v] = c
                alive, cost = box_alive(row, goal, problem, resources, parts, spare)
                if not alive:
                    continue
                if mode == MODE_DISTANCE:  # the key is the distance: no closer, no walks
                    k_c, _ = state_key(mode, u, cost, np.int64(0), term_thr, term_cons)
                    if k_c <= best_key:
                        continue
                counters[1] += n_t
                copy_into(cand, u)
                for j in range(n_t):
                    t = touched[j]
                    lf = _leaf(tr_root[t], row, n_vars, nd_var, nd_rank, nd_left, nd_right)
                    _move(
                        t, tr_root[t], lf, leaf[t], cand, tr_col, col_ptr, col_term, tr_val, nd_max
                    )
                if terms_verdict(cand, term_thr, term_sure, term_cons) < 1:
                    continue
                k_c, _ = state_key(mode, cand, cost, np.int64(0), term_thr, term_cons)
                if k_c > best_key:
                    best_key = k_c
                    best_cell = c
            row[v] = best_cell
            row[n_vars + v] = best_cell
            if best_cell != here:
                moved = True
                key = best_key
                for j in range(n_t):
                    t = touched[j]
                    lf = _leaf(tr_root[t], row, n_vars, nd_var, nd_rank, nd_left, nd_right)
                    _move(t, tr_root[t], lf, leaf[t], u, tr_col, col_ptr, col_term, tr_val, nd_max)
                    leaf[t] = lf
        improved = improved or moved
        if not moved or counters[1] >= budget:
            break
    return key if improved else NO_INCUMBENT
