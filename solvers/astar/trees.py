"""Search trees and units (steps 5 and 6 of :mod:`~veritas_dsl.solvers.astar.problem`): every
(model, instance) copy compacted by the static box, the two copies of a tree read on tied
instances merged into one product tree, leaf contributions scaled to int64 units, and the
arrays the kernels walk.
"""

from __future__ import annotations

import math

import numpy as np

from veritas_dsl.solvers.astar import kernels as K

#: Largest product tree (in nodes, relative to its two factors) worth building.
PRODUCT_GROWTH = 4
#: Units are exact when every sum of leaf units stays below this.
UNIT_LIMIT = 2.0**61
#: Largest product of two trees of one instance (:func:`pair_trees`) worth building, in nodes:
#: on ``bench/anytime_big.py`` larger products tightened the bound less per second, as each
#: expansion of one makes as many children as it has reachable leaves.
PAIR_NODES = 1000
#: ``pair_trees="auto"`` merges pairs of trees when some tree is at least this deep (after
#: compaction): deep trees, whose sum of best leaves is loose, as on the big models of
#: ``bench/anytime_big.py`` (depth 8); shallower models are searched as they are, so their
#: queries pay nothing for it.
PAIR_MIN_DEPTH = 7
#: ... and at most this many trees: choosing the pairs compares every two trees (about 20 ms
#: for 300 trees of depth 8), inside the query's time limit.
PAIR_MAX_TREES = 1000


def fill_trees(
    problem, compacted, copies, n_terms: int, pairing: str = "never"
) -> tuple[int, int, int]:
    """Fill the search trees of ``problem`` (ordered, leaf contributions attached) from the
    ``compacted`` trees of ``copies`` (:func:`compact`), and its units (``scale``,
    ``exact_units``, ``u_base``, ``n_trees``). ``pairing`` (``"never"``, ``"auto"`` or
    ``"always"``) merges pairs of trees first (:func:`pair_trees`; only for a single term, the
    objective). Returns the unit exponent ``q`` and the largest leaf count and depth of a tree."""
    n_vars = problem.n_vars
    if pairing != "never" and n_terms == 1:
        compacted = pair_trees(compacted, copies, problem.root, n_vars, pairing == "always")
    nd_var, nd_rank, nd_left, nd_right, src_a, src_b, tree_roots, tree_sizes = compacted
    leaf_values = _leaf_values(nd_var, src_a, src_b, copies, n_terms)
    q, exact = _scale(leaf_values, nd_var, tree_roots, tree_sizes)
    units = np.ldexp(leaf_values, q)
    units = units if exact else np.ceil(units)
    leaf_units = np.ascontiguousarray(np.where((nd_var < 0)[:, None], units, 0), dtype=np.int64)
    problem.scale = math.ldexp(1.0, q)
    problem.exact_units = exact

    single = nd_var[tree_roots] < 0
    tree_of = np.repeat(np.arange(len(tree_roots)), tree_sizes)
    nonzero = np.zeros(len(tree_roots), dtype=bool)
    np.logical_or.at(nonzero, tree_of, np.any(leaf_units != 0, axis=1))
    u_base = leaf_units[tree_roots[single]].sum(axis=0) if len(tree_roots) else np.zeros(n_terms)
    problem.u_base = np.ascontiguousarray(u_base, dtype=np.int64).reshape(n_terms)
    keep = np.nonzero(~single & nonzero)[0]
    order = _order(leaf_units, nd_var, tree_roots, tree_sizes, keep)
    roots = tree_roots[order].astype(np.int32)
    sizes = tree_sizes[order]
    problem.n_trees = len(roots)

    node_tree = np.full(len(nd_var), -1, dtype=np.int64)
    if len(roots):
        starts = np.repeat(roots, sizes)
        within = np.arange(len(starts)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        node_tree[starts + within] = np.repeat(np.arange(len(roots)), sizes)
    is_split = (nd_var >= 0) & (node_tree >= 0)
    sv, sr, st = nd_var[is_split], nd_rank[is_split], node_tree[is_split]
    by = np.lexsort((sr, sv))
    vs_rank = np.ascontiguousarray(sr[by], dtype=np.int32)
    vs_tree = np.ascontiguousarray(st[by], dtype=np.int32)
    vs_ptr = np.searchsorted(sv[by], np.arange(n_vars + 1)).astype(np.int32)
    max_depth = int(K.node_depth(nd_left, nd_right).max()) if len(roots) else 0
    lf_start, lf_end, lf_var, lf_lo, lf_hi = K.leaf_boxes(
        roots, nd_var, nd_rank, nd_left, nd_right, max_depth
    )
    leaf_count = (nd_var < 0).astype(np.int64)
    per_tree = np.bincount(node_tree[node_tree >= 0], leaf_count[node_tree >= 0], len(roots))
    max_leaves = int(per_tree.max()) if len(roots) else 1
    tr_col, col_ptr, col_term, tr_val, nd_off, nd_max = _columns(
        leaf_units, nd_var, tree_roots, tree_sizes, order
    )
    nd_max = K.subtree_max(nd_left, nd_right, nd_off, nd_max)
    problem.trees = (
        roots, nd_var, nd_rank, nd_left, nd_right, nd_max,
        lf_start, lf_end, lf_var, lf_lo, lf_hi, vs_ptr, vs_rank, vs_tree,
        tr_col, col_ptr, col_term, tr_val,
    )  # fmt: skip
    return q, max_leaves, max_depth


def _columns(leaf_units, nd_var, tree_roots, tree_sizes, order):
    """Each tree's columns: its distinct vectors of leaf contributions to one term, each with the
    terms that read it, and its nodes' values in them only.

    Returns ``tr_col`` (int64, per search tree in ``order``, plus one: tree ``t``'s columns are
    ``tr_col[t]:tr_col[t + 1]``), ``col_ptr`` (int64, per column, plus one) and ``col_term``
    (int32: column ``c`` adds to terms ``col_term[col_ptr[c]:col_ptr[c + 1]]``), ``tr_val``
    (int64, per search tree: where its root's values start in ``nd_max``), ``nd_off`` (int64, per
    node, plus one; for :func:`kernels.subtree_max`, not kept) and ``nd_max`` (int64, flat: node
    ``n``'s values in its tree's columns at ``nd_off[n]:nd_off[n + 1]``, which is
    ``tr_val[t] + (n - root) * n_cols`` on: a tree's nodes are consecutive; leaves' set, splits'
    0).

    Why: a tree of one variant of a family contributes to that variant's term alone, and a tree
    that several variants share unchanged (same shape, same leaves) gives each the same vector.
    The kernels' cost per tree then follows its distinct columns, not every term of the query:
    for 50 variants of 100 trees at 0.1 % deletion, 2,394 columns instead of 1,784 trees times
    50 terms."""
    n_terms = leaf_units.shape[1]
    n_trees = len(tree_roots)
    tree_of = np.repeat(np.arange(n_trees), tree_sizes)
    leaf = nd_var < 0
    used = np.zeros((n_trees, n_terms), dtype=bool)
    if len(nd_var):
        np.logical_or.at(used, tree_of[leaf], leaf_units[leaf] != 0)
    kept = used.copy()  # the first term of each distinct column
    readers = {}  # tree -> terms reading each kept column (trees of several columns)
    for i in np.nonzero(used.sum(axis=1) > 1)[0]:
        start = int(tree_roots[i])
        block = leaf_units[start : start + int(tree_sizes[i])][leaf[start : start + tree_sizes[i]]]
        first: dict[bytes, int] = {}
        groups: dict[int, list[int]] = {}
        for k in np.nonzero(used[i])[0]:
            k0 = first.setdefault(block[:, k].tobytes(), int(k))
            groups.setdefault(k0, []).append(int(k))
            kept[i, k] = k0 == k
        readers[i] = [groups[k] for k in sorted(groups)]
    n_cols = kept.sum(axis=1)
    nd_off = np.zeros(len(nd_var) + 1, dtype=np.int64)
    np.cumsum(n_cols[tree_of], out=nd_off[1:])
    nd_max = np.ascontiguousarray(leaf_units[kept[tree_of]], dtype=np.int64)
    tr_col = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(n_cols[order], out=tr_col[1:])
    if readers:
        terms = [
            readers[i] if i in readers else [[int(k)] for k in np.nonzero(kept[i])[0]]
            for i in order
        ]
        flat = [group for tree in terms for group in tree]
        col_ptr = np.zeros(len(flat) + 1, dtype=np.int64)
        np.cumsum([len(group) for group in flat], out=col_ptr[1:])
        col_term = np.array([k for group in flat for k in group], dtype=np.int32)
    else:  # each column read by one term, as always for one term: no loop over the trees
        col_term = np.nonzero(kept[order])[1].astype(np.int32)
        col_ptr = np.arange(len(col_term) + 1, dtype=np.int64)
    tr_val = np.ascontiguousarray(nd_off[tree_roots[order]], dtype=np.int64)
    return tr_col, col_ptr, col_term, tr_val, nd_off, nd_max


def splits(query, copies, var, integral):
    """Variable and threshold of every split node of every copy; and each copy's node rows."""
    split_var, split_value, rows = [], [], {}
    offset = 0
    for model_name, instance in copies:
        model = query.models[model_name]
        i = query.instances.index(instance)
        inner = model.feature >= 0
        v = np.where(inner, var[i, np.maximum(model.feature, 0)], -1)
        t = model.threshold.astype(np.float64)
        t = np.where(inner & integral[np.maximum(v, 0)], np.ceil(t), t)
        split_var.append(v[inner])
        split_value.append(t[inner])
        rows[model_name, instance] = (offset, v)
        offset += model.n_nodes
    if not split_var:
        return np.zeros(0, np.int64), np.zeros(0), rows
    return np.concatenate(split_var).astype(np.int64), np.concatenate(split_value), rows


def compact(query, copies, rows, split_rank, var, root, n_vars):
    """Compact every copy (``copies``' keys: (model, instance)) by the static box ``root``; merge
    the two copies of a tree read on two instances with tied features into one product tree.
    Returns node arrays, each output node's source nodes in the copies (``src_a``, and ``src_b``
    for products, -1 elsewhere), and each output tree's root and size. Reads no leaf value."""
    parts_var, parts_rank, parts_left, parts_right = [], [], [], []
    offset = 0
    cursor = 0
    for key in copies:
        model = query.models[key[0]]
        _, v = rows[key]
        inner = model.feature >= 0
        r = np.zeros(model.n_nodes, dtype=np.int32)
        n_inner = int(inner.sum())
        r[inner] = split_rank[cursor : cursor + n_inner]
        cursor += n_inner
        parts_var.append(v.astype(np.int32))
        parts_rank.append(r)
        parts_left.append(np.where(inner, model.left + offset, -1).astype(np.int32))
        parts_right.append(np.where(inner, model.right + offset, -1).astype(np.int32))
        offset += model.n_nodes
    if not copies:
        empty = np.zeros(0, np.int32)
        return empty, empty, empty, empty, empty, empty, np.zeros(0, np.int64), empty
    nd_var = np.concatenate(parts_var)
    nd_rank = np.concatenate(parts_rank)
    nd_left = np.concatenate(parts_left)
    nd_right = np.concatenate(parts_right)

    job_a, job_b, job_cap, job_size = _jobs(query, copies, var)
    root_lo = np.ascontiguousarray(root[:n_vars])
    root_hi = np.ascontiguousarray(root[n_vars:])
    out = K.compact_trees(
        nd_var, nd_rank, nd_left, nd_right, job_a, job_b, root_lo, root_hi, job_cap,
        int(job_cap.sum()),
    )  # fmt: skip
    o_var, o_rank, o_left, o_right, src_a, src_b, job_root, n_out = out
    failed = np.nonzero(job_root < 0)[0]
    if len(failed):  # products too large: search the two copies separately
        retry_a = np.concatenate([job_a[failed], job_b[failed]])
        sizes_a = np.concatenate([job_size[failed], job_size[failed]])
        again = K.compact_trees(
            nd_var, nd_rank, nd_left, nd_right, retry_a, np.full(len(retry_a), -1, np.int32),
            root_lo, root_hi, sizes_a, int(sizes_a.sum()),
        )  # fmt: skip
        a_var, a_rank, a_left, a_right, a_src_a, a_src_b, a_root, a_n = again

        def joined(first, second, shift=0):
            second = second[:a_n]
            if shift:
                second = np.where(second >= 0, second + shift, -1)
            return np.concatenate([first[:n_out], second])

        o_var, o_rank = joined(o_var, a_var), joined(o_rank, a_rank)
        o_left, o_right = joined(o_left, a_left, n_out), joined(o_right, a_right, n_out)
        src_a, src_b = joined(src_a, a_src_a), joined(src_b, a_src_b)
        job_root = np.concatenate([job_root[job_root >= 0], a_root + n_out])
        n_out += a_n
    else:
        o_var, o_rank, o_left, o_right = (a[:n_out] for a in (o_var, o_rank, o_left, o_right))
        src_a, src_b = src_a[:n_out], src_b[:n_out]
    tree_roots = np.sort(job_root.astype(np.int64))
    tree_sizes = np.diff(np.append(tree_roots, n_out))
    return (
        np.ascontiguousarray(o_var, dtype=np.int32),
        np.ascontiguousarray(o_rank, dtype=np.int32),
        np.ascontiguousarray(o_left, dtype=np.int32),
        np.ascontiguousarray(o_right, dtype=np.int32),
        src_a,
        src_b,
        tree_roots,
        tree_sizes,
    )


def pair_trees(compacted, copies, root, n_vars: int, always: bool) -> tuple:
    """``compacted`` (:func:`compact`'s arrays) with pairs of trees merged into product trees
    (the second grafted under each leaf of the first, cut to its box), which bound the sum of
    the two by the best pair of leaves that can be reached together instead of by their two
    best leaves (Chen et al. 2019's merging). The pairs are a greedy matching on what that saves
    at the root box (``K.pair_gains`` on the leaves' contributions to the one term of
    ``copies``, the maximised one); a product over :data:`PAIR_NODES` nodes is left as two
    trees. Only for copies without products (one instance), and, unless ``always``, trees of
    depth :data:`PAIR_MIN_DEPTH` or more, at most :data:`PAIR_MAX_TREES` of them; otherwise
    ``compacted`` is returned unchanged. The merged trees compute the same function: leaf
    sources point at the original leaves."""
    nd_var, nd_rank, nd_left, nd_right, src_a, src_b, tree_roots, tree_sizes = compacted
    n = len(tree_roots)
    leaf = nd_var < 0
    if n < 2 or np.any(src_b[leaf] >= 0):
        return compacted
    max_depth = int(K.node_depth(nd_left, nd_right).max())
    if not always and (max_depth < PAIR_MIN_DEPTH or n > PAIR_MAX_TREES):
        return compacted
    value = _leaf_values(nd_var, src_a, src_b, copies, 1)[:, 0]
    tree_of = np.repeat(np.arange(n), tree_sizes)
    n_leaves = np.bincount(tree_of[leaf], minlength=n)
    leaves = np.nonzero(leaf)[0]
    by_value = np.lexsort((-value[leaves], tree_of[leaves]))
    t_leaf = np.ascontiguousarray(leaves[by_value], dtype=np.int32)
    t_ptr = np.concatenate([[0], np.cumsum(n_leaves)]).astype(np.int64)
    roots = np.ascontiguousarray(tree_roots, dtype=np.int32)
    boxes = K.leaf_boxes(roots, nd_var, nd_rank, nd_left, nd_right, max_depth)
    gains = K.pair_gains(t_ptr, t_leaf, np.ascontiguousarray(value, dtype=np.float64), *boxes,
                         n_vars)  # fmt: skip
    first, second = np.nonzero(gains > 0)
    used = np.zeros(n, dtype=bool)
    pairs = []
    for i in np.argsort(-gains[first, second], kind="stable"):
        a, b = first[i], second[i]
        if not (used[a] or used[b]):
            used[a] = used[b] = True
            pairs.append((a, b))
    if not pairs:
        return compacted
    root_lo = np.ascontiguousarray(root[:n_vars])
    root_hi = np.ascontiguousarray(root[n_vars:])

    def run(job_a, job_b, job_cap):
        job_cap = np.array(job_cap, dtype=np.int64)
        return K.compact_trees(
            nd_var, nd_rank, nd_left, nd_right, np.array(job_a, dtype=np.int32),
            np.array(job_b, dtype=np.int32), root_lo, root_hi, job_cap, int(job_cap.sum()),
        )  # fmt: skip

    firsts, seconds = (roots[[pair[i] for pair in pairs]] for i in (0, 1))
    trial = run(firsts, seconds, [PAIR_NODES] * len(pairs))
    kept = [pair for pair, r in zip(pairs, trial[6], strict=True) if r >= 0]
    if not kept:
        return compacted
    merged = np.zeros(n, dtype=bool)
    for a, b in kept:
        merged[a] = merged[b] = True
    alone = np.nonzero(~merged)[0]
    job_a = np.concatenate([roots[[a for a, _ in kept]], roots[alone]])
    job_b = np.concatenate([roots[[b for _, b in kept]], np.full(len(alone), -1, np.int32)])
    job_cap = [PAIR_NODES] * len(kept) + tree_sizes[alone].tolist()
    o_var, o_rank, o_left, o_right, o_src_a, o_src_b, job_root, n_out = run(job_a, job_b, job_cap)
    o_src_a, o_src_b = o_src_a[:n_out], o_src_b[:n_out]
    new_roots = np.sort(job_root.astype(np.int64))
    return (
        np.ascontiguousarray(o_var[:n_out]),
        np.ascontiguousarray(o_rank[:n_out]),
        np.ascontiguousarray(o_left[:n_out]),
        np.ascontiguousarray(o_right[:n_out]),
        np.where(o_src_a >= 0, src_a[np.maximum(o_src_a, 0)], -1),
        np.where(o_src_b >= 0, src_a[np.maximum(o_src_b, 0)], -1),
        new_roots,
        np.diff(np.append(new_roots, n_out)),
    )


def _leaf_values(nd_var, src_a, src_b, copies, n_terms):
    """float64 ``(n_nodes, K)``: each output leaf's contributions, from its source leaves."""
    leaf_values = np.zeros((len(nd_var), n_terms))
    if not copies:
        return leaf_values
    vals = np.concatenate(list(copies.values()))
    leaf = nd_var < 0
    leaf_values[leaf] = vals[src_a[leaf]]
    with_b = leaf & (src_b >= 0)
    leaf_values[with_b] += vals[src_b[with_b]]
    return leaf_values


def _jobs(query, copies, var):
    """The compaction jobs: ``(job_a, job_b, job_cap, job_size)``, one per output tree."""
    # a product for each tree read on two tied instances, else one job per copy
    offsets = {}
    o = 0
    for key in copies:
        offsets[key] = o
        o += query.models[key[0]].n_nodes
    job_a, job_b, job_cap, job_size = [], [], [], []
    paired = set()
    by_model: dict[str, list[str]] = {}
    for model_name, instance in copies:
        by_model.setdefault(model_name, []).append(instance)
    for model_name, instances in by_model.items():
        model = query.models[model_name]
        sizes = np.diff(model.tree_offsets)
        if len(instances) == 2:
            i1, i2 = (query.instances.index(name) for name in instances)
            if np.any(var[i1] == var[i2]):
                base_a = offsets[model_name, instances[0]]
                base_b = offsets[model_name, instances[1]]
                for t in range(model.n_trees):
                    start = int(model.tree_offsets[t])
                    job_a.append(base_a + start)
                    job_b.append(base_b + start)
                    job_cap.append(max(PRODUCT_GROWTH * 2 * int(sizes[t]), 64))
                    job_size.append(int(sizes[t]))
                paired.add(model_name)
        if model_name not in paired:
            for instance in instances:
                base = offsets[model_name, instance]
                job_a.extend(base + model.tree_offsets[:-1])
                job_b.extend([-1] * model.n_trees)
                job_cap.extend(sizes.tolist())
                job_size.extend(sizes.tolist())
    job_a = np.array(job_a, dtype=np.int32)
    job_b = np.array(job_b, dtype=np.int32)
    job_cap = np.array(job_cap, dtype=np.int64)
    job_size = np.array(job_size, dtype=np.int64)
    return job_a, job_b, job_cap, job_size


def _scale(leaf_values, nd_var, tree_roots, tree_sizes) -> tuple[int, bool]:
    """The unit exponent ``q`` and whether units are exact (see the module docstring)."""
    leaf = nd_var < 0
    values = leaf_values[leaf]
    if values.size == 0 or not np.any(values):
        return 0, True
    # the sum over trees of the largest magnitude, per term
    tree_of = np.repeat(np.arange(len(tree_roots)), tree_sizes)[leaf]
    largest = np.zeros((len(tree_roots), values.shape[1]))
    np.maximum.at(largest, tree_of, np.abs(values))
    total = float(largest.sum(axis=0).max())
    nonzero = values[values != 0]
    mantissa, exponent = np.frexp(nonzero)
    integer = np.ldexp(np.abs(mantissa), 53).astype(np.int64)
    trailing = np.log2(integer & -integer).astype(np.int64)
    q = int(np.max(53 - exponent - trailing))
    if math.ldexp(total, q) < UNIT_LIMIT:
        return q, True
    return math.floor(60 - math.log2(total)), False


def _order(nd_val, nd_var, tree_roots, tree_sizes, keep) -> np.ndarray:
    """Trees to search, largest spread of the leading term (column 0) first."""
    if len(keep) == 0:
        return keep
    leaf = nd_var < 0
    tree_of = np.repeat(np.arange(len(tree_roots)), tree_sizes)
    hi = np.full(len(tree_roots), -(2**62), dtype=np.int64)
    lo = np.full(len(tree_roots), 2**62, dtype=np.int64)
    if nd_val.shape[1]:
        np.maximum.at(hi, tree_of[leaf], nd_val[leaf, 0])
        np.minimum.at(lo, tree_of[leaf], nd_val[leaf, 0])
    spread = (hi - lo)[keep]
    return keep[np.argsort(-spread, kind="stable")]
