"""Check an imported Ensemble against the library model it came from.

Points on thresholds are where importers go wrong, so besides data rows and random points, every
split gets a point exactly on its threshold and one and two float32 steps either side of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from veritas_dsl.model.ensemble import Ensemble, ModelError
from veritas_dsl.model.library import margin_close

_UP, _DOWN = np.float32(np.inf), np.float32(-np.inf)
_LARGEST = float(np.finfo(np.float32).max)


@dataclass(frozen=True)
class ParityReport:
    """How closely ``Ensemble.eval`` matched the library on a set of points.

    ``worst_error`` is ``max |library - ours| / max(1, |library|)``; ``mismatches`` counts points
    beyond the tolerance, and ``first_mismatch`` is one of them (None when all match).
    """

    points: int
    worst_error: float
    mismatches: int
    first_mismatch: np.ndarray | None

    @property
    def ok(self) -> bool:
        return self.mismatches == 0


def around(values: np.ndarray) -> np.ndarray:
    """Each float32 value with its finite neighbours one and two steps away on both sides (a
    threshold at the largest float32 has none above: inputs are never infinite)."""
    values = np.asarray(values, dtype=np.float32)
    with np.errstate(over="ignore"):
        down, up = np.nextafter(values, _DOWN), np.nextafter(values, _UP)
        near = np.concatenate([np.nextafter(down, _DOWN), down, values, up, np.nextafter(up, _UP)])
    return near[np.isfinite(near)]


def probe_points(
    model: Ensemble,
    data: np.ndarray | None = None,
    seed: int = 0,
    extra_thresholds: list[tuple[int, float]] | None = None,
    n_random: int = 500,
) -> dict[str, np.ndarray]:
    """Named float32 point sets: ``rows`` (the data, if given), ``random`` and ``thresholds``.

    Without data, points are built around the thresholds each feature is split on.
    ``extra_thresholds`` adds ``(feature, threshold)`` pairs as the library stores them.
    """
    rng = np.random.default_rng(seed)
    inner = model.feature >= 0
    splits = list(zip(model.feature[inner], model.threshold[inner], strict=True))
    splits += [(f, np.float32(t)) for f, t in extra_thresholds or []]
    if data is None:
        base = np.zeros(model.n_features, dtype=np.float32)
        lo, hi = base - 1, base + 1
        for f, t in splits:
            lo[f], hi[f] = min(lo[f], t), max(hi[f], t)
        rows = np.empty((0, model.n_features), dtype=np.float32)
    else:
        rows = np.asarray(data, dtype=np.float32).reshape(-1, model.n_features)
        lo, hi = rows.min(axis=0), rows.max(axis=0)
    lo, hi = lo.astype(np.float64), hi.astype(np.float64)  # float32 would overflow near 3e38
    span = np.maximum(hi - lo, 1.0)
    low = np.maximum(lo - 0.2 * span, -_LARGEST)
    high = np.minimum(hi + 0.2 * span, _LARGEST)
    random = rng.uniform(low, high, size=(n_random, model.n_features))
    random = random.astype(np.float32)
    backgrounds = rows if len(rows) else random
    on_thresholds = []
    for k, (f, t) in enumerate(splits):
        for v in around(np.array([t])):
            point = backgrounds[k % len(backgrounds)].copy()
            point[f] = v
            on_thresholds.append(point)
    thresholds = np.array(on_thresholds, dtype=np.float32).reshape(-1, model.n_features)
    return {"rows": rows, "random": random, "thresholds": thresholds}


def compare(
    model: Ensemble,
    expected: Callable[[np.ndarray], np.ndarray],
    points: dict[str, np.ndarray],
    tolerance: float = 1e-5,
) -> ParityReport:
    """Compare ``model.eval`` with ``expected`` (the library's raw output) on every point set."""
    X = np.concatenate([p for p in points.values() if len(p)])
    ours = model.eval(X)
    theirs = np.asarray(expected(X), dtype=np.float64).reshape(ours.shape)
    close = margin_close(theirs, ours, tolerance)
    error = np.abs(theirs - ours) / np.maximum(1.0, np.abs(theirs))
    bad_rows = np.nonzero(~close.reshape(len(X), -1).all(axis=1))[0]
    return ParityReport(
        points=len(X),
        worst_error=float(error.max(initial=0.0)),
        mismatches=len(bad_rows),
        first_mismatch=X[bad_rows[0]] if len(bad_rows) else None,
    )


def check_library(model: Ensemble, data: np.ndarray | None = None) -> ParityReport:
    """Compare ``model`` with the library model it was imported from."""
    if model.library is None:
        raise ModelError(f"{model.source} has no library model to compare with")
    return compare(model, model.library.predict, probe_points(model, data))
