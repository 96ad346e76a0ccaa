"""What the DaRE tests share: small data with ties, and comparing two forests node for node."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare.tree import LEAF

DETERMINISTIC = dict(k=None, max_features=None, random_depth=0)


@st.composite
def tied_data(draw, max_rows: int = 24, max_columns: int = 3):
    """Rows from a few values per column (ties, duplicate rows, constant columns), labels with
    both classes."""
    n = draw(st.integers(2, max_rows))
    p = draw(st.integers(1, max_columns))
    levels = draw(st.lists(st.integers(1, 4), min_size=p, max_size=p))  # 1: a constant column
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = np.stack([rng.integers(0, m, n) * 0.5 - 1.0 for m in levels], axis=1)
    y = rng.integers(0, 2, n)
    y[rng.choice(n, 2, replace=False)] = [0, 1]
    return X.astype(np.float32), y, seed


def structure(forest: DareForest, ids: np.ndarray | None = None) -> dict:
    """Every node's kind, attribute, threshold, children, counts and (leaves) row ids; row ids
    are renamed through ``ids`` (a forest fit on ``X[ids]`` numbers its rows 0, 1, ...)."""
    view = forest.view()
    rows = []
    for tree in forest._trees:
        for node in sorted(tree.rows):
            held = tree.rows[node]
            rows.append(tuple(held if ids is None else ids[held]))
    out = {
        name: getattr(view, name).tolist()
        for name in ("kind", "feature", "threshold", "left", "right", "count", "positives")
    }
    out["leaf_rows"] = rows
    out["leaf_values"] = view.leaf_values().tolist()
    return out


def assert_same_forest(edited: DareForest, X: np.ndarray, y: np.ndarray) -> None:
    """``edited`` is the forest a fit on its remaining rows gives, node for node; when those rows
    are of one class (fit refuses them) every tree is one leaf holding them all."""
    keep = edited.remaining()
    if len(set(y[keep].tolist())) == 1:
        view = edited.view()
        assert np.all(view.kind == LEAF) and len(view.kind) == edited.n_trees
        assert np.all(view.count == len(keep))
        return
    fresh = DareForest(**edited.params()).fit(X[keep], y[keep])
    assert structure(edited) == structure(fresh, keep)


def shape(forest: DareForest) -> tuple:
    view = forest.view()
    return tuple(getattr(view, n).tobytes() for n in ("kind", "feature", "left", "right"))


def ks(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical CDFs."""
    points = np.concatenate([a, b])
    cdf_a = np.searchsorted(np.sort(a), points, side="right") / len(a)
    cdf_b = np.searchsorted(np.sort(b), points, side="right") / len(b)
    return float(np.abs(cdf_a - cdf_b).max())


def ks_critical(n: int, m: int, alpha: float = 0.001) -> float:
    """The two-sample KS statistic's asymptotic upper ``alpha`` point for sizes ``n`` and ``m``."""
    return math.sqrt(-math.log(alpha / 2) / 2) * math.sqrt((n + m) / (n * m))
