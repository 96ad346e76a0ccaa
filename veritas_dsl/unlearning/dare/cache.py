"""A greedy node's cached choice, and how it follows the deletion of one row without reading the
node's rows (Brophy & Lowd's idea 1 and 2, adapted to keyed sampling).

The cache (built by :func:`~.kernels.best_split`) holds the attributes the node took, the
largest key it took per attribute (0: it took every valid threshold), and per sampled threshold
its left counts and the counts at the two adjacent values around it; an attribute's valid
thresholds are kept in increasing key order, so its sample is its first ``k`` valid ones. After
deleting row ``r`` the sampled set is unchanged, and the choice is the argmax of the updated
counts, unless

- a sampled threshold became invalid: one of its two values vanished from the node, both became
  pure with one label, or a side fell under ``min_samples_leaf`` (the counts tell);
- ``r``'s value vanished from the node, so the thresholds on either side of it merge into one
  new threshold, whose key may be among the ``k`` smallest. When ``r``'s value is one of the
  values around a sampled threshold the counts tell whether it vanished (and if so that
  threshold is invalid); otherwise the node's neighbouring values are found by walking
  outward from ``r`` in the forest-wide presorted order, testing membership with ``leaf_of``
  (nodes are in preorder, so node ``j`` covers the leaves ``j <= leaf < end[j]``).

An attribute with no valid threshold gains none by a deletion (a merged threshold is valid only
if one of the two it replaces was), so the attributes taken change only when a taken one loses
every sampled threshold, which the first rule catches. In every doubtful case the caller
re-chooses from the rows: the answer is always the one :func:`~.kernels.best_split` gives.
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.jit import kernel
from veritas_dsl.unlearning.dare.kernels import ALL, better, key_base, keyed, score, threshold_key

_LEAF = 0  # tree.LEAF (tree imports this module through walk)

#: What :func:`follow_deletion` answers: the counts decide (the split is the one returned), or
#: the node must choose again from its rows.
DECIDED, CHOOSE_AGAIN = 0, 1


@kernel
def _tie(values, labels, order, leaf_of, first, end, start, step, v):
    """Rows and positives of the node ``[first, end)`` at value ``v``, scanning the presorted
    positions from ``start`` by ``step`` while the value is ``v``."""
    count = positives = 0
    i = start
    while 0 <= i < order.shape[0] and values[i] == v:
        if first <= leaf_of[order[i]] < end:
            count += 1
            positives += labels[i]
        i += step
    return count, positives


@kernel
def _neighbours(values, labels, order, position, leaf_of, first, end, r, look_below, look_above):
    """For the node ``[first, end)`` without row ``r`` (value ``x``): whether ``x`` vanished,
    and the nearest values below and above ``x`` there with their rows and positives, as
    ``(found, value, rows, positives)`` each (``found`` False at either end). ``look_below``
    (``look_above``) False: the caller knows the node has no row below (above) ``x``, where a
    walk would run to the end of every row."""
    here = position[r]
    x = values[here]
    i = here - 1
    while i >= 0 and values[i] == x:
        if first <= leaf_of[order[i]] < end:
            return False, (False, 0.0, 0, 0), (False, 0.0, 0, 0)
        i -= 1
    j = here + 1
    while j < order.shape[0] and values[j] == x:
        if first <= leaf_of[order[j]] < end:
            return False, (False, 0.0, 0, 0), (False, 0.0, 0, 0)
        j += 1
    if not look_below:
        i = -1
    if not look_above:
        j = order.shape[0]
    while i >= 0 and not (first <= leaf_of[order[i]] < end):
        i -= 1
    while j < order.shape[0] and not (first <= leaf_of[order[j]] < end):
        j += 1
    below = (False, 0.0, 0, 0)
    if i >= 0:
        n, pos = _tie(values, labels, order, leaf_of, first, end, i, -1, values[i])
        below = (True, np.float64(values[i]), n, pos)
    above = (False, 0.0, 0, 0)
    if j < order.shape[0]:
        n, pos = _tie(values, labels, order, leaf_of, first, end, j, 1, values[j])
        above = (True, np.float64(values[j]), n, pos)
    return True, below, above


@kernel
def _make_room(cand, cand_values, bound, i, a, seed, key):
    """A slot for a new valid threshold of attribute ``a`` (the ``i``-th taken) of key ``key``,
    at most ``bound[i]``: a dead one, or else that of the largest key, which leaves the cache
    (the bound drops to the largest key left, so the cache still holds every valid threshold
    of key at most its bound); -1 when the new threshold has that largest key itself."""
    worst, worst_key = -1, np.uint64(0)
    for c in range(cand.shape[0]):
        if cand[c, 0] != a:
            continue
        if cand[c, 7] == 0:
            return c
        other = threshold_key(seed, a, (cand_values[c, 0] + cand_values[c, 1]) / 2.0)
        if worst < 0 or other > worst_key:
            worst, worst_key = c, other
    if key > worst_key:
        bound[i] = worst_key
        return -1
    cand[worst, 7] = 0
    bound[i] = key
    for c in range(cand.shape[0]):
        if cand[c, 0] == a and cand[c, 7] == 1:
            other = threshold_key(seed, a, (cand_values[c, 0] + cand_values[c, 1]) / 2.0)
            bound[i] = max(bound[i], other)
    return worst


@kernel
def _rows_up_to(column, y, values, labels, order, leaf_of, first, end, subtree, r, near, v):
    """Rows and positives of the node ``[first, end)`` without ``r`` whose value is at most
    ``v``, given those at most ``near``'s value (``(rows, positives, value)``, a value of the
    node): by counting the rows between the two in the presorted order of every row, or the
    node's own rows (``subtree``: :func:`follow_deletion`) when there are fewer of those.
    ``column`` is the attribute's values by row id."""
    count, positives, at = near
    start = np.searchsorted(values, at, side="right")
    stop = np.searchsorted(values, v, side="right")
    held, kinds, offsets, counts = subtree
    if abs(stop - start) > counts[0]:
        count = positives = 0
        for j in range(kinds.shape[0]):
            if kinds[j] == _LEAF:
                for q in held[offsets[j] : offsets[j] + counts[j]]:
                    if q != r and column[q] <= v:
                        count += 1
                        positives += y[q]
        return count, positives
    sign = 1
    if stop < start:
        start, stop, sign = stop, start, -1
    for j in range(start, stop):
        q = order[j]
        if q != r and first <= leaf_of[q] < end:
            count += sign
            positives += sign * labels[j]
    return count, positives


@kernel
def _nearest(cand, cand_values, a, v):
    """``(left rows, left positives, low value)`` of the valid cached threshold of ``a`` whose
    low value is nearest ``v``."""
    near, gap = -1, np.inf
    for c in range(cand.shape[0]):
        if cand[c, 0] == a and cand[c, 7] == 1 and abs(cand_values[c, 0] - v) < gap:
            near, gap = c, abs(cand_values[c, 0] - v)
    return cand[near, 1], cand[near, 2], cand_values[near, 0]


@kernel
def _valid(cand, c, n, min_samples_leaf):
    low_n, low_pos, high_n, high_pos = cand[c, 3], cand[c, 4], cand[c, 5], cand[c, 6]
    pure0 = low_pos == 0 and high_pos == 0
    pure1 = low_pos == low_n and high_pos == high_n
    sides = cand[c, 1] >= min_samples_leaf and n - cand[c, 1] >= min_samples_leaf
    return low_n > 0 and high_n > 0 and not (pure0 or pure1) and sides


@kernel
def _best_of(
    cand, cand_values, a, rows, k, n, positives, min_samples_leaf, complete, criterion, *best
):
    """Mark the cached thresholds of ``a`` (in the rows ``rows`` of ``cand``, the valid ones in
    increasing key order) that are no longer valid; the first ``k`` valid ones are the node's
    sample of ``a``: fold them into ``best`` (attribute, threshold, :func:`~.kernels.gini`) as
    :func:`~.kernels.best_split` does. ``ok`` is False when the cache cannot tell the sample
    (fewer than ``k`` valid, and not ``complete``) or ``a`` has no valid threshold left (the
    node takes another attribute)."""
    best_a, best_t, best_g = best
    valid = 0
    for c in rows:
        if cand[c, 7] == 1:
            if _valid(cand, c, n, min_samples_leaf):
                valid += 1
            else:
                cand[c, 7] = 0
    if valid == 0 or (valid < k and not complete):
        return best_a, best_t, best_g, False
    sampled = 0
    for c in rows:
        if cand[c, 7] == 0:
            continue
        if 0 < k <= sampled:
            break
        sampled += 1
        t = (cand_values[c, 0] + cand_values[c, 1]) / 2.0
        g = score(criterion, cand[c, 1], cand[c, 2], n, positives)
        if better(a, t, g, best_a, best_t, best_g):
            best_a, best_t, best_g = a, t, g
    return best_a, best_t, best_g, True


@kernel
def _place(cand, cand_values, base, start, stop, c):
    """Move row ``c`` (a new threshold) among its attribute's rows ``[start, stop)`` so that the
    valid ones stay in increasing key order (the others may lie anywhere): sorting them again
    at each deletion cost a third of a node's time."""
    key = keyed(base, (cand_values[c, 0] + cand_values[c, 1]) / 2.0)
    for step in (-1, 1):
        while start <= c + step < stop:
            other = c + step
            if cand[other, 7] == 1:
                other_key = keyed(base, (cand_values[other, 0] + cand_values[other, 1]) / 2.0)
                if (other_key < key) == (step < 0):
                    break
            _swap(cand, c, other)
            _swap(cand_values, c, other)
            c = other


@kernel
def _swap(array, i, j):
    for col in range(array.shape[1]):
        array[i, col], array[j, col] = array[j, col], array[i, col]


@kernel
def _block_end(cand, a, start):
    """Where the rows of attribute ``a`` from ``start`` end: :func:`~.kernels.best_split` writes
    each taken attribute's rows together, in the order taken, and a row never changes
    attribute."""
    stop = start
    while stop < cand.shape[0] and cand[stop, 0] == a:
        stop += 1
    return stop


@kernel
def follow_deletion(
    attrs,
    bound,
    cand,
    cand_values,
    row,
    label,
    n,
    positives,
    k,
    min_samples_leaf,
    seed,
    presorted,
    leaf_of,
    first,
    end,
    subtree,
    r,
    criterion,
):
    """Update the cache of the greedy node ``[first, end)`` for the deletion of row ``r``
    (attribute values ``row``, label ``label``; ``n`` and ``positives`` are the node's counts
    without it) and answer ``(DECIDED, attribute, threshold)`` with the node's choice, or
    ``(CHOOSE_AGAIN, -1, 0.0)``; ``presorted`` is ``(values, labels, order, position, columns,
    y)``: those of :class:`~.splits.Presorted` and the labels by row id. ``subtree`` is
    ``(held, kinds, offsets, counts)``: per node of ``[first, end)`` its kind, and a leaf's
    (kind 0) rows ``held[offset : offset + count]``, ``r`` still among them. The cache is only
    meaningful after DECIDED."""
    values, labels, order, position, columns, y = presorted
    best_a, best_t, best_g = -1, 0.0, (0, 0, 1)
    stop = 0
    for i in range(attrs.shape[0]):
        a = attrs[i]
        start, stop = stop, _block_end(cand, a, stop)
        x = np.float64(row[a])
        below = above = -1  # cached thresholds (., x) and (x, .)
        for c in range(start, stop):
            if cand[c, 7] == 0:
                continue
            low, high = cand_values[c, 0], cand_values[c, 1]
            if x <= (low + high) / 2.0:
                cand[c, 1] -= 1
                cand[c, 2] -= label
            if x == low:
                cand[c, 3] -= 1
                cand[c, 4] -= label
                above = c
            elif x == high:
                cand[c, 5] -= 1
                cand[c, 6] -= label
                below = c
        if below >= 0 or above >= 0:
            vanished = (cand[below, 5] if below >= 0 else cand[above, 3]) == 0
        else:  # no cached threshold next to x: a merged one matters only if its key is small
            vanished = bound[i] != ALL
        merged = -1
        if vanished:
            known = below >= 0 and above >= 0
            walked = (False, (False, 0.0, 0, 0), (False, 0.0, 0, 0))
            if not known:  # a cached neighbour's counts tell whether rows lie beyond x
                look_below = above < 0 or cand[above, 1] - cand[above, 3] > 0
                look_above = below < 0 or n - cand[below, 1] - cand[below, 5] > 0
                walked = _neighbours(
                    values[a], labels[a], order[a], position[a], leaf_of, first, end, r,
                    look_below, look_above,
                )  # fmt: skip
            vanished, low_side, high_side = walked
            if known:
                vanished = True
                low_side = (True, cand_values[below, 0], cand[below, 3], cand[below, 4])
                high_side = (True, cand_values[above, 1], cand[above, 5], cand[above, 6])
            elif below >= 0:
                low_side = (True, cand_values[below, 0], cand[below, 3], cand[below, 4])
            elif above >= 0:
                high_side = (True, cand_values[above, 1], cand[above, 5], cand[above, 6])
            if vanished and low_side[0] and high_side[0]:
                t = (low_side[1] + high_side[1]) / 2.0
                key = threshold_key(seed, a, t)
                if key <= bound[i]:
                    if below >= 0 or above >= 0:
                        # Either neighbour's left counts are now those of rows <= the value
                        # below x: the merged threshold's.
                        merged = below if below >= 0 else above
                    else:
                        merged = _make_room(cand, cand_values, bound, i, a, seed, key)
                        if merged >= 0:
                            left = _rows_up_to(
                                columns[a], y, values[a], labels[a], order[a], leaf_of, first,
                                end, subtree, r, _nearest(cand, cand_values, a, low_side[1]),
                                low_side[1],
                            )  # fmt: skip
                            cand[merged, 1], cand[merged, 2] = left
                            cand[merged, 0], cand[merged, 7] = a, 1
                    if merged >= 0:
                        cand[merged, 3], cand[merged, 4] = low_side[2], low_side[3]
                        cand[merged, 5], cand[merged, 6] = high_side[2], high_side[3]
                        cand_values[merged, 0] = low_side[1]
                        cand_values[merged, 1] = high_side[1]
                        _place(cand, cand_values, key_base(seed, a), start, stop, merged)
        best_a, best_t, best_g, ok = _best_of(
            cand, cand_values, a, range(start, stop), k, n, positives, min_samples_leaf,
            bound[i] == ALL, criterion,
            best_a, best_t, best_g,
        )  # fmt: skip
        if not ok:
            return CHOOSE_AGAIN, -1, 0.0
    return DECIDED, best_a, best_t
