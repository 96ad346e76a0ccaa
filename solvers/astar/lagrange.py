"""A Lagrangian (dual decomposition) upper bound on the maximum of one output (issue 44).

Each tree gets its own copy of the input; the copies are tied to one shared copy by multipliers
``lam[t, v, k]`` on the indicator "tree t's copy of feature v lies in t's own cell k" (cells between
t's thresholds on v; trees that never split on v need none). For any multipliers,

    L(lam) = base + sum_t max_leaf (value + sum_v max_{k in leaf's range on v} lam[t, v, k])
                  + sum_v max_{global cell j} (-sum_t lam[t, v, cell_t(j)])

bounds the maximum from above: at any input, with every copy equal to it, the terms in ``lam``
cancel. ``lam = 0`` gives the sum of best leaves (A*'s root bound). The minimisation of ``L`` is
by subgradient steps (Polyak's rule against an incumbent); every ``L`` seen is a bound, so the
least is kept. The steps search in float64, whose rounding can put ``L`` ulps below the maximum;
the bound returned is ``L`` at the best multipliers evaluated exactly (rationals) and rounded up.
A prototype on the whole input space (no static box): it measures how far the idea tightens the
root bound, it is not wired into the engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from veritas_dsl.model import Ensemble


@dataclass(frozen=True)
class Decomposition:
    """Flat arrays of one output of an ensemble. Multipliers live in one flat vector of
    ``n_lam`` entries, pair ``p`` (a tree and a feature it splits on) owning a slice of it."""

    base: float
    n_lam: int
    leaf_value: np.ndarray  # (n_leaves,), leaves grouped by tree
    tree_first_leaf: np.ndarray  # (n_trees,): reduceat offsets of the leaves
    row_leaf: np.ndarray  # (n_rows,): a row is a leaf and a pair of its tree
    row_pair: np.ndarray
    row_bounds: np.ndarray  # (2 * n_rows,): start, end of the row's range in the flat vector
    leaf_first_row: np.ndarray  # (n_leaves + 1,): the leaf's first row
    pair_start: np.ndarray  # (n_pairs + 1,)
    pair_feature: np.ndarray
    shared_lam: np.ndarray  # flat multiplier index per (pair, global cell) entry
    shared_cell: np.ndarray  # the global cell (over all features) of that entry
    pair_of_shared: np.ndarray  # the pair of that entry
    feature_first_cell: np.ndarray  # (n_features_used,): reduceat offsets of the global cells
    thresholds: list  # per feature used, its sorted float32 thresholds


def decompose(model: Ensemble, output: int = 0) -> Decomposition:
    """The pieces of ``L`` for ``model``'s ``output`` over the whole input space."""
    used = sorted({int(f) for f in model.feature if f >= 0})
    thresholds = {f: np.unique(model.threshold[model.feature == f]) for f in used}
    first_cell, n_cells = {}, 0
    for f in used:
        first_cell[f] = n_cells
        n_cells += len(thresholds[f]) + 1
    values, first_leaf, rows, pair_start, pair_feature = [], [], [], [0], []
    shared_lam, shared_cell, pair_of_shared, first_row = [], [], [], []
    for t in range(len(model.tree_offsets) - 1):
        lo, hi = int(model.tree_offsets[t]), int(model.tree_offsets[t + 1])
        own = {}
        for f in sorted({int(f) for f in model.feature[lo:hi] if f >= 0}):
            cuts = np.unique(model.threshold[lo:hi][model.feature[lo:hi] == f])
            p = len(pair_feature)
            own[f] = (p, cuts)
            pair_feature.append(f)
            start = pair_start[-1]
            pair_start.append(start + len(cuts) + 1)
            # global cell j lies in own cell searchsorted(cuts, its lower threshold, "right")
            lowers = np.concatenate([[-np.inf], thresholds[f]])
            shared_lam.append(start + np.searchsorted(cuts, lowers, side="right"))
            shared_cell.append(first_cell[f] + np.arange(len(lowers)))
            pair_of_shared.append(np.full(len(lowers), p))
        first_leaf.append(len(values))
        stack = [(lo, {f: (0, len(c) + 1) for f, (_, c) in own.items()})]
        while stack:
            node, ranges = stack.pop()
            f = int(model.feature[node])
            if f < 0:
                first_row.append(len(rows))
                values.append(float(model.value[node, output]))
                for g, (a, b) in ranges.items():
                    p = own[g][0]
                    rows.append((len(values) - 1, p, pair_start[p] + a, pair_start[p] + b))
                continue
            r = int(np.searchsorted(own[f][1], model.threshold[node]))  # x < cuts[r]: cells <= r
            a, b = ranges[f]
            for child, cut in ((model.left[node], (a, min(b, r + 1))),
                               (model.right[node], (max(a, r + 1), b))):
                if cut[0] < cut[1]:  # a leaf no input reaches has no copy to pick
                    stack.append((int(child), {**ranges, f: cut}))
    rows_a = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return Decomposition(
        base=float(model.base_score[output]),
        n_lam=pair_start[-1],
        leaf_value=np.array(values),
        tree_first_leaf=np.array(first_leaf, dtype=np.int64),
        row_leaf=rows_a[:, 0],
        row_pair=rows_a[:, 1],
        row_bounds=rows_a[:, 2:].ravel(),
        leaf_first_row=np.array([*first_row, len(rows)], dtype=np.int64),
        pair_start=np.array(pair_start, dtype=np.int64),
        pair_feature=np.array(pair_feature, dtype=np.int64),
        shared_lam=np.concatenate(shared_lam) if shared_lam else np.zeros(0, np.int64),
        shared_cell=np.concatenate(shared_cell) if shared_cell else np.zeros(0, np.int64),
        pair_of_shared=np.concatenate(pair_of_shared) if pair_of_shared else np.zeros(0, np.int64),
        feature_first_cell=np.array([first_cell[f] for f in used], dtype=np.int64),
        thresholds=[thresholds[f] for f in used],
    )


def evaluate(d: Decomposition, lam: np.ndarray):
    """``L(lam)`` and a subgradient (a vector of ``n_lam``), plus the shared copy's cells."""
    padded = np.append(lam, 0.0)  # reduceat's last end may equal n_lam
    row_max = np.maximum.reduceat(padded, d.row_bounds)[::2]
    leaf = d.leaf_value + np.bincount(d.row_leaf, row_max, minlength=len(d.leaf_value))
    tree_best = np.maximum.reduceat(leaf, d.tree_first_leaf)
    total = d.base + float(tree_best.sum())
    grad = np.zeros(d.n_lam)
    # each tree's best leaf, and in each of its rows the best own cell
    owner = np.repeat(np.arange(len(d.tree_first_leaf)), np.diff(
        np.append(d.tree_first_leaf, len(leaf))))
    chosen = np.flatnonzero(leaf == tree_best[owner])
    chosen = chosen[np.unique(owner[chosen], return_index=True)[1]]
    for leaf_id in chosen:
        r0 = d.leaf_first_row[leaf_id]
        r1 = d.leaf_first_row[leaf_id + 1]
        for r in range(r0, r1):
            a, b = d.row_bounds[2 * r], d.row_bounds[2 * r + 1]
            grad[a + int(np.argmax(lam[a:b]))] += 1.0
    if len(d.shared_cell):
        n_cells = int(d.shared_cell.max()) + 1
        shared = -np.bincount(d.shared_cell, lam[d.shared_lam], minlength=n_cells)
        best = np.maximum.reduceat(shared, d.feature_first_cell)
        total += float(best.sum())
        bounds = np.append(d.feature_first_cell, n_cells)
        cells = np.array([bounds[i] + int(np.argmax(shared[bounds[i]:bounds[i + 1]]))
                          for i in range(len(best))])
        picked = np.isin(d.shared_cell, cells)
        np.subtract.at(grad, d.shared_lam[picked], 1.0)
    else:
        cells = np.zeros(0, np.int64)
    return total, grad, cells


def sound_bound(d: Decomposition, lam: np.ndarray) -> float:
    """``L(lam)`` in exact rational arithmetic, rounded up to a float: never below the maximum.
    Maxima over single multipliers are exact in floats; only the sums need rationals."""
    padded = np.append(lam, 0.0)
    row_max = np.maximum.reduceat(padded, d.row_bounds)[::2]
    leaf = [Fraction(v) for v in d.leaf_value]
    for r, leaf_id in enumerate(d.row_leaf):
        leaf[leaf_id] += Fraction(float(row_max[r]))
    ends = [*d.tree_first_leaf[1:], len(leaf)]
    total = Fraction(d.base) + sum(
        (max(leaf[a:b]) for a, b in zip(d.tree_first_leaf, ends, strict=True)), Fraction(0))
    if len(d.shared_cell):
        n_cells = int(d.shared_cell.max()) + 1
        shared = [Fraction(0)] * n_cells
        for cell, k in zip(d.shared_cell, d.shared_lam, strict=True):
            shared[cell] -= Fraction(float(lam[k]))
        cuts = [*d.feature_first_cell, n_cells]
        total += sum((max(shared[cuts[i]:cuts[i + 1]]) for i in range(len(cuts) - 1)),
                     Fraction(0))
    rounded = float(total)
    return rounded if rounded >= total else math.nextafter(rounded, math.inf)


def minimise(d: Decomposition, steps: int, target: float, trace=None, patience: int = 10):
    """Subgradient descent on ``L`` from ``lam = 0`` with Polyak steps toward ``target`` (a value
    reached, e.g. an incumbent), halved after ``patience`` steps without progress; returns the
    least ``L`` seen. ``trace(L, lam)`` sees each."""
    lam = np.zeros(d.n_lam)
    best, mu, stall = np.inf, 1.0, 0
    for _ in range(steps):
        value, grad, _ = evaluate(d, lam)
        if trace is not None:
            trace(value, lam)
        if value < best - 1e-12 * abs(best):
            stall = 0
        else:
            stall += 1
            if stall >= patience:
                mu, stall = mu / 2, 0
        if value < best:
            best, best_lam = value, lam
        norm = float(grad @ grad)
        if norm == 0.0:  # every copy agrees: L is reached, the bound is exact
            break
        lam = lam - mu * max(value - target, 1e-9) / norm * grad
    return sound_bound(d, best_lam)


def box_cells(d: Decomposition, lo, hi) -> np.ndarray:
    """Per feature ``d`` uses (in ``thresholds``' order), the global cells ``[first, end)`` that
    meet the closed box ``lo[f] <= x[f] <= hi[f]`` (``lo``, ``hi`` indexed by model feature;
    the box must hold an input). Cell ``j`` holds the inputs with ``j`` thresholds at or below."""
    used = np.unique(d.pair_feature)
    return np.array([(np.searchsorted(cuts, np.float32(lo[f]), side="right"),
                      np.searchsorted(cuts, np.float32(hi[f]), side="right") + 1)
                     for f, cuts in zip(used, d.thresholds, strict=True)],
                    dtype=np.int64).reshape(-1, 2)  # fmt: skip


def box_bound(d: Decomposition, lam: np.ndarray, cells: np.ndarray) -> float:
    """``L(lam)`` restricted to the box of ``cells`` (as :func:`box_cells` gives them), in exact
    rationals rounded up: never below the maximum in the box. Only the leaves that meet the box
    count, and each leaf's and the shared copy's cells are cut to the box; at ``lam = 0`` it is
    the sum of each tree's best leaf in the box."""
    index = {int(f): i for i, f in enumerate(np.unique(d.pair_feature))}
    feature = [index[int(f)] for f in d.pair_feature]
    sizes = [len(d.thresholds[i]) + 1 for i in feature]
    of_pair = np.split(d.shared_lam, np.cumsum(sizes)[:-1])  # global cell -> flat multiplier
    first = [of_pair[p][cells[i, 0]] for p, i in enumerate(feature)]
    end = [of_pair[p][cells[i, 1] - 1] + 1 for p, i in enumerate(feature)]
    leaf: list = [Fraction(v) for v in d.leaf_value]
    for r, (leaf_id, p) in enumerate(zip(d.row_leaf, d.row_pair, strict=True)):
        a, b = max(d.row_bounds[2 * r], first[p]), min(d.row_bounds[2 * r + 1], end[p])
        if leaf[leaf_id] is not None:
            leaf[leaf_id] = leaf[leaf_id] + Fraction(float(lam[a:b].max())) if a < b else None
    ends = [*d.tree_first_leaf[1:], len(leaf)]
    total = Fraction(d.base) + sum(
        (max(v for v in leaf[a:b] if v is not None)
         for a, b in zip(d.tree_first_leaf, ends, strict=True)), Fraction(0))  # fmt: skip
    for i, (a, b) in enumerate(cells):
        shared = [Fraction(0)] * int(b - a)
        for p in (p for p, j in enumerate(feature) if j == i):
            for j in range(a, b):
                shared[j - a] -= Fraction(float(lam[of_pair[p][j]]))
        total += max(shared)
    rounded = float(total)
    return rounded if rounded >= total else math.nextafter(rounded, math.inf)
