"""Kernels that prepare the search trees once per query (``problem.py`` calls them): compaction
of the trees to a box, with product trees; each leaf's box; the best value under each node; and
node depths."""

from __future__ import annotations

import numpy as np

from veritas_dsl.jit import kernel
from veritas_dsl.solvers.astar.kernels.arrays import copy_into, grow


@kernel
def compact_trees(
    nd_var, nd_rank, nd_left, nd_right, job_a, job_b, root_lo, root_hi, job_cap, out_cap
):
    """Copy trees with every split decided by the box (the root box narrowed along the path)
    removed, and chain a second tree under each leaf of the first (a product tree) when
    ``job_b[j] >= 0``.

    Input nodes: ``nd_var`` (variable, -1 at leaves), ``nd_rank``, ``nd_left``, ``nd_right``
    (absolute). Output, in pre-order per job: variable, rank, left, right (absolute in the output),
    ``src_a`` and ``src_b`` (source leaves of the two trees at output leaves, -1 otherwise), and
    ``job_root[j]`` (-1 when the job's output would exceed ``job_cap[j]`` nodes; it is then left
    out). Returns these arrays and the number of output nodes.

    One long function on purpose: an explicit-stack traversal whose every step reads and writes
    the same work stack, box and output; helpers would each take fifteen arrays.
    """
    o_var = np.empty(out_cap, dtype=np.int32)
    o_rank = np.empty(out_cap, dtype=np.int32)
    o_left = np.empty(out_cap, dtype=np.int32)
    o_right = np.empty(out_cap, dtype=np.int32)
    o_src_a = np.empty(out_cap, dtype=np.int32)
    o_src_b = np.empty(out_cap, dtype=np.int32)
    job_root = np.full(job_a.shape[0], -1, dtype=np.int32)
    lo = root_lo.copy()
    hi = root_hi.copy()
    # work items: kind (0 visit, 1 restore), node, parent, side, stage, var, lo, hi, leaf_a
    cap = 64
    w_kind = np.empty(cap, dtype=np.int32)
    w_node = np.empty(cap, dtype=np.int32)
    w_parent = np.empty(cap, dtype=np.int32)
    w_side = np.empty(cap, dtype=np.int32)
    w_stage = np.empty(cap, dtype=np.int32)
    w_var = np.empty(cap, dtype=np.int32)
    w_lo = np.empty(cap, dtype=np.int32)
    w_hi = np.empty(cap, dtype=np.int32)
    w_leaf_a = np.empty(cap, dtype=np.int32)
    n_out = 0
    for j in range(job_a.shape[0]):
        start = n_out
        overflow = False
        top = 0
        w_kind[0] = 0
        w_node[0] = job_a[j]
        w_parent[0] = -1
        w_side[0] = 0
        w_stage[0] = 0
        w_var[0] = -1
        w_leaf_a[0] = -1
        top = 1
        while top > 0:
            top -= 1
            kind = w_kind[top]
            if kind == 1:
                lo[w_var[top]] = w_lo[top]
                hi[w_var[top]] = w_hi[top]
                continue
            node = w_node[top]
            parent = w_parent[top]
            side = w_side[top]
            stage = w_stage[top]
            leaf_a = w_leaf_a[top]
            if w_var[top] >= 0:
                lo[w_var[top]] = w_lo[top]
                hi[w_var[top]] = w_hi[top]
            if overflow:
                continue
            v = nd_var[node]
            if v < 0:
                if stage == 0 and job_b[j] >= 0:
                    # graft the second tree under this leaf
                    w_kind[top] = 0
                    w_node[top] = job_b[j]
                    w_parent[top] = parent
                    w_side[top] = side
                    w_stage[top] = 1
                    w_var[top] = -1
                    w_leaf_a[top] = node
                    top += 1
                    continue
                if n_out - start >= job_cap[j] or n_out >= out_cap:
                    overflow = True
                    continue
                o = n_out
                n_out += 1
                o_var[o] = -1
                o_rank[o] = 0
                o_left[o] = -1
                o_right[o] = -1
                if stage == 0:
                    o_src_a[o] = node
                    o_src_b[o] = -1
                else:
                    o_src_a[o] = leaf_a
                    o_src_b[o] = node
                if parent >= 0:
                    if side == 0:
                        o_left[parent] = o
                    else:
                        o_right[parent] = o
                continue
            r = nd_rank[node]
            follow = -1
            if hi[v] <= r:
                follow = nd_left[node]
            elif lo[v] > r:
                follow = nd_right[node]
            if top + 4 >= cap:
                cap *= 2
                w_kind = grow(w_kind, cap)
                w_node = grow(w_node, cap)
                w_parent = grow(w_parent, cap)
                w_side = grow(w_side, cap)
                w_stage = grow(w_stage, cap)
                w_var = grow(w_var, cap)
                w_lo = grow(w_lo, cap)
                w_hi = grow(w_hi, cap)
                w_leaf_a = grow(w_leaf_a, cap)
            if follow >= 0:
                w_kind[top] = 0
                w_node[top] = follow
                w_parent[top] = parent
                w_side[top] = side
                w_stage[top] = stage
                w_var[top] = -1
                w_leaf_a[top] = leaf_a
                top += 1
                continue
            if n_out - start >= job_cap[j] or n_out >= out_cap:
                overflow = True
                continue
            o = n_out
            n_out += 1
            o_var[o] = v
            o_rank[o] = r
            o_src_a[o] = -1
            o_src_b[o] = -1
            if parent >= 0:
                if side == 0:
                    o_left[parent] = o
                else:
                    o_right[parent] = o
            old_lo = lo[v]
            old_hi = hi[v]
            # pushed in reverse: left subtree first, then restore, right subtree, restore
            for item in range(4):
                if item == 0 or item == 2:
                    w_kind[top] = 1
                    w_var[top] = v
                    w_lo[top] = old_lo
                    w_hi[top] = old_hi
                else:
                    w_kind[top] = 0
                    w_parent[top] = o
                    w_stage[top] = stage
                    w_leaf_a[top] = leaf_a
                    w_var[top] = v
                    if item == 1:
                        w_node[top] = nd_right[node]
                        w_side[top] = 1
                        w_lo[top] = max(old_lo, r + 1)
                        w_hi[top] = old_hi
                    else:
                        w_node[top] = nd_left[node]
                        w_side[top] = 0
                        w_lo[top] = old_lo
                        w_hi[top] = min(old_hi, r)
                top += 1
        if overflow:
            n_out = start
            copy_into(lo, root_lo)
            copy_into(hi, root_hi)
        else:
            job_root[j] = start
    return o_var, o_rank, o_left, o_right, o_src_a, o_src_b, job_root, n_out


@kernel
def leaf_boxes(tr_root, nd_var, nd_rank, nd_left, nd_right, max_depth):
    """Each leaf's box as entries (variable, first cell, last cell), one per variable on its path.

    Returns ``lf_start, lf_end`` (per node; meaningful at leaves) and ``lf_var, lf_lo, lf_hi``.
    An unconstrained end is 0 (first) or ``2**30`` (last).
    """
    n_nodes = nd_var.shape[0]
    lf_start = np.zeros(n_nodes, dtype=np.int32)
    lf_end = np.zeros(n_nodes, dtype=np.int32)
    cap = 1024
    lf_var = np.empty(cap, dtype=np.int32)
    lf_lo = np.empty(cap, dtype=np.int32)
    lf_hi = np.empty(cap, dtype=np.int32)
    n = 0
    path_var = np.empty(max_depth + 1, dtype=np.int32)
    path_rank = np.empty(max_depth + 1, dtype=np.int32)
    path_left = np.empty(max_depth + 1, dtype=np.bool_)
    st_node = np.empty(2 * max_depth + 4, dtype=np.int32)
    st_depth = np.empty(2 * max_depth + 4, dtype=np.int32)
    st_left = np.empty(2 * max_depth + 4, dtype=np.bool_)
    for t in range(tr_root.shape[0]):
        top = 1
        st_node[0] = tr_root[t]
        st_depth[0] = 0
        while top > 0:
            top -= 1
            node = st_node[top]
            depth = st_depth[top]
            if depth > 0:
                path_left[depth - 1] = st_left[top]
            v = nd_var[node]
            if v >= 0:
                path_var[depth] = v
                path_rank[depth] = nd_rank[node]
                st_node[top] = nd_right[node]
                st_depth[top] = depth + 1
                st_left[top] = False
                st_node[top + 1] = nd_left[node]
                st_depth[top + 1] = depth + 1
                st_left[top + 1] = True
                top += 2
                continue
            lf_start[node] = n
            for d in range(depth):
                w = path_var[d]
                seen = False
                for e in range(lf_start[node], n):
                    seen = seen or lf_var[e] == w
                if seen:
                    continue
                lo_r = 0
                hi_r = 2**30
                for d2 in range(d, depth):
                    if path_var[d2] == w:
                        if path_left[d2]:
                            hi_r = min(hi_r, path_rank[d2])
                        else:
                            lo_r = max(lo_r, path_rank[d2] + 1)
                if n >= cap:
                    cap *= 2
                    lf_var = grow(lf_var, cap)
                    lf_lo = grow(lf_lo, cap)
                    lf_hi = grow(lf_hi, cap)
                lf_var[n] = w
                lf_lo[n] = lo_r
                lf_hi[n] = hi_r
                n += 1
            lf_end[node] = n
    return lf_start, lf_end, lf_var[:n].copy(), lf_lo[:n].copy(), lf_hi[:n].copy()


@kernel
def subtree_max(nd_left, nd_right, nd_off, nd_max):
    """Fill internal nodes of ``nd_max`` (int64, flat; node ``n``'s columns at
    ``nd_off[n]:nd_off[n + 1]``, leaves set) with the best value of each column in their
    subtree. Trees are in pre-order, so children come after parents; a node and its children
    have the same columns."""
    for n in range(nd_left.shape[0] - 1, -1, -1):
        if nd_left[n] >= 0:
            a = nd_off[nd_left[n]]
            b = nd_off[nd_right[n]]
            c = nd_off[n]
            for j in range(nd_off[n + 1] - c):
                nd_max[c + j] = max(nd_max[a + j], nd_max[b + j])
    return nd_max


@kernel
def node_depth(nd_left, nd_right):
    """Depth of every node of trees stored in pre-order (children after their parent)."""
    depth = np.zeros(nd_left.shape[0], dtype=np.int32)
    for n in range(nd_left.shape[0]):
        if nd_left[n] >= 0:
            depth[nd_left[n]] = depth[n] + 1
            depth[nd_right[n]] = depth[n] + 1
    return depth


@kernel
def pair_gains(t_ptr, t_leaf, value, lf_start, lf_end, lf_var, lf_lo, lf_hi, n_vars):
    """How much merging two trees into one product tree lowers their bound over the root box.

    Tree ``t``'s leaves are ``t_leaf[t_ptr[t]:t_ptr[t + 1]]``, sorted by decreasing ``value``
    (float64, per node); leaf boxes as :func:`leaf_boxes` returns them. ``gains[a, b]`` (for
    ``a < b``, float64, shape (n_trees, n_trees)) is the best leaf value of ``a`` plus that of
    ``b``, minus the best sum over pairs of leaves whose boxes meet (Chen et al. 2019's merge of
    two trees): what the pair's product tree saves on the sum of the two trees' best leaves. Each
    leaf of ``a`` is tried in order of value, against the leaves of ``b`` in order of value,
    until no pair can beat the best one found.
    """
    n = t_ptr.shape[0] - 1
    gains = np.zeros((n, n))
    lo = np.zeros(n_vars, dtype=np.int32)  # the box of a leaf of ``a``, dense
    hi = np.full(n_vars, 2**30, dtype=np.int32)
    for a in range(n):
        best_a = value[t_leaf[t_ptr[a]]]
        for b in range(a + 1, n):
            best_b = value[t_leaf[t_ptr[b]]]
            best = -np.inf
            for i in range(t_ptr[a], t_ptr[a + 1]):
                la = t_leaf[i]
                if value[la] + best_b <= best:
                    break
                for e in range(lf_start[la], lf_end[la]):
                    lo[lf_var[e]] = lf_lo[e]
                    hi[lf_var[e]] = lf_hi[e]
                for j in range(t_ptr[b], t_ptr[b + 1]):
                    lb = t_leaf[j]
                    if value[la] + value[lb] <= best:
                        break
                    meet = True
                    for e in range(lf_start[lb], lf_end[lb]):
                        v = lf_var[e]
                        if max(lo[v], lf_lo[e]) > min(hi[v], lf_hi[e]):
                            meet = False
                            break
                    if meet:
                        best = value[la] + value[lb]
                        break
                for e in range(lf_start[la], lf_end[la]):
                    lo[lf_var[e]] = 0
                    hi[lf_var[e]] = 2**30
            gains[a, b] = best_a + best_b - best
    return gains
