"""The trees of the worst-case certificate's bounds (:mod:`.certificate`) when greedy nodes may
change under a deletion: the forest's trees, with

- a greedy node whose threshold can only move within a band ``[low, high]`` (no remaining row
  crossing it: its subtree is kept) split in three: ``x <= low`` goes to its left subtree's
  bounds, ``x > high`` to its right one's, and an input in between (it may go either way) to a
  leaf bounding both subtrees' leaves;
- a greedy node just above the full depth whose only other change is to a rival cut: its
  leaves widened to every leaf a rival's side can give (the rival's children are leaves too);
- a greedy node whose choice may change otherwise (a leaf, another cut: ``Grower._update``
  grows it afresh) replaced by a leaf bounding every leaf a subtree grown on its remaining rows
  can have: at least ``r = min(m, n - k)`` rows of its ``n`` (a leaf below a split keeps
  ``m = min_samples_leaf``, the node itself as a leaf ``n - k``), so with ``P`` positives and
  ``N`` negatives its fraction lies in ``[max(0, r - N) / r, min(P, r) / r]``.

An input whose feature's declared domain has no value within a band never meets the middle leaf:
a spec's engines search the domain only, so the certificate is relative to it without being told.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from veritas_dsl.unlearning.dare.tree import GREEDY, LEAF
from veritas_dsl.unlearning.dare.view import ForestView


def bounding_view(view: ForestView, moving: dict, k: int, settings):
    """``(structure, low, high)``: a ForestView of the bounds' trees and, per node of it, the
    least and the largest leaf value as ``(numerators, rows)`` (a split's ``0 / 1``), after
    deleting at most ``k`` rows. ``moving`` maps a view node to its
    :class:`~.certificate.UnstableNode`."""
    m, max_depth = settings.min_samples_leaf, settings.max_depth
    low, high = leaf_bound_fractions(view.count, view.positives, k)
    out: dict[str, list] = {name: [] for name in ("kind", "feature", "threshold", "left", "right")}
    values: list[list] = [[], []]  # per node: (numerator, rows) of the lower and the upper bound
    fractions = [list(zip(low[0].tolist(), low[1].tolist(), strict=True))]
    fractions.append(list(zip(high[0].tolist(), high[1].tolist(), strict=True)))

    def add(feature=-1, threshold=0.0, lower=(0, 1), upper=(0, 1)) -> int:
        out["kind"].append(LEAF if feature < 0 else GREEDY)
        out["feature"].append(feature)
        out["threshold"].append(threshold)
        out["left"].append(-1)
        out["right"].append(-1)
        values[0].append(lower)
        values[1].append(upper)
        return len(out["kind"]) - 1

    def build(node: int, depth: int, rival=None) -> tuple[int, tuple, tuple]:
        """Add ``node``'s bounds' subtree: its root and its least and largest leaf value; a
        leaf's bounds widened to ``rival``'s when given."""
        if view.kind[node] == LEAF:
            lower, upper = fractions[0][node], fractions[1][node]
            if rival is not None:
                lower, upper = min(lower, rival[0], key=_value), max(upper, rival[1], key=_value)
            return add(lower=lower, upper=upper), lower, upper
        a, t = int(view.feature[node]), float(view.threshold[node])
        unstable = moving.get(node)
        band = (t, t) if unstable is None else unstable.band
        widen = None
        if unstable is not None and unstable.rivals:  # a rival's sides are leaves, as its own
            band = band if depth + 1 >= max_depth else None
            widen = _hull(unstable.rivals, k) if band else None
        if band is None:
            lower, upper = _regrown(int(view.count[node]), int(view.positives[node]), k, m)
            return add(lower=lower, upper=upper), lower, upper
        here = add(a, band[0])
        left, least, most = build(int(view.left[node]), depth + 1, widen)
        out["left"][here] = left
        right = int(view.right[node])
        if band[0] == band[1]:
            out["right"][here], right_least, right_most = build(right, depth + 1, widen)
        else:
            upper_split = out["right"][here] = add(a, band[1])
            middle = out["left"][upper_split] = add()
            out["right"][upper_split], right_least, right_most = build(right, depth + 1, widen)
        least, most = min(least, right_least, key=_value), max(most, right_most, key=_value)
        if band[0] != band[1]:
            values[0][middle], values[1][middle] = least, most
        return here, least, most

    offsets = [0]
    for start in view.tree_offsets[:-1].tolist():
        build(start, 0)
        offsets.append(len(out["kind"]))
    n = len(out["kind"])
    structure = ForestView(
        kind=np.array(out["kind"], dtype=np.int8),
        feature=np.array(out["feature"], dtype=np.int64),
        threshold=np.array(out["threshold"], dtype=np.float64),
        left=np.array(out["left"], dtype=np.int64),
        right=np.array(out["right"], dtype=np.int64),
        count=np.zeros(n, dtype=np.int64),
        positives=np.zeros(n, dtype=np.int64),
        tree_offsets=np.array(offsets, dtype=np.int64),
        n_features=view.n_features,
    )
    bounds = (
        tuple(np.array(column, dtype=np.int64) for column in zip(*values[i], strict=True))
        for i in range(2)
    )
    return structure, *bounds


def _hull(sides, k: int) -> tuple[tuple, tuple]:
    """The least and the largest value of a leaf holding one of ``sides`` (``(rows,
    positives)`` each) less at most ``k`` of its rows."""
    rows, positives = np.array(sides, dtype=np.int64).T
    (low_p, low_n), (high_p, high_n) = leaf_bound_fractions(rows, positives, k)
    lows = zip(low_p.tolist(), low_n.tolist(), strict=True)
    highs = zip(high_p.tolist(), high_n.tolist(), strict=True)
    return min(lows, key=_value), max(highs, key=_value)


def _regrown(n: int, positives: int, k: int, m: int) -> tuple[tuple, tuple]:
    """The least and the largest fraction of a leaf of a subtree grown on at least ``n - k`` of
    these ``n`` rows (module docstring)."""
    r = max(1, min(m, n - k))
    negatives = n - positives
    return (max(0, r - negatives), r), (min(positives, r), r)


def _value(fraction: tuple) -> Fraction:
    """The value of ``(numerator, rows)``, exactly (a sort key)."""
    return Fraction(*fraction)


def leaf_bound_fractions(count: np.ndarray, positives: np.ndarray, k: int) -> tuple:
    """:func:`leaf_bounds` as fractions: ``((positives, rows), (positives, rows))`` for the
    least and the most, integer arrays (``0 / 1`` for entries of 0 rows)."""
    count = np.asarray(count, dtype=np.int64)
    positives = np.asarray(positives, dtype=np.int64)
    negatives = count - positives
    a = np.minimum(k, np.where(negatives > 0, positives, 0))  # a pure leaf stays pure
    b = np.minimum(k, np.where(positives > 0, negatives, 0))
    empty = count == 0
    return (
        (np.where(empty, 0, positives - a), np.where(empty, 1, count - a)),
        (np.where(empty, 0, positives), np.where(empty, 1, count - b)),
    )
