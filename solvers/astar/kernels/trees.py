"""Search trees in a box: each term's best reachable leaf, whether a tree is down to one leaf,
which leaves are reachable, which trees a step can change; and the model's output at a point.

Trees are the compacted search trees of the package docstring: node ``n`` splits on variable
``nd_var[n]`` (-1 at a leaf) and sends cells ``<= nd_rank[n]`` left.
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.jit import inlined, internal, kernel
from veritas_dsl.solvers.astar.kernels.arrays import lower_bound
from veritas_dsl.solvers.astar.kernels.layout import C_STAMP, NO_INCUMBENT


@internal
def tree_max(
    root, n_cols, first, row, n_vars, nd_var, nd_rank, nd_left, nd_right, nd_max, out, arg, base,
    stack,
):  # fmt: skip
    """``out[base + j]`` = best value of the tree's column ``j`` (of ``n_cols``) over the leaves
    reachable in box ``row``, reached at leaf ``arg[base + j]``.

    ``nd_max[first + (n - root) * n_cols + j]`` is the best value of column ``j`` in the
    subtree of ``n`` (the leaf's own value at a leaf), so subtrees that cannot improve any
    column are skipped and the better child (on column 0) is visited first. ``stack`` needs the
    tree's depth + 2 slots.
    """
    for j in range(n_cols):
        out[base + j] = NO_INCUMBENT
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        off = first + (node - root) * n_cols
        useful = False
        for j in range(n_cols):
            if nd_max[off + j] > out[base + j]:
                useful = True
                break
        if not useful:
            continue
        v = nd_var[node]
        if v < 0:
            for j in range(n_cols):
                if nd_max[off + j] > out[base + j]:
                    out[base + j] = nd_max[off + j]
                    arg[base + j] = node
            continue
        r = nd_rank[node]
        left = nd_left[node]
        right = nd_right[node]
        go_left = row[v] <= r
        go_right = row[n_vars + v] > r
        if (
            go_left
            and go_right
            and nd_max[first + (left - root) * n_cols] > nd_max[first + (right - root) * n_cols]
        ):
            stack[top] = right  # popped last
            stack[top + 1] = left
            top += 2
            continue
        if go_left:
            stack[top] = left
            top += 1
        if go_right:
            stack[top] = right
            top += 1
    return out


@inlined
def leaf_reachable(leaf, row, n_vars, lf_start, lf_end, lf_var, lf_lo, lf_hi):
    """Whether ``leaf`` is reachable in box ``row`` (its box meets the row's on every variable)."""
    for e in range(lf_start[leaf], lf_end[leaf]):
        v = lf_var[e]
        if max(row[v], lf_lo[e]) > min(row[n_vars + v], lf_hi[e]):
            return False
    return True


@inlined
def tree_is_fixed(root, row, n_vars, nd_var, nd_rank, nd_left, nd_right):
    """True when exactly one leaf of the tree is reachable in box ``row``."""
    node = root
    while nd_var[node] >= 0:
        v = nd_var[node]
        r = nd_rank[node]
        go_left = row[v] <= r
        go_right = row[n_vars + v] > r
        if go_left and go_right:
            return False
        node = nd_left[node] if go_left else nd_right[node]
    return True


@internal
def tree_leaves(root, row, n_vars, nd_var, nd_rank, nd_left, nd_right, leaves, stack):
    """Write the leaves reachable in box ``row`` into ``leaves``; return their number."""
    count = 0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        v = nd_var[node]
        if v < 0:
            leaves[count] = node
            count += 1
            continue
        r = nd_rank[node]
        if row[n_vars + v] > r:
            stack[top] = nd_right[node]
            top += 1
        if row[v] <= r:
            stack[top] = nd_left[node]
            top += 1
    return count


@inlined
def full_bounds(trees, row, n_vars, u_base, tr_ep, term_ep, since, u, out, arg, stack):
    """``u[k]`` = the bound over box ``row`` of every term that went on after epoch ``since``
    (``term_ep[k] > since``): ``u_base`` plus each tree's best leaf, walking the trees that feed
    such a term (``tr_ep[t] > since``). ``since`` -1: every term that is on. Returns the first
    tree walked (in search order)."""
    tr_root, nd_var, nd_rank, nd_left, nd_right, nd_max = trees[0:6]
    tr_col, col_ptr, col_term, tr_val = trees[14:18]
    for k in range(u.shape[0]):
        if term_ep[k] > since:
            u[k] = u_base[k]
    first = tr_root.shape[0]
    for t in range(tr_root.shape[0]):
        if tr_ep[t] <= since:
            continue
        first = min(first, t)
        c0 = tr_col[t]
        n_cols = tr_col[t + 1] - c0
        tree_max(
            tr_root[t], n_cols, tr_val[t], row, n_vars, nd_var, nd_rank, nd_left, nd_right, nd_max,
            out, arg, np.int64(0), stack,  # a literal 0 would compile tree_max again
        )  # fmt: skip
        for j in range(n_cols):
            for e in range(col_ptr[c0 + j], col_ptr[c0 + j + 1]):
                if term_ep[col_term[e]] > since:
                    u[col_term[e]] += out[j]
    return first


@internal
def affected_trees(
    leaf, row, crow, n_vars, lf_start, lf_end, lf_var, vs_ptr, vs_rank, vs_tree, t_first, tr_ep,
    mark, ctx, affected,
):  # fmt: skip
    """Trees (from ``t_first`` on in search order, and on: ``tr_ep`` at least 0) with a split
    whose side the step from ``row`` to ``crow`` decided: the only ones whose best reachable
    leaf can change. Written to ``affected``; returns their number."""
    ctx[C_STAMP] += 1
    stamp = ctx[C_STAMP]
    n_aff = 0
    for e in range(lf_start[leaf], lf_end[leaf]):
        v = lf_var[e]
        base = vs_ptr[v]
        end = vs_ptr[v + 1]
        for side in range(2):
            # splits at ranks lo_r..hi_r went from undecided to decided
            if side == 0:
                lo_r = np.int64(row[v])
                hi_r = np.int64(crow[v]) - 1
            else:
                lo_r = np.int64(crow[n_vars + v])
                hi_r = np.int64(row[n_vars + v]) - 1
            if hi_r < lo_r:
                continue
            i0 = lower_bound(vs_rank, base, end, lo_r)
            i1 = lower_bound(vs_rank, base, end, hi_r + 1)  # ranks are integers
            for i in range(i0, i1):
                t = vs_tree[i]
                if t >= t_first and mark[t] != stamp and tr_ep[t] >= 0:
                    mark[t] = stamp
                    affected[n_aff] = t
                    n_aff += 1
    return n_aff


@kernel
def eval_margins(feature, threshold, left, right, value, roots, base, x):
    """The model's raw outputs at float32 point ``x``: base plus leaf values in tree order, in
    float64, exactly as ``Ensemble.eval`` adds them."""
    total = base.copy()
    for t in range(roots.shape[0]):
        node = roots[t]
        while feature[node] >= 0:
            node = left[node] if x[feature[node]] < threshold[node] else right[node]
        for k in range(total.shape[0]):
            total[k] += value[node, k]
    return total
