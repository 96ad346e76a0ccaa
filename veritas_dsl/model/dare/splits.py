"""How a DaRE node chooses its split from the rows it holds: valid thresholds, Gini from counts,
the keyed sampling of attributes and thresholds, and the random split of the top levels.

A greedy node's choice is a pure function of its rows and its 64-bit ``seed``: attributes are
taken in the order of a permutation drawn from the seed, thresholds by the smallest keys
``hash(seed, attribute, threshold)``. Fit and the re-evaluation after a deletion call the same
:func:`greedy_split`, so a node whose rows are those of a fresh fit makes the fresh fit's choice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class Split:
    """A decision ``x[attribute] <= threshold`` goes left (threshold in float64)."""

    attribute: int
    threshold: float


def is_leaf(n: int, positives: int, depth: int, max_depth: int, min_samples_leaf: int) -> bool:
    """The stopping rules that depend on counts alone (a pure node, too few rows, full depth).

    All three stay true when rows are deleted: a leaf never has to split after a deletion.
    """
    return depth >= max_depth or positives in (0, n) or n < 2 * min_samples_leaf


def candidates(x: np.ndarray, y: np.ndarray, min_samples_leaf: int):
    """The valid thresholds of one attribute: midpoints (float64) of adjacent distinct float32
    values whose rows are not all of one and the same label, leaving ``min_samples_leaf`` rows
    on each side. Returns ``(thresholds, left_n, left_positives)``, thresholds increasing."""
    order = np.argsort(x, kind="stable")
    xs = x[order].astype(np.float64)
    starts = np.concatenate([[0], np.nonzero(xs[1:] != xs[:-1])[0] + 1])
    values = xs[starts]
    counts = np.diff(np.append(starts, len(xs)))
    positives = np.add.reduceat(y[order].astype(np.int64), starts)
    pure0 = positives == 0
    pure1 = positives == counts
    # Between values i and i + 1: invalid when both sides are pure with the same label.
    same = (pure0[:-1] & pure0[1:]) | (pure1[:-1] & pure1[1:])
    left_n = np.cumsum(counts)[:-1]
    left_pos = np.cumsum(positives)[:-1]
    n = len(xs)
    keep = ~same & (left_n >= min_samples_leaf) & (n - left_n >= min_samples_leaf)
    thresholds = (values[:-1] + values[1:]) / 2.0
    return thresholds[keep], left_n[keep], left_pos[keep]


def gini_score(left_n, left_pos, n: int, positives: int) -> np.ndarray:
    """Sum over both children of ``(p² + q²) / size``: larger is a larger Gini gain (the node's
    own impurity is the same for every candidate). Computed from integer counts in float64, in
    one fixed order, so equal counts give bit-equal scores."""
    left_n = np.asarray(left_n, dtype=np.float64)
    left_pos = np.asarray(left_pos, dtype=np.float64)
    right_n = n - left_n
    right_pos = positives - left_pos
    left = (left_pos * left_pos + (left_n - left_pos) ** 2) / left_n
    right = (right_pos * right_pos + (right_n - right_pos) ** 2) / right_n
    return left + right


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection of uint64 that scatters nearby inputs."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def threshold_keys(seed: int, attribute: int, thresholds: np.ndarray) -> np.ndarray:
    """A pseudo-random key per threshold, a function of the threshold's value (not its rank), so
    that deleting rows elsewhere leaves the keys of the surviving thresholds unchanged."""
    spread = (int(attribute) + 1) * 0x9E3779B97F4A7C15 % 2**64
    base = _mix(np.array([int(seed) ^ spread], np.uint64))
    bits = np.ascontiguousarray(thresholds, dtype=np.float64).view(np.uint64)
    with np.errstate(over="ignore"):
        return _mix(bits * _GOLDEN ^ base[0])


def attribute_order(seed: int, n_attributes: int) -> np.ndarray:
    """The order in which a greedy node with this seed considers attributes."""
    return np.random.default_rng(seed).permutation(n_attributes)


def greedy_split(
    X: np.ndarray,
    y: np.ndarray,
    rows: np.ndarray,
    seed: int,
    k: int | None,
    max_features: int,
    min_samples_leaf: int,
) -> Split | None:
    """The best split of ``rows`` among the sampled candidates, or None when no attribute has a
    valid threshold. Attributes are taken in :func:`attribute_order`, skipping those without
    candidates, until ``max_features`` are found; of each, the ``k`` thresholds of smallest key
    (all when ``k`` is None). The best Gini score wins; ties go to the smaller attribute, then
    the smaller threshold."""
    labels = y[rows]
    n, positives = len(rows), int(labels.sum())
    best: tuple[float, int, float] | None = None  # (-score, attribute, threshold)
    taken = 0
    for attribute in attribute_order(seed, X.shape[1]):
        if taken == max_features:
            break
        thresholds, left_n, left_pos = candidates(X[rows, attribute], labels, min_samples_leaf)
        if len(thresholds) == 0:
            continue
        taken += 1
        if k is not None and len(thresholds) > k:
            chosen = np.sort(np.argsort(threshold_keys(seed, attribute, thresholds))[:k])
            thresholds, left_n, left_pos = thresholds[chosen], left_n[chosen], left_pos[chosen]
        scores = gini_score(left_n, left_pos, n, positives)
        i = int(np.argmax(scores))  # the first of equal scores: the smallest threshold
        candidate = (-float(scores[i]), int(attribute), float(thresholds[i]))
        if best is None or candidate < best:
            best = candidate
    return None if best is None else Split(best[1], best[2])


def random_split(X: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> Split | None:
    """A random node's split: an attribute uniform among those not constant on ``rows``, a
    threshold uniform in ``[min, max)`` of it; None when every attribute is constant."""
    block = X[rows].astype(np.float64)
    low, high = block.min(axis=0), block.max(axis=0)
    varying = np.nonzero(high > low)[0]
    if len(varying) == 0:
        return None
    attribute = int(varying[rng.integers(len(varying))])
    return Split(attribute, random_threshold(low[attribute], high[attribute], rng))


def random_threshold(low: float, high: float, rng: np.random.Generator) -> float:
    """A threshold uniform in ``[low, high)`` (``low < high``): both sides keep a row."""
    threshold = low + rng.random() * (high - low)
    return float(threshold if low <= threshold < high else low)  # rounding may reach high
