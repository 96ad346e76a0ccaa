"""Models made from a saved :class:`DareForest`: the forest after deleting training rows, and the
forest fit again from scratch without them. The forest given is never changed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from veritas_dsl.unlearning.dare import DareForest


def deleted(forest: DareForest, ids) -> DareForest:
    """A copy of ``forest`` (:meth:`DareForest.copy`, its random generator copied too) that forgot
    the rows ``ids``: the forest ``forest.delete(ids)`` would make; raises ``ModelError`` as
    ``delete``."""
    return forest.copy().delete(ids)


def retrained(forest: DareForest, ids) -> DareForest:
    """A forest fit with ``forest``'s parameters and seed on its remaining rows but ``ids``
    (rows keep their id order); raises ``ModelError`` as ``fit`` (say, one class left)."""
    X, y = forest.training_rows()
    keep = ~np.isin(forest.remaining(), np.asarray(ids, dtype=np.int64))
    return type(forest)(**forest.params()).fit(X[keep], y[keep])


def id_problems(forest: DareForest, ids: Sequence[int]) -> list[tuple[int, str, int]]:
    """Why ``forest`` cannot delete some of ``ids`` (whole numbers, 0 or more): for each bad one,
    ``(position, reason, first)``, the reason ``"range"`` (no such row), ``"twice"`` (listed
    before, at position ``first``) or ``"deleted"`` (already forgotten); ``first`` is its own
    position but for ``"twice"``."""
    alive = set(forest.remaining().tolist())
    first: dict[int, int] = {}
    problems = []
    for k, value in enumerate(ids):
        if value >= forest.n_rows:
            problems.append((k, "range", k))
        elif value in first:
            problems.append((k, "twice", first[value]))
        elif value not in alive:
            problems.append((k, "deleted", k))
        first.setdefault(value, k)
    return problems
