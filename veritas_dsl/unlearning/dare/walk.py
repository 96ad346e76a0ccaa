"""One row's deletion walked down one tree in one compiled call, as far as the counts decide
(:meth:`~.tree.Grower.forget` takes over where they do not).

Entering a Numba call costs about as much as following one node's cache, so the walk reads
the tree from flat arrays: ``nodes`` (one row per node, columns below, built by
:meth:`~.tree.Tree.compact`), ``thresholds``, the leaves' rows ``held`` (each leaf's increasing
ids from its ``ROWS`` offset, ``COUNT`` of them) and the caches' pools (:mod:`.pool`).
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.jit import kernel
from veritas_dsl.unlearning.dare.cache import DECIDED, follow_deletion

#: Columns of a tree's node table: :class:`~.tree.Tree`'s lists of these names (``rows``: the
#: leaf's offset in ``held``).
FIELDS = ("kind", "feature", "left", "right", "count", "positives", "seed", "end", "rows")
KIND, FEATURE, LEFT, RIGHT, COUNT, POSITIVES, SEED, END, ROWS = range(len(FIELDS))
#: Where :func:`walk` stopped: the row left its leaf (done); a node must be updated from its
#: rows (it may become a leaf, or a random node lose a side); a greedy node's choice changed
#: to the one returned (its cache followed the deletion); a greedy node must choose again from
#: its rows (no cache, or the cache cannot tell).
AT_LEAF, FROM_ROWS, CHANGED, CHOOSE_AGAIN = range(4)
_LEAF, _GREEDY, _RANDOM = 0, 1, 2  # tree.LEAF, GREEDY, RANDOM (tree imports this module)


@kernel
def walk(
    nodes,
    thresholds,
    held,
    pool,
    row,
    label,
    r,
    node,
    depth,
    chosen_here,
    settings,
    presorted,
    leaf_of,
    path,
):
    """Delete row ``r`` (values ``row``, label ``label``) from the tree below ``node`` at
    ``depth``, as :meth:`~.tree.Grower.forget` does node by node: each node passed loses the
    row's counts and is appended to ``path``; at the leaf the row leaves ``held`` and
    ``leaf_of``. ``chosen_here``: ``node`` is a greedy node whose choice the caller already
    made (unchanged). ``pool`` is ``(slots, attrs, bound, cand, cand_values)``, ``settings``
    ``(k, min_samples_leaf, max_depth, criterion)``. Returns ``(status, node, depth, nodes passed,
    attribute, threshold)``, the last two a changed choice."""
    slots, attrs, bound, cand, cand_values = pool
    k, m, max_depth, criterion = settings
    passed = 0
    while True:
        n, positives = nodes[node, COUNT] - 1, nodes[node, POSITIVES] - label
        kind = nodes[node, KIND]
        if kind == _LEAF:
            _leave(held, nodes[node, ROWS], nodes[node, COUNT], r)
            nodes[node, COUNT], nodes[node, POSITIVES] = n, positives
            leaf_of[r] = -1
            path[passed] = node
            return AT_LEAF, node, depth, passed + 1, -1, 0.0
        if depth >= max_depth or positives == 0 or positives == n or n < 2 * m:
            return FROM_ROWS, node, depth, passed, -1, 0.0
        if kind == _GREEDY and not chosen_here:
            if node >= slots.shape[0] or slots[node, 1] < 0:
                return CHOOSE_AGAIN, node, depth, passed, -1, 0.0
            a0, na, c0, nc = slots[node, 0], slots[node, 1], slots[node, 2], slots[node, 3]
            end = nodes[node, END]
            subtree = (held, nodes[node:end, KIND], nodes[node:end, ROWS], nodes[node:end, COUNT])
            status, a, t = follow_deletion(
                attrs[a0 : a0 + na], bound[a0 : a0 + na], cand[c0 : c0 + nc],
                cand_values[c0 : c0 + nc], row, label, n, positives, k, m, nodes[node, SEED],
                presorted, leaf_of, node, end, subtree, r, criterion,
            )  # fmt: skip
            if status != DECIDED:
                return CHOOSE_AGAIN, node, depth, passed, -1, 0.0
            if a != nodes[node, FEATURE] or t != thresholds[node]:
                return CHANGED, node, depth, passed, a, t
        chosen_here = False
        child, other = nodes[node, LEFT], nodes[node, RIGHT]
        if not np.float64(row[nodes[node, FEATURE]]) <= thresholds[node]:
            child, other = other, child
        if kind == _RANDOM and min(nodes[child, COUNT] - 1, nodes[other, COUNT]) < m:
            return FROM_ROWS, node, depth, passed, -1, 0.0
        nodes[node, COUNT], nodes[node, POSITIVES] = n, positives
        path[passed] = node
        passed += 1
        node, depth = child, depth + 1


@kernel
def _leave(held, start, count, r):
    """Remove ``r`` from the increasing ids ``held[start:start+count]``, shifting the rest."""
    i = start + np.searchsorted(held[start : start + count], r)
    for j in range(i, start + count - 1):
        held[j] = held[j + 1]
