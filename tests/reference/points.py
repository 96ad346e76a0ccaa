"""Input points that exercise an imported model: data rows, random points, and every threshold.

Points on thresholds are where importers go wrong: for each split, a data row is moved onto the
threshold and one and two float32 steps either side of it, for the threshold as the Ensemble
stores it and, when given, as the library stores it.
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.model import Ensemble
from veritas_dsl.model.ensemble import margin_close

STEP_UP, STEP_DOWN = np.float32(np.inf), np.float32(-np.inf)


def around(values: np.ndarray) -> np.ndarray:
    """Each float32 value and its neighbours one and two steps away."""
    values = np.asarray(values, dtype=np.float32)
    down = np.nextafter(values, STEP_DOWN)
    up = np.nextafter(values, STEP_UP)
    return np.concatenate(
        [np.nextafter(down, STEP_DOWN), down, values, up, np.nextafter(up, STEP_UP)]
    )


def parity_points(
    model: Ensemble, data: np.ndarray, seed: int = 0, library_thresholds=None
) -> dict:
    """Named sets of float32 points: ``rows``, ``random``, ``thresholds``."""
    rng = np.random.default_rng(seed)
    data = np.asarray(data, dtype=np.float32)
    lo, hi = data.min(axis=0), data.max(axis=0)
    span = np.maximum(hi - lo, 1.0)
    random = rng.uniform(lo - 0.2 * span, hi + 0.2 * span, size=(500, data.shape[1])).astype(
        np.float32
    )

    inner = model.feature >= 0
    splits = list(zip(model.feature[inner], model.threshold[inner], strict=True))
    if library_thresholds is not None:
        splits += [(f, np.float32(t)) for f, t in library_thresholds]
    rows = []
    for k, (f, t) in enumerate(splits):
        for v in around(np.array([t])):
            row = data[k % len(data)].copy()
            row[f] = v
            rows.append(row)
    thresholds = np.array(rows, dtype=np.float32).reshape(-1, data.shape[1])
    return {"rows": data, "random": random, "thresholds": thresholds}


def assert_parity(model: Ensemble, expected_fn, points: dict, tolerance: float = 1e-5) -> float:
    """Assert ``model.eval`` matches ``expected_fn`` on every point set; return the worst error."""
    worst = 0.0
    for name, X in points.items():
        ours = model.eval(X)
        theirs = np.asarray(expected_fn(X), dtype=np.float64).reshape(ours.shape)
        close = margin_close(theirs, ours, tolerance)
        bad = np.argwhere(~close)
        assert close.all(), (
            f"{name}: {len(bad)} mismatches; first at {X[bad[0][0]].tolist()}: "
            f"library {theirs[tuple(bad[0])]}, ensemble {ours[tuple(bad[0])]}"
        )
        worst = max(worst, float(np.max(np.abs(theirs - ours) / np.maximum(1, np.abs(theirs)))))
    return worst
