"""A plain numpy reference of a greedy DaRE node's choice, to check the Numba kernel against:
sort, group equal values, keep the valid thresholds, sample by key, score by Gini
(exactly, in fractions) or by entropy (float64, as the kernel carries it)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from veritas_dsl.unlearning.dare.kernels import attribute_keys, threshold_keys


def candidates(x: np.ndarray, y: np.ndarray, min_samples_leaf: int):
    """Valid thresholds of one attribute with their left counts and positives."""
    order = np.argsort(x, kind="stable")
    xs = x[order].astype(np.float64)
    starts = np.concatenate([[0], np.nonzero(xs[1:] != xs[:-1])[0] + 1])
    values = xs[starts]
    counts = np.diff(np.append(starts, len(xs)))
    positives = np.add.reduceat(y[order].astype(np.int64), starts)
    pure0, pure1 = positives == 0, positives == counts
    same = (pure0[:-1] & pure0[1:]) | (pure1[:-1] & pure1[1:])
    left_n = np.cumsum(counts)[:-1]
    left_pos = np.cumsum(positives)[:-1]
    keep = ~same & (left_n >= min_samples_leaf) & (len(xs) - left_n >= min_samples_leaf)
    return ((values[:-1] + values[1:]) / 2.0)[keep], left_n[keep], left_pos[keep]


def _n_entropy(m: int, q: int) -> float:
    return 0.0 if q in (0, m) else m * math.log(m) - q * math.log(q) - (m - q) * math.log(m - q)


def entropy_key(ln: int, lp: int, n: int, positives: int) -> tuple[int, int]:
    """The kernel's entropy score: ``E`` in float64, its bits below 2**-52 dropped."""
    e = _n_entropy(ln, lp) + _n_entropy(n - ln, positives - lp)
    whole = math.floor(e)
    return whole, int((e - whole) * 2.0**52)


def greedy_split(X, y, rows, seed, k, max_features, min_samples_leaf, criterion="gini"):
    """``(attribute, threshold)`` or None, by the kernel's rules."""
    labels = y[rows]
    n, positives = len(rows), int(labels.sum())
    best = None  # (G, attribute, threshold): Gini's score is n - 2 G, G exact
    taken = 0
    for attribute in np.argsort(attribute_keys(seed, X.shape[1]), kind="stable"):
        if taken == max_features:
            break
        thresholds, left_n, left_pos = candidates(X[rows, attribute], labels, min_samples_leaf)
        if len(thresholds) == 0:
            continue
        taken += 1
        if k is not None and len(thresholds) > k:
            keys = threshold_keys(seed, int(attribute), np.ascontiguousarray(thresholds))
            chosen = np.argsort(keys, kind="stable")[:k]
            thresholds, left_n, left_pos = thresholds[chosen], left_n[chosen], left_pos[chosen]
        for ln, lp, t in zip(left_n.tolist(), left_pos.tolist(), thresholds, strict=True):
            rn, rp = n - ln, positives - lp
            if criterion == "gini":
                g = Fraction(lp * (ln - lp), ln) + Fraction(rp * (rn - rp), rn)
            else:
                g = entropy_key(ln, lp, n, positives)
            candidate = (g, int(attribute), float(t))
            if best is None or candidate < best:
                best = candidate
    return None if best is None else (best[1], best[2])
