"""Whether deleting at most k rows of a node can let another cut beat its greedy split by Gini (the
margin condition of the worst-case certificate, :mod:`.certificate`; proof in
docs/unlearning-certificates.md).

A DaRE node's score of a cut is ``sum over sides of (p² + q²) / (p + q) = n - 2 G`` with
``G = sum over sides of p q / (p + q)`` (p positives, q negatives): the largest score is the
smallest ``G``. A deletion removes, from each of the four cells the two cuts make (chosen side x
rival side), some positives and negatives; both ``G`` depend on those eight counts alone.
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np

#: ``G`` closer than this share of the node's rows are treated as equal: this module computes
#: ``G`` in float64, whose rounding is far smaller (the kernel compares them exactly).
TOLERANCE = 1e-9
#: The most deletion patterns (vectors of 8 counts summing to at most k) enumerated per rival
#: cut; beyond (k > 10), only the cheaper bound decides.
MAX_PATTERNS = 50_000


def overtaking_cuts(X, y, a: int, below: int, k: int, m: int, rivals) -> list[tuple]:
    """Every cut ``(attribute, threshold, G it can reach, chosen G then, sides)`` that some
    deletion of at most k rows makes score at least as well as the chosen cut (attribute ``a``,
    after its value group ``below``), ``sides`` its ``((rows, positives), (rows, positives))``
    now; empty when none can. Rivals: every cut, of each attribute in
    ``rivals``, between adjacent distinct values, leaving m rows each side, but the chosen one.

    First a cheap bound: ``G`` of the chosen cut only falls under deletions (``p q / (p + q)``
    grows with p and q), so a rival whose least ``G`` (:func:`least_gini`) stays above the
    chosen cut's ``G`` now cannot win. For the others, every deletion pattern is tried
    (:func:`can_win`)."""
    n = len(y)
    go_left = X[:, a] <= np.unique(X[:, a])[below]
    chosen = _gini_now(go_left, y)
    found = []
    for b in rivals:
        values, inverse = np.unique(X[:, b], return_inverse=True)
        # per value group: rows in (chosen left, positive), (left, negative), (right, +), (right, -)
        cell = np.where(go_left, 0, 2) + (1 - y)
        counts = np.zeros((len(values), 4), dtype=np.int64)
        np.add.at(counts, (inverse, cell), 1)
        left = np.cumsum(counts, axis=0)[:-1]  # rows up to each group: the rival's left side
        right = counts.sum(axis=0) - left
        n_left = left.sum(axis=1)
        cut = np.arange(len(left))
        keep = (n_left >= m) & (n - n_left >= m) & ((b != a) | (cut != below))
        if not keep.any():
            continue
        p_left, p_all = left[:, 0] + left[:, 2], int(y.sum())
        least = least_gini(p_left[keep], n_left[keep], p_all, n, k)
        for i in np.flatnonzero(least - chosen <= TOLERANCE * n).tolist():
            c = int(cut[keep][i])
            # The four cells: (chosen side, rival side) = (L, l), (L, r), (R, l), (R, r).
            pos = np.array([left[c, 0], right[c, 0], left[c, 2], right[c, 2]])
            neg = np.array([left[c, 1], right[c, 1], left[c, 3], right[c, 3]])
            chosen_first = a < b or (a == b and c > below)  # the kernel's tie-break
            if can_win(pos, neg, k, chosen_first, TOLERANCE * n, same_attribute=a == b):
                t = float((values[c] + values[c + 1]) / 2)
                rows, positives = int(n_left[c]), int(p_left[c])
                sides = ((rows, positives), (n - rows, p_all - positives))
                found.append((b, t, float(least[i]), chosen, sides))
    return found


def _gini_now(go_left: np.ndarray, y: np.ndarray) -> float:
    p, q = int(y[go_left].sum()), int(go_left.sum() - y[go_left].sum())
    rp, rq = int(y.sum()) - p, int(len(y) - y.sum()) - q
    return float(side(p, q) + side(rp, rq))


def side(p, q):
    """``p q / (p + q)`` of one side (0 when empty), elementwise."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    return np.where(p + q > 0, p * q / np.maximum(p + q, 1.0), 0.0)


def least_gini(p_left, n_left, p_total, n, k):
    """Per cut, the least ``G`` after deleting at most k rows: each side's ``p q / (p + q)``
    is concave in the rows deleted from it, so its least value for ``j`` deletions is at an end
    (the positives first or the negatives first); the sides then share the k deletions."""
    q_left = n_left - p_left
    p_right, q_right = p_total - p_left, (n - p_total) - q_left

    def side_least(p, q):  # shape (k + 1, cuts): the least for j = 0..k rows deleted
        out = np.empty((k + 1, len(p)))
        for j in range(k + 1):
            a1 = np.minimum(j, p)
            a2 = np.maximum(0, j - q)
            value = np.minimum(side(p - a1, q - (j - a1)), side(p - a2, q - (j - a2)))
            out[j] = np.where(j <= p + q, value, np.inf)
        return out

    left, right = side_least(p_left, q_left), side_least(p_right, q_right)
    least = np.full(len(p_left), np.inf)
    for j in range(k + 1):
        least = np.minimum(least, left[j] + right[: k - j + 1].min(axis=0))
    return least


def can_win(
    pos: np.ndarray, neg: np.ndarray, k: int, chosen_first: bool, tol: float,
    same_attribute: bool = False,
) -> bool:
    """Whether some deletion of at most k rows lets the rival cut score at least as well as the
    chosen one, given the positives and negatives of the four cells (L, l), (L, r), (R, l),
    (R, r). Equal ``G`` (within ``tol``) go to the rival unless both cuts then have the same
    sides (counts; so the same ``G``) and ``chosen_first`` (the
    chosen cut wins the kernel's tie-break). A rival of the same attribute whose rows between
    the two cuts are all deleted is no rival: the two are one cut then, splitting the rows as
    the chosen one (its threshold moves within the band, :mod:`.certificate`). True when k is
    too large to enumerate."""
    patterns = _patterns(k)
    if patterns is None:
        return True
    counts = np.concatenate([pos, neg])
    patterns = patterns[np.all(patterns <= counts, axis=1)]
    p = pos[None, :] - patterns[:, :4]
    q = neg[None, :] - patterns[:, 4:]
    sides_c = (p[:, 0] + p[:, 1], q[:, 0] + q[:, 1], p[:, 2] + p[:, 3], q[:, 2] + q[:, 3])
    sides_r = (p[:, 0] + p[:, 2], q[:, 0] + q[:, 2], p[:, 1] + p[:, 3], q[:, 1] + q[:, 3])
    chosen = side(sides_c[0], sides_c[1]) + side(sides_c[2], sides_c[3])
    # A rival with an empty side is no candidate; counting it is the conservative choice.
    rival = side(sides_r[0], sides_r[1]) + side(sides_r[2], sides_r[3])
    same = (
        (sides_c[0] == sides_r[0]) & (sides_c[1] == sides_r[1])
        & (sides_c[2] == sides_r[2]) & (sides_c[3] == sides_r[3])
    ) | (
        (sides_c[0] == sides_r[2]) & (sides_c[1] == sides_r[3])
        & (sides_c[2] == sides_r[0]) & (sides_c[3] == sides_r[1])
    )  # fmt: skip
    tie = np.abs(rival - chosen) <= tol
    wins = (rival < chosen - tol) | (tie & ~(same & chosen_first))
    if same_attribute:  # (L, r) and (R, l) hold the rows between the cuts
        wins &= (p[:, 1] + q[:, 1] + p[:, 2] + q[:, 2]) > 0
    return bool(wins.any())


@cache
def _patterns(k: int) -> np.ndarray | None:
    """Every vector of 8 counts summing to at most k (None when there are over MAX_PATTERNS)."""
    from math import comb

    if comb(k + 8, 8) > MAX_PATTERNS:
        return None
    rows = [
        np.bincount(np.array(choice, dtype=np.int64), minlength=8)
        for total in range(k + 1)
        for choice in itertools.combinations_with_replacement(range(8), total)
    ]
    return np.array(rows, dtype=np.int64)
