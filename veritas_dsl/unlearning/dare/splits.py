"""How a DaRE node chooses its split from the rows it holds: the stopping rules, the greedy split
(computed by :mod:`.kernels`) and the random split of the top levels.

A greedy node's choice is a pure function of its rows and its 64-bit ``seed``: attributes are
taken in the order of keys ``hash(seed, attribute)``, thresholds by the smallest keys
``hash(seed, attribute, threshold)``. Fit and the re-evaluation after a deletion call the same
:func:`greedy_split`, so a node whose rows are those of a fresh fit makes the fresh fit's choice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from veritas_dsl.unlearning.dare.kernels import GINI, best_split

#: The most sampled thresholds a greedy node caches (``k=None`` on many rows would cache every
#: valid threshold); a node without a cache chooses again from its rows after a deletion.
CACHE_LIMIT = 4096


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


@dataclass(frozen=True, eq=False)
class Presorted:
    """Every row sorted by each attribute, laid out for the kernel: ``order[a]`` lists the row
    ids by increasing value of attribute ``a``, ``values[a]`` and ``labels[a]`` their values and
    labels in that order, ``columns`` is X transposed (one attribute's values contiguous),
    ``position[a, r]`` is where row ``r`` sits in ``order[a]``."""

    order: np.ndarray
    values: np.ndarray
    labels: np.ndarray
    columns: np.ndarray
    position: np.ndarray

    @classmethod
    def of(cls, X: np.ndarray, y: np.ndarray) -> Presorted:
        order = np.ascontiguousarray(np.argsort(X, axis=0, kind="stable").T)
        columns = np.ascontiguousarray(X.T)
        values = np.take_along_axis(columns, order, axis=1)
        position = np.empty_like(order)
        np.put_along_axis(position, order, np.arange(order.shape[1])[None, :], axis=1)
        return cls(order, values, np.ascontiguousarray(y[order]), columns, position)


def greedy_split(
    y: np.ndarray,
    rows: np.ndarray,
    seed: int,
    k: int | None,
    max_features: int,
    min_samples_leaf: int,
    presorted: Presorted,
    criterion: int = GINI,
) -> Split | None:
    """The best split of ``rows`` among the sampled candidates, or None when no attribute has a
    valid threshold (:func:`~.kernels.best_split` says how candidates are sampled and ties
    broken)."""
    return greedy_choice(
        y, rows, seed, k, max_features, min_samples_leaf, presorted, criterion
    )[0]


def greedy_choice(
    y: np.ndarray,
    rows: np.ndarray,
    seed: int,
    k: int | None,
    max_features: int,
    min_samples_leaf: int,
    presorted: Presorted,
    criterion: int = GINI,
) -> tuple[Split | None, tuple | None]:
    """:func:`greedy_split` and the node's cache (:mod:`.cache`; None when it would hold more
    than ``CACHE_LIMIT`` thresholds). A node holding most of the rows picks them out of
    ``presorted`` instead of sorting them (beyond about 2/3 of the rows that is cheaper than
    the radix sort of their ranks, on make_classification(100_000, 40))."""
    p = presorted
    use_presorted = 3 * len(rows) > 2 * p.order.shape[1]
    attribute, threshold, cached, cache = best_split(
        p.columns,
        y,
        rows,
        p.order,
        p.values,
        p.labels,
        p.position,
        use_presorted,
        seed,
        k or 0,
        max_features,
        min_samples_leaf,
        CACHE_LIMIT,
        criterion,
    )
    if attribute < 0:
        return None, None
    return Split(int(attribute), float(threshold)), cache if cached else None


def random_split(
    X: np.ndarray, rows: np.ndarray, rng: np.random.Generator, min_samples_leaf: int
) -> Split | None:
    """A random node's split: an attribute uniform among those that can be split leaving
    ``min_samples_leaf`` rows each side, a threshold uniform in its :func:`random_bounds`; None
    when no attribute can (with one row a side: every attribute is constant)."""
    low, high = random_bounds(X[rows], min_samples_leaf)
    splittable = np.nonzero(high > low)[0]
    if len(splittable) == 0:
        return None
    attribute = int(splittable[rng.integers(len(splittable))])
    return Split(attribute, random_threshold(low[attribute], high[attribute], rng))


def random_bounds(block: np.ndarray, min_samples_leaf: int) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``block`` (a node's rows), its ``m``-th smallest and ``m``-th largest
    value ``(v_(m), v_(n-m+1))`` in float64, ``m = min_samples_leaf``: a threshold in
    ``[low, high)`` leaves at least ``m`` rows each side, and only those do; a column can be
    split when ``low < high`` (``m = 1``: ``[min, max)``). Fewer than ``2m`` rows: none can."""
    block = block.astype(np.float64)
    m, n = min_samples_leaf, len(block)
    if m == 1:
        return block.min(axis=0), block.max(axis=0)
    if n < 2 * m:
        return np.full(block.shape[1], np.inf), np.full(block.shape[1], -np.inf)
    part = np.partition(block, (m - 1, n - m), axis=0)
    return part[m - 1], part[n - m]


def random_threshold(low: float, high: float, rng: np.random.Generator) -> float:
    """A threshold uniform in ``[low, high)`` (``low < high``)."""
    threshold = low + rng.random() * (high - low)
    return float(threshold if low <= threshold < high else low)  # rounding may reach high
