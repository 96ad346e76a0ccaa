"""The Numba kernel of a greedy node's choice: sorted columns, valid thresholds, keyed sampling and
Gini, in one compiled call per node (in numpy, the calls' overhead cost more than the work).
Compiled once and cached (:mod:`veritas_dsl.jit`).
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.jit import kernel

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@kernel
def mix(z):
    """splitmix64's finaliser: a bijection of uint64 that scatters nearby inputs."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@kernel
def attribute_keys(seed, n_attributes):
    """One key per attribute; a node takes attributes in increasing key order."""
    keys = np.empty(n_attributes, dtype=np.uint64)
    for a in range(n_attributes):
        keys[a] = mix(np.uint64(seed) ^ mix(np.uint64(a + 1) * _GOLDEN))
    return keys


@kernel
def threshold_keys(seed, attribute, thresholds):
    """A key per threshold, a function of its value (not its rank): deleting rows elsewhere
    leaves the keys of the surviving thresholds as they were."""
    base = mix(np.uint64(seed) ^ mix(np.uint64(attribute + 1) * _GOLDEN) ^ _MIX1)
    bits = thresholds.view(np.uint64)
    keys = np.empty(thresholds.shape[0], dtype=np.uint64)
    for c in range(thresholds.shape[0]):
        keys[c] = mix(bits[c] * _GOLDEN ^ base)
    return keys


@kernel
def _sorted_column(columns, y, rows, attribute, order, values, labels, member, xs, ys):
    """Fill ``xs``/``ys`` with the attribute's values (float64) and labels in increasing order."""
    if member.shape[0] > 0:  # pick the node's rows out of every row, presorted
        i = 0
        for j in range(order.shape[1]):
            if member[order[attribute, j]]:
                xs[i] = values[attribute, j]
                ys[i] = labels[attribute, j]
                i += 1
        return
    column = columns[attribute]
    unsorted = np.empty(rows.shape[0], dtype=np.float64)
    for i in range(rows.shape[0]):
        unsorted[i] = column[rows[i]]
    ranks = np.argsort(unsorted)
    for i in range(rows.shape[0]):
        xs[i] = unsorted[ranks[i]]
        ys[i] = y[rows[ranks[i]]]


@kernel
def _candidates(xs, ys, min_samples_leaf, thresholds, left_n, left_pos):
    """Write the valid thresholds (midpoints of adjacent distinct values not both pure with one
    label, leaving ``min_samples_leaf`` rows each side) with their left counts; return how many."""
    m = xs.shape[0]
    count = 0
    seen = 0  # rows before the current value
    seen_pos = 0
    i = 0
    prev_n = prev_pos = 0
    prev_value = 0.0
    while i < m:
        j, pos = i, 0
        while j < m and xs[j] == xs[i]:
            pos += ys[j]
            j += 1
        n_here = j - i
        if i > 0:
            both0 = prev_pos == 0 and pos == 0
            both1 = prev_pos == prev_n and pos == n_here
            if not (both0 or both1) and seen >= min_samples_leaf and m - seen >= min_samples_leaf:
                thresholds[count] = (prev_value + xs[i]) / 2.0
                left_n[count] = seen
                left_pos[count] = seen_pos
                count += 1
        prev_value, prev_n, prev_pos = xs[i], n_here, pos
        seen += n_here
        seen_pos += pos
        i = j
    return count


@kernel
def _smallest(keys, k):
    """Positions of the ``k`` smallest keys (``k < len(keys)``), by insertion into a sorted
    buffer: a key rarely beats the k-th smallest so far, so this is about one pass."""
    best = np.empty(k, dtype=np.uint64)
    where = np.empty(k, dtype=np.int64)
    filled = 0
    for c in range(keys.shape[0]):
        key = keys[c]
        if filled == k and key >= best[k - 1]:
            continue
        i = filled if filled < k else k - 1
        while i > 0 and best[i - 1] > key:  # the k-th smallest so far falls off the end
            best[i], where[i] = best[i - 1], where[i - 1]
            i -= 1
        best[i], where[i] = key, c
        filled = min(filled + 1, k)
    return where


@kernel
def score(left_n, left_pos, n, positives):
    """Sum over both children of ``(p² + q²) / size``: larger is a larger Gini gain."""
    ln, lp = float(left_n), float(left_pos)
    rn, rp = float(n - left_n), float(positives - left_pos)
    return (lp * lp + (ln - lp) * (ln - lp)) / ln + (rp * rp + (rn - rp) * (rn - rp)) / rn


@kernel
def best_split(
    columns, y, rows, order, values, labels, use_presorted, seed, k, max_features, min_samples_leaf
):
    """``(attribute, threshold)`` of the best sampled split of ``rows``; attribute -1 when none.
    ``columns`` is X transposed; ``order``, ``values`` and ``labels`` are those of
    :class:`~.splits.Presorted`.

    Attributes are taken in increasing :func:`attribute_keys` order, skipping those without a
    valid threshold, until ``max_features`` are taken; of each, the ``k`` valid thresholds of
    smallest :func:`threshold_keys` (all when ``k`` < 1). The largest score wins; equal scores
    go to the smaller attribute, then the smaller threshold."""
    m = rows.shape[0]
    positives = 0
    for i in range(m):
        positives += y[rows[i]]
    member = np.zeros(columns.shape[1] if use_presorted else 0, dtype=np.bool_)
    if use_presorted:
        for i in range(m):
            member[rows[i]] = True
    xs = np.empty(m, dtype=np.float64)
    ys = np.empty(m, dtype=np.int64)
    thresholds = np.empty(m, dtype=np.float64)
    left_n = np.empty(m, dtype=np.int64)
    left_pos = np.empty(m, dtype=np.int64)
    best_a, best_t, best_s = -1, 0.0, -np.inf
    taken = 0
    for a in np.argsort(attribute_keys(seed, columns.shape[0])):
        if taken == max_features:
            break
        _sorted_column(columns, y, rows, a, order, values, labels, member, xs, ys)
        count = _candidates(xs, ys, min_samples_leaf, thresholds, left_n, left_pos)
        if count == 0:
            continue
        taken += 1
        chosen = np.arange(count)
        if 0 < k < count:
            chosen = _smallest(threshold_keys(seed, a, thresholds[:count]), k)
        for c in chosen:
            s = score(left_n[c], left_pos[c], m, positives)
            t = thresholds[c]
            if s > best_s or (s == best_s and (a < best_a or (a == best_a and t < best_t))):
                best_a, best_t, best_s = a, t, s
    return best_a, best_t
