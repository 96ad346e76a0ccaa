"""The trees of the worst-case certificate's bounds (:mod:`.certificate`) when greedy nodes may
change under a deletion: the forest's trees, with

- a greedy node whose threshold can only move within a band ``[low, high]`` (no remaining row
  crossing it: its subtree is kept) split in three: ``x <= low`` goes to its left subtree's
  bounds, ``x > high`` to its right one's, and an input in between (it may go either way) to a
  leaf bounding both subtrees' leaves;
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


def bounding_view(view: ForestView, low, high, moving: dict, k: int, m: int):
    """``(structure, low, high)``: a ForestView of the bounds' trees and, per node of it, the
    least and the largest leaf value as ``(numerators, rows)`` (a split's ``0 / 1``). ``low``
    and ``high`` are the view's leaves' bounds as ``(numerators, rows)``; ``moving`` maps a
    view node to its band ``(low, high)``, or None when its choice may change otherwise."""
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

    def build(node: int) -> tuple[int, tuple, tuple]:
        """Add ``node``'s bounds' subtree: its root and its least and largest leaf value."""
        if view.kind[node] == LEAF:
            lower, upper = fractions[0][node], fractions[1][node]
            return add(lower=lower, upper=upper), lower, upper
        if node in moving and moving[node] is None:
            lower, upper = _regrown(int(view.count[node]), int(view.positives[node]), k, m)
            return add(lower=lower, upper=upper), lower, upper
        a, t = int(view.feature[node]), float(view.threshold[node])
        band = moving.get(node) or (t, t)
        here = add(a, band[0])
        left, least, most = build(int(view.left[node]))
        out["left"][here] = left
        if band[0] == band[1]:
            out["right"][here], right_least, right_most = build(int(view.right[node]))
        else:
            upper_split = out["right"][here] = add(a, band[1])
            middle = out["left"][upper_split] = add()
            out["right"][upper_split], right_least, right_most = build(int(view.right[node]))
        least, most = min(least, right_least, key=_value), max(most, right_most, key=_value)
        if band[0] != band[1]:
            values[0][middle], values[1][middle] = least, most
        return here, least, most

    offsets = [0]
    for start in view.tree_offsets[:-1].tolist():
        build(start)
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


def _regrown(n: int, positives: int, k: int, m: int) -> tuple[tuple, tuple]:
    """The least and the largest fraction of a leaf of a subtree grown on at least ``n - k`` of
    these ``n`` rows (module docstring)."""
    r = max(1, min(m, n - k))
    negatives = n - positives
    return (max(0, r - negatives), r), (min(positives, r), r)


def _value(fraction: tuple) -> Fraction:
    """The value of ``(numerator, rows)``, exactly (a sort key)."""
    return Fraction(*fraction)
