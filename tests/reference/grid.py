"""A second, simpler exact reference for small box-constrained queries: the threshold grid.

Between consecutive thresholds of a feature every model is constant, so trying, per feature, each
threshold, the float32 just below it, and the box ends covers every cell. The Cartesian product of
those values, evaluated with ``Ensemble.eval``, gives exact optima of box-only queries. It shares
nothing with the oracle's enumeration of leaf combinations.
"""

from __future__ import annotations

import itertools

import numpy as np

from veritas_dsl.float32 import ceil32, floor32, next_down


def candidate_values(
    models, feature: int, lo: float, hi: float, integral: bool = False, extra=()
) -> list[float]:
    """Values of ``feature`` that meet every cell of the threshold grid inside ``[lo, hi]``, and
    the ``extra`` values there (a row's, so that a change count can leave the feature alone)."""
    values = {ceil32(lo) if np.isfinite(lo) else -1e6, floor32(hi) if np.isfinite(hi) else 1e6}
    values.update(float(np.float32(v)) for v in extra)
    for model in models:
        at = model.feature == feature
        for t in np.unique(model.threshold[at]):
            values.update((float(t), next_down(float(t))))
    if integral:
        values = {float(np.ceil(v)) for v in values} | {float(np.floor(v)) for v in values}
    return sorted(v for v in values if lo <= v <= hi)


def grid_points(models, bounds, integral=None, extra=None) -> np.ndarray:
    """Every grid point of the box ``bounds`` (a list of (lo, hi) per feature), float32;
    ``extra`` values per feature join the grid (see :func:`candidate_values`)."""
    integral = integral or [False] * len(bounds)
    extra = extra or [()] * len(bounds)
    axes = [
        candidate_values(models, f, lo, hi, integral[f], extra[f])
        for f, (lo, hi) in enumerate(bounds)
    ]
    return np.array(list(itertools.product(*axes)), dtype=np.float32).reshape(-1, len(bounds))


def cells(models, n_features: int):
    """Every cell of the threshold grid as ``(lo, hi)`` float32 bounds per feature (closed)."""
    axes = []
    for f in range(n_features):
        cuts = sorted({float(t) for m in models for t in m.threshold[m.feature == f]})
        lows = [-np.inf, *cuts]
        highs = [*(next_down(c) for c in cuts), np.inf]
        axes.append(list(zip(lows, highs, strict=True)))
    for combo in itertools.product(*axes):
        yield np.array([c[0] for c in combo]), np.array([c[1] for c in combo])


def representative(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """A point of the cell: its lower corner, or the upper one where the cell is unbounded below."""
    return np.where(np.isfinite(lo), lo, np.where(np.isfinite(hi), hi, 0.0)).astype(np.float32)
