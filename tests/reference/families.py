"""The brute force for family queries on three int features in [0, 4]: every cell, and whether
every forest of a family grants it."""

from __future__ import annotations

import itertools

import numpy as np

#: Every input of the features ``f0, f1, f2 : int in [0, 4]``.
CELLS = np.array(list(itertools.product(range(5), repeat=3)), np.float32)


def granted(forests, points) -> np.ndarray:
    """Whether every forest classifies each point 1 (probability above 0.5)."""
    return np.all([f.predict_proba(points)[:, 1] > 0.5 for f in forests], axis=0)
