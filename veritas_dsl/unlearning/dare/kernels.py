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
#: A node caches the ``RESERVE * k`` valid thresholds of smallest keys per sampled attribute
#: (the ``k`` sampled and spares that replace them when deletions invalidate them).
RESERVE = 2
#: The cache's bound on keys when it holds every valid threshold of an attribute.
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@kernel
def mix(z):
    """splitmix64's finaliser: a bijection of uint64 that scatters nearby inputs."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


_MASK = 0xFFFFFFFFFFFFFFFF


def mix_int(z: int) -> int:
    """:func:`mix` on Python ints in ``[0, 2**64)``, for Python callers (entering a kernel
    costs more than the arithmetic)."""
    z = ((z ^ (z >> 30)) * int(_MIX1)) & _MASK
    z = ((z ^ (z >> 27)) * int(_MIX2)) & _MASK
    return z ^ (z >> 31)


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
    keys = np.empty(thresholds.shape[0], dtype=np.uint64)
    for c in range(thresholds.shape[0]):
        keys[c] = threshold_key(seed, attribute, thresholds[c])
    return keys


@kernel
def threshold_key(seed, attribute, threshold):
    """The key of one threshold (float64) of one attribute at the node with this seed."""
    return keyed(key_base(seed, attribute), threshold)


@kernel
def key_base(seed, attribute):
    """What the keys of one attribute's thresholds at one node share (computed once for
    many keys: :func:`keyed`)."""
    return mix(np.uint64(seed) ^ mix(np.uint64(attribute + 1) * _GOLDEN) ^ _MIX1)


@kernel
def keyed(base, threshold):
    """:func:`threshold_key` from the attribute's :func:`key_base`."""
    bits = np.float64(threshold).view(np.uint64)  # the same bits, without an array
    return mix(bits * _GOLDEN ^ base)


@kernel
def _sorted_column(rows, attribute, order, values, labels, position, member, xs, ys, ranks, bits):
    """Fill ``xs``/``ys`` with the attribute's values (float64) and labels in increasing order
    (ties in any order: :func:`_candidates` counts them together)."""
    vals, labs = values[attribute], labels[attribute]
    if member.shape[0] > 0:  # pick the node's rows out of every row, presorted
        i = 0
        for j in range(order.shape[1]):
            if member[order[attribute, j]]:
                xs[i] = vals[j]
                ys[i] = labs[j]
                i += 1
        return
    # Sort the rows' ranks in the presorted order, then read the values in that order:
    # comparison sorts of the values cost several times more, and regrowing a subtree
    # after a deletion is mostly this.
    where = position[attribute]
    m = rows.shape[0]
    for i in range(m):
        ranks[i] = where[rows[i]]
    _sort_ranks(ranks, bits)
    for i in range(m):
        xs[i] = vals[ranks[i]]
        ys[i] = labs[ranks[i]]


#: De Bruijn sequence and table: the index of a word's lowest set bit in a multiply.
_DE_BRUIJN = np.uint64(0x07EDD5E59A4E28C2)
_LOWEST = np.zeros(64, dtype=np.int64)
for _i in range(64):
    _LOWEST[((1 << _i) * 0x07EDD5E59A4E28C2 & 0xFFFFFFFFFFFFFFFF) >> 58] = _i


@kernel
def _sort_ranks(keys, bits):
    """Sort ``keys`` (distinct integers below ``64 * len(bits)``) in place. Many keys: set
    them in the bitmap ``bits`` (all zero, and left so) and read the set bits in order, in
    one pass over ``bits`` (12.5 KB for 100,000 rows); few: a comparison sort."""
    n = keys.shape[0]
    if n < 64 or 16 * n < bits.shape[0]:
        keys.sort()
        return
    one = np.uint64(1)
    for i in range(n):
        bits[keys[i] >> 6] |= one << np.uint64(keys[i] & 63)
    i = 0
    for w in range(bits.shape[0]):
        word = bits[w]
        if word == 0:
            continue
        bits[w] = 0
        while word != 0:
            low = word & (~word + one)
            keys[i] = 64 * w + _LOWEST[(low * _DE_BRUIJN) >> np.uint64(58)]
            i += 1
            word ^= low


@kernel
def _candidates(xs, ys, min_samples_leaf, thresholds, left_n, left_pos, around, values):
    """Write the valid thresholds (midpoints of adjacent distinct values not both pure with one
    label, leaving ``min_samples_leaf`` rows each side) with their left counts, the rows and
    positives at the values just below and above (``around``) and those values; return how
    many."""
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
                around[count, 0], around[count, 1] = prev_n, prev_pos
                around[count, 2], around[count, 3] = n_here, pos
                values[count, 0], values[count, 1] = prev_value, xs[i]
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


#: The criteria a greedy node can minimise (``Settings.criterion``).
GINI, ENTROPY = 0, 1
#: Entropy scores are float64, carried as ``whole + rest / 2**52`` to compare as Gini's.
_ENTROPY_DEN = np.int64(2**52)


@kernel
def score(criterion, left_n, left_pos, n, positives):
    """The cut's score under ``criterion`` as :func:`gini`'s ``(whole, rest, den)``: the least
    wins (:func:`compare_gini`)."""
    if criterion == ENTROPY:
        return entropy(left_n, left_pos, n, positives)
    return gini(left_n, left_pos, n, positives)


@kernel
def _n_entropy(m, q):
    """``m`` times the entropy (in nats) of a side of ``m`` rows, ``q`` of them positive."""
    if q == 0 or q == m:
        return 0.0
    return m * np.log(m) - q * np.log(q) - (m - q) * np.log(m - q)


@kernel
def entropy(left_n, left_pos, n, positives):
    """A cut's ``E = sum over its sides of n_s H(p_s)``, the information gain's loss term, in
    float64 from the integer counts (the same counts give the same bits, so a deletion
    re-chooses what a fit chooses on this machine; a libm whose log differs in the last bit
    could break a tie within an ulp otherwise), as ``(whole, rest, 2**52)``: ``E``'s bits below
    ``2**-52`` are dropped, which only makes more cuts tie (then the smaller attribute and
    threshold win, as for Gini)."""
    e = _n_entropy(left_n, left_pos) + _n_entropy(n - left_n, positives - left_pos)
    whole = np.floor(e)
    return np.int64(whole), np.int64((e - whole) * 2.0**52), _ENTROPY_DEN


@kernel
def gini(left_n, left_pos, n, positives):
    """A cut's ``G = sum over its sides of p q / (p + q)``, exactly, as ``(whole, rest, den)``:
    ``G = whole + rest / den`` with ``0 <= rest < 2 den``. Gini's score of the cut is
    ``n - 2 G``: the least ``G`` wins. Exact, because a deletion must re-choose what a fit
    chooses, ties included (float scores of equal ``G`` can differ in the last bit)."""
    right_n, right_pos = n - left_n, positives - left_pos
    a = left_pos * (left_n - left_pos)
    b = right_pos * (right_n - right_pos)
    whole = a // left_n + b // right_n
    return whole, (a % left_n) * right_n + (b % right_n) * left_n, left_n * right_n


_LOW32 = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


@kernel
def _product(a, b):
    """``a * b`` of two non-negative int64 as ``(high, low)`` uint64 words."""
    a, b = np.uint64(a), np.uint64(b)
    a0, a1, b0, b1 = a & _LOW32, a >> _32, b & _LOW32, b >> _32
    p00, p01, p10 = a0 * b0, a0 * b1, a1 * b0
    middle = (p00 >> _32) + (p01 & _LOW32) + (p10 & _LOW32)
    return a1 * b1 + (p01 >> _32) + (p10 >> _32) + (middle >> _32), (middle << _32) | (
        p00 & _LOW32
    )


@kernel
def compare_gini(g, h):
    """``-1``, ``0`` or ``1`` as the :func:`gini` ``g`` is less than, equal to or more than ``h``,
    exactly. For nodes of fewer than 2^31 rows: ``den`` < 2^60, the products below < 2^124."""
    diff = g[0] - h[0]
    if diff <= -2:  # g < g.whole + 2 <= h.whole <= h
        return -1
    if diff >= 2:
        return 1
    x = diff * g[2] + g[1]  # g - h = x / g.den - h.rest / h.den
    if x < 0:
        return -1
    left, right = _product(x, h[2]), _product(h[1], g[2])
    if left == right:
        return 0
    return -1 if left < right else 1


@kernel
def better(a, t, g, best_a, best_t, best_g):
    """Whether the cut ``x[a] <= t`` of :func:`gini` ``g`` beats the best so far (none when
    ``best_a`` < 0): the least ``G``, then the smaller attribute, then the smaller threshold."""
    if best_a < 0:
        return True
    order = compare_gini(g, best_g)
    return order < 0 or (order == 0 and (a < best_a or (a == best_a and t < best_t)))


@kernel
def best_split(
    columns,
    y,
    rows,
    order,
    values,
    labels,
    position,
    use_presorted,
    seed,
    k,
    max_features,
    min_samples_leaf,
    cache_limit,
    criterion,
):
    """``(attribute, threshold, cache)`` of the best sampled split of ``rows``; attribute -1
    when none. ``columns`` is X transposed; ``order``, ``values``, ``labels`` and ``position``
    are those of :class:`~.splits.Presorted`.

    Attributes are taken in increasing :func:`attribute_keys` order, skipping those without a
    valid threshold, until ``max_features`` are taken; of each, the ``k`` valid thresholds of
    smallest :func:`threshold_keys` (all when ``k`` < 1). The best :func:`score` under
    ``criterion`` wins (the largest Gini score, or the least entropy), compared as
    :func:`better` does; equal scores go to the smaller attribute, then the smaller threshold.

    ``cache`` is what decides the choice (see :mod:`.cache`): the attributes taken; per
    attribute the largest key cached (``ALL`` when every valid threshold is); per cached
    threshold ``(attribute, left rows, left positives, rows and positives at the value below,
    at the value above, 1)`` (the last column: still valid) and those two values. Cached are
    the ``RESERVE * k`` valid thresholds of smallest keys, each attribute's in increasing key
    order when it has more than ``k`` (:mod:`.cache` samples the first ``k``). It is empty
    (``cached`` False) when it would hold more than ``cache_limit`` thresholds."""
    m = rows.shape[0]
    positives = 0
    for i in range(m):
        positives += y[rows[i]]
    member = np.zeros(columns.shape[1] if use_presorted else 0, dtype=np.bool_)
    if use_presorted:
        for i in range(m):
            member[rows[i]] = True
    xs = np.empty(m, dtype=np.float64)
    ranks = np.empty(0 if use_presorted else m, dtype=np.int64)
    bits = np.zeros(0 if use_presorted else (columns.shape[1] + 63) // 64, dtype=np.uint64)
    ys = np.empty(m, dtype=np.int64)
    thresholds = np.empty(m, dtype=np.float64)
    left_n = np.empty(m, dtype=np.int64)
    left_pos = np.empty(m, dtype=np.int64)
    around = np.empty((m, 4), dtype=np.int64)
    bounds = np.empty((m, 2), dtype=np.float64)
    capacity = max_features * (min(RESERVE * k, m) if k > 0 else m)
    cached = capacity <= cache_limit
    if not cached:
        capacity = 0
    attrs = np.empty(max_features, dtype=np.int64)
    bound = np.full(max_features, ALL, dtype=np.uint64)
    cand = np.empty((capacity, 8), dtype=np.int64)
    cand_values = np.empty((capacity, 2), dtype=np.float64)
    best_a, best_t, best_g = -1, 0.0, (0, 0, 1)
    taken = 0
    filled = 0
    for a in np.argsort(attribute_keys(seed, columns.shape[0])):
        if taken == max_features:
            break
        _sorted_column(rows, a, order, values, labels, position, member, xs, ys, ranks, bits)
        count = _candidates(xs, ys, min_samples_leaf, thresholds, left_n, left_pos, around, bounds)
        if count == 0:
            continue
        attrs[taken] = a
        kept = chosen = np.arange(count)
        if 0 < k < count:
            keys = threshold_keys(seed, a, thresholds[:count])
            if RESERVE * k < count:
                kept = _smallest(keys, RESERVE * k)
                bound[taken] = keys[kept[-1]]
            else:
                kept = np.argsort(keys)
            chosen = kept[:k]
        taken += 1
        for c in chosen:
            g = score(criterion, left_n[c], left_pos[c], m, positives)
            if better(a, thresholds[c], g, best_a, best_t, best_g):
                best_a, best_t, best_g = a, thresholds[c], g
        if cached:
            for c in kept:
                cand[filled, 0], cand[filled, 1], cand[filled, 2] = a, left_n[c], left_pos[c]
                cand[filled, 3:7] = around[c]
                cand[filled, 7] = 1
                cand_values[filled] = bounds[c]
                filled += 1
    cache = (
        attrs[:taken].copy(),
        bound[:taken].copy(),
        cand[:filled].copy(),
        cand_values[:filled].copy(),
    )
    return best_a, best_t, cached, cache
