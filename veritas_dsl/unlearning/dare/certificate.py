"""The worst-case certificate of a DaRE forest: two ensembles bounding, at every input, every forest
that ``DareForest.delete`` of at most ``k`` training rows can give, valid when no random split can
change (greedy ones that can are bounded).

It covers that update only. A forest fit again on the remaining rows is another forest: its
random nodes draw their thresholds afresh from the rows it is given, so it may fall outside the
bounds (bench/recourse.py measures how often). Without random nodes (``random_depth=0``) a fit
with the same settings and seed is the deleted forest, node for node, and is covered with it.

The proof is in docs/unlearning-certificates.md ("A certificate for every deletion of up to k
rows"); in short:

- a deletion (one at a time, or at once) makes a node a leaf when its rows become pure; a random
  node keeps its split while both sides keep ``min_samples_leaf`` (m) rows; a greedy node keeps
  its subtree when, on its remaining rows, its choice (:func:`~.splits.greedy_choice`, a
  function of its rows and seed) splits them as before, its threshold moving or not;
- :func:`unstable_nodes` checks, per split node, conditions under which no set of at most ``k``
  of its rows changes that, and names the nodes where they fail, with the band a greedy
  threshold can move within when that is all that can change;
- with every split fixed, a tree's output after the deletion is the value of the leaf ``x``
  reaches now, on that leaf's remaining rows: at most ``k`` of them are gone, which bounds it
  (:func:`leaf_bounds`); a band, or a greedy node grown again, is bounded by
  :mod:`.bound_trees`.

This module only reads the forest (its trees, rows, labels and settings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.model.ensemble import Ensemble
from veritas_dsl.model.errors import ModelError
from veritas_dsl.unlearning.dare.bound_trees import bounding_view, leaf_bound_fractions
from veritas_dsl.unlearning.dare.gini_margin import overtaking_cuts
from veritas_dsl.unlearning.dare.kernels import attribute_keys, threshold_key
from veritas_dsl.unlearning.dare.tree import GREEDY, LEAF, RANDOM

if TYPE_CHECKING:
    from veritas_dsl.unlearning.dare.forest import DareForest


@dataclass(frozen=True)
class UnstableNode:
    """A split that deleting at most ``k`` rows may change: ``tree`` (0-based), ``node`` (its
    preorder id in the tree), ``path`` (``L``/``R`` steps from the root, ``root`` for the root),
    ``kind`` (``greedy`` or ``random``), ``split`` (``f2 <= 3.5``) and ``reason``; ``band`` is
    ``(low, high)`` for a greedy node whose threshold can only move within it, no remaining row
    crossing it, or else for one whose only other change is to a rival cut; ``rivals`` then
    lists the ``(rows, positives)`` of each side of every cut that may win (else empty)."""

    tree: int
    node: int
    path: str
    kind: str
    split: str
    reason: str
    band: tuple[float, float] | None = None
    rivals: tuple = ()

    def __str__(self) -> str:
        where = f"{self.path}, {self.kind} {self.split}"
        return f"tree {self.tree} node {self.node} ({where}): {self.reason}"


class UnstableError(ModelError):
    """The forest has splits that some deletion of at most ``deletions`` rows changes;
    ``nodes`` lists every one (the message shows the first :attr:`SHOWN`)."""

    SHOWN = 20

    def __init__(self, nodes: list[UnstableNode], deletions: int) -> None:
        self.nodes = tuple(nodes)
        self.deletions = deletions
        listed = "; ".join(str(n) for n in nodes[: self.SHOWN])
        more = f"; and {len(nodes) - self.SHOWN} more" if len(nodes) > self.SHOWN else ""
        super().__init__(
            f"{len(nodes)} split(s) can change when {deletions} row(s) are deleted, so no "
            f"worst case is certified: {listed}{more}"
        )


def worst_case(forest: DareForest, deletions: int) -> tuple[Ensemble, Ensemble]:
    """``(lower, upper)``: binary Ensembles such that for every set S of at most ``deletions``
    remaining training rows and every input x,
    ``lower.eval(x) <= forest.copy().delete(S).predict_proba(x)[:, 1] <= upper.eval(x)``.
    Their trees are the forest's, but where a greedy node may change (:mod:`.bound_trees`).
    Not a refit on the remaining rows but S, unless ``random_depth=0`` (module docstring).
    Raises :class:`UnstableError` naming every random split that such a deletion may change
    (then no bound of this shape holds), and ``ModelError`` when ``deletions`` is not a whole
    number >= 0 or the forest's criterion is not Gini.
    """
    k = check_deletions(forest, deletions)
    unstable = unstable_nodes(forest, k)
    random = [node for node in unstable if node.kind == "random"]
    if random:
        raise UnstableError(random, k)
    view = forest.view()
    moving = {int(view.tree_offsets[n.tree]) + n.node: n for n in unstable}
    settings = forest._grower().settings
    structure, low, high = bounding_view(view, moving, k, settings)
    return tuple(  # type: ignore[return-value]
        structure.to_ensemble(
            Ensemble,
            structure.shares(*fraction),
            f"{name} of a DaRE forest after delete() of any {deletions} row(s)",
        )
        for fraction, name in ((low, "lower bound"), (high, "upper bound"))
    )


def check_deletions(forest: DareForest, deletions) -> int:
    """``deletions`` as an int, or a ModelError when it is not a whole number >= 0 or the
    forest's criterion is not Gini (the margins of gini_margin.py are Gini's)."""
    if isinstance(deletions, bool) or not isinstance(deletions, (int, np.integer)) or deletions < 0:
        raise ModelError(f"deletions must be a whole number >= 0, not {deletions!r}")
    if forest.criterion != "gini":
        raise ModelError(f"worst_case bounds forests of the gini criterion, not {forest.criterion}")
    return int(deletions)


def certified_fit(X, y, deletions: int, X_test, y_test, seeds: range, **settings):
    """``(forest, seed)``: of the random-node DareForest fits on ``X, y`` (``random_depth`` =
    ``max_depth``, the given settings) with ``random_state`` in ``seeds`` that :func:`worst_case`
    accepts at ``deletions``, the most accurate on ``X_test, y_test`` (the first of equals);
    None when none is certified. Random nodes, because the certificate accepts them far more
    often than greedy ones (docs/unlearning-certificates.md)."""
    from veritas_dsl.unlearning.dare import DareForest

    best = None
    for seed in seeds:
        depth = settings["max_depth"]
        forest = DareForest(random_depth=depth, random_state=seed, **settings).fit(X, y)
        if unstable_nodes(forest, int(deletions)):
            continue
        accuracy = float(np.mean((forest.predict_proba(X_test)[:, 1] > 0.5) == y_test))
        if best is None or accuracy > best[0]:
            best = (accuracy, forest, seed)
    return None if best is None else best[1:]


def leaf_bounds(count: np.ndarray, positives: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per leaf of ``count`` rows, ``positives`` of them positive, the least and the most
    ``positives' / count'`` after deleting at most ``k`` of its rows, keeping one: delete
    positives only (the fraction falls) or negatives only (it rises). Entries of 0 rows are 0."""
    return tuple(  # type: ignore[return-value]
        kept / rows for kept, rows in leaf_bound_fractions(count, positives, k)
    )


def unstable_nodes(forest: DareForest, k: int) -> list[UnstableNode]:
    """Every split node of ``forest`` that deleting some set of at most ``k`` of the remaining
    rows may change (made a leaf, split elsewhere, threshold moved, drawn again), by the
    sufficient conditions of docs/unlearning-certificates.md; empty when the structure is
    certified."""
    settings = forest._grower().settings
    X = forest._X.astype(np.float64)
    y = forest._y.astype(np.int64)
    found = []
    for t, tree in enumerate(forest._trees):
        stack = [(0, tree.rows_below(0), "")]
        while stack:
            node, rows, path = stack.pop()
            kind = tree.kind[node]
            if kind == LEAF:
                continue
            a, v = tree.feature[node], tree.threshold[node]
            go_left = X[rows, a] <= v
            band, rivals = None, ()
            if kind == RANDOM:
                reason = _random_reason(y[rows], go_left, k, settings.min_samples_leaf)
            else:
                assert kind == GREEDY
                seed = tree.seed[node]
                reason, (low, high), rivals = _greedy_reason(
                    X[rows], y[rows], a, v, seed, k, settings
                )
                if rivals:
                    band = (low, high)
                if not reason and low < high:
                    band = (low, high)
                    reason = (
                        f"its threshold can move within [{low:g}, {high:g}] (the rows next to "
                        f"it can all be deleted; no remaining row crosses it)"
                    )
            if reason:
                name = "random" if kind == RANDOM else "greedy"
                split = f"f{a} <= {v:g}"
                where = (t, node, path or "root")
                found.append(UnstableNode(*where, name, split, reason, band, tuple(rivals)))
            stack.append((tree.right[node], rows[~go_left], path + "R"))
            stack.append((tree.left[node], rows[go_left], path + "L"))
    return found


def _counts_reason(y: np.ndarray, go_left: np.ndarray, k: int, m: int) -> str:
    """Why deleting k rows may make the node a leaf or leave a side under m rows ('' if not)."""
    n, positives = len(y), int(y.sum())
    if min(positives, n - positives) <= k:
        return f"deleting {min(positives, n - positives)} row(s) leaves it pure (a leaf)"
    n_left = int(go_left.sum())
    smaller = min(n_left, n - n_left)
    if smaller - k < m:
        return f"a side holds {smaller} row(s): deleting {k} leaves fewer than {m}"
    return ""


def _random_reason(y, go_left, k: int, m: int) -> str:
    """A random node keeps its split while it is not pure and both sides keep m rows."""
    return _counts_reason(y, go_left, k, m)


def _greedy_reason(X, y, a: int, v: float, seed: int, k: int, settings) -> tuple:
    """``(reason, band, rivals)``: why some deletion of at most k of these rows may change the
    greedy choice ``x[a] <= v`` other than by moving its threshold without moving a row across
    it ('' if none can); the band ``(low, high)`` of thresholds it can move to so (``(v, v)``
    when it cannot move); and when the only other change is to another cut, the sides of every
    cut that may win (``(rows, positives)`` each; else empty). A change: the node turns into a
    leaf or a side falls under m rows; the values either side of the moved threshold turn
    invalid; the threshold drops out of the k sampled; some other cut's Gini can fall below
    the chosen one's."""
    m = settings.min_samples_leaf
    go_left = X[:, a] <= v
    reason = _counts_reason(y, go_left, k, m)
    if reason:
        return reason, (v, v), ()
    values, sizes, pos = _groups(X[:, a], y)
    below = int(np.searchsorted(values, v, side="right")) - 1  # the group just below v
    merges = _merges(sizes, below, k)
    band = tuple(float((values[i] + values[j]) / 2.0) for i, j in merges)
    for (i, j), between in merges.items():
        # Both groups pure with one label, each keeping a row of it: an invalid threshold.
        for keep, drop in ((pos, sizes - pos), (sizes - pos, pos)):
            cost = between + int(drop[i] + drop[j])
            if keep[i] > 0 and keep[j] > 0 and cost <= k:
                return (
                    f"deleting {cost} row(s) leaves the values either side of the threshold "
                    f"({values[i]:g}, {values[j]:g}) of one label: it turns invalid"
                ), (v, v), ()
    if settings.k is not None:
        reason = _sampling_reason(values, sizes, pos, band, v, seed, a, k, settings)
        if reason:
            return reason, (v, v), ()
    found = overtaking_cuts(X, y, a, below, k, m, _rivals(X, y, a, seed, k, settings))
    sides = tuple(side for cut in found for side in cut[4])
    return _margin_reason(found, k), (min(band), max(band)), sides


def _merges(sizes, below: int, k: int) -> dict[tuple[int, int], int]:
    """The value groups ``(i, j)``, ``i <= below < j``, that can end up either side of the
    threshold, each with the rows between them: at most k, which a deletion can all remove;
    the threshold then is their midpoint, and no remaining row changes side."""
    found = {}
    for i in range(below, -1, -1):
        between = int(sizes[i + 1 : below + 1].sum())
        if between > k:
            break
        for j in range(below + 1, len(sizes)):
            if between + int(sizes[below + 1 : j].sum()) > k:
                break
            found[(i, j)] = between + int(sizes[below + 1 : j].sum())
    return found


def _rivals(X, y, a: int, seed: int, k: int, settings) -> list[int]:
    """The attributes a deletion of at most k rows may let the node sample: attributes are
    taken in key order among those with a valid threshold, a set deletions only shrink
    (docs/unlearning-certificates.md); one that surely keeps a valid threshold
    (:func:`_robust_cuts`) stays ahead of those after it, so only the first ``max_features``
    such, and those before, count."""
    p, m = X.shape[1], settings.min_samples_leaf
    if settings.max_features >= p:
        return list(range(p))
    rivals, robust = [], 0
    for b in np.argsort(attribute_keys(seed, p)).tolist():
        if robust == settings.max_features:
            break
        values, sizes, pos = _groups(X[:, b], y)
        if not _valid_cuts(values, sizes, pos, m).any():
            continue  # no valid threshold now: none after deletions either
        rivals.append(b)
        robust += bool(_robust_cuts(sizes, pos, k, m).any())
    assert a in rivals
    return rivals


def _valid_cuts(values, sizes, pos, m: int) -> np.ndarray:
    """Per cut between adjacent distinct values, whether its threshold is valid (kernels.py)."""
    n = int(sizes.sum())
    left = np.cumsum(sizes)[:-1]
    pure0, pure1 = pos == 0, pos == sizes
    both = (pure0[:-1] & pure0[1:]) | (pure1[:-1] & pure1[1:])
    return ~both & (left >= m) & (n - left >= m)


def _robust_cuts(sizes, pos, k: int, m: int) -> np.ndarray:
    """Per cut, whether it stays a valid threshold after any deletion of at most k rows: both
    values keep a row, both labels keep a row among them, and both sides keep m rows."""
    n = int(sizes.sum())
    left = np.cumsum(sizes)[:-1]
    pair_pos = pos[:-1] + pos[1:]
    pair_neg = sizes[:-1] + sizes[1:] - pair_pos
    return (
        (sizes[:-1] > k) & (sizes[1:] > k) & (pair_pos > k) & (pair_neg > k)
        & (left - k >= m) & (n - left - k >= m)
    )  # fmt: skip


def _groups(column: np.ndarray, y: np.ndarray):
    """The distinct values of ``column`` (increasing), each one's row count and positives."""
    values, inverse = np.unique(column, return_inverse=True)
    sizes = np.bincount(inverse, minlength=len(values))
    pos = np.bincount(inverse, weights=y, minlength=len(values)).astype(np.int64)
    return values, sizes, pos


def _sampling_reason(values, sizes, pos, band, v, seed, a, k, settings) -> str:
    """Each threshold of ``band`` the chosen one can move to stays among the ``settings.k``
    sampled (smallest keys) of its attribute's valid thresholds: deletions only remove valid
    thresholds but for the new midpoints of values whose rows between are all deleted; at most
    k such appear."""
    valid = _valid_cuts(values, sizes, pos, settings.min_samples_leaf)
    mids = (values[:-1] + values[1:]) / 2.0
    keys = np.array([threshold_key(seed, a, t) for t in mids[valid]], dtype=np.uint64)
    for t in band:
        key = threshold_key(seed, a, t)
        # an equal key may sort first: count it; the chosen threshold itself does not count
        smaller = int(np.count_nonzero(keys <= key)) - (t == v)
        merged = 0
        for i in range(len(values)):  # midpoints of values i < j with at most k rows between
            between = 0
            for j in range(i + 2, len(values)):
                between += int(sizes[j - 1])
                if between > k:
                    break
                merged += threshold_key(seed, a, (values[i] + values[j]) / 2.0) <= key
        if smaller + min(k, merged) >= settings.k:
            return (
                f"the key of its threshold {t:g} ranks {smaller + 1} of the valid thresholds, "
                f"and {merged} threshold(s) a deletion can create rank before it: it may not "
                f"be sampled (k = {settings.k})"
            )
    return ""


def _margin_reason(found: list, k: int) -> str:
    """Why another cut may beat the chosen one by Gini after some deletion ('' if none can)."""
    if not found:
        return ""
    b, t, least, chosen, _ = found[0]
    more = f" (and {len(found) - 1} other cut(s))" if len(found) > 1 else ""
    return (
        f"the cut f{b} <= {t:g} can overtake it after {k} deletion(s) (its Gini sum can fall "
        f"to {least:.6g}, the chosen cut's is {chosen:.6g} now){more}"
    )
