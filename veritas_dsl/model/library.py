"""What an importer shares with the library it reads: the library model kept for validation, the
tasks, and how a library's split thresholds and outputs map onto ours.

Importers build an :class:`~veritas_dsl.model.ensemble.Ensemble` through the class they are given
(``Ensemble.from_xgboost`` passes itself), so they import nothing from ``ensemble.py`` and the
facades there can import them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from veritas_dsl.model.errors import ModelError

Task = Literal["regression", "binary", "multiclass"]

#: More features than any model we know of; a larger count is a corrupt file, not a model.
MAX_FEATURES = 1_000_000
#: The most leaf values an Ensemble holds (nodes x outputs, float64: 2 GiB). A file of a few
#: kilobytes can declare 100,000 classes, and its leaf table would be sized by that.
MAX_LEAF_VALUES = 1 << 28


@dataclass(frozen=True)
class LibraryModel:
    """The original library model an Ensemble was imported from, kept to validate witnesses.

    ``raw_margin(X)`` takes float32 inputs in the library's own feature order, shape
    ``(n, n_library_features)``, and returns the library's raw output, shape ``(n,)`` or
    ``(n, n_outputs)``; ``columns[j]`` is the Ensemble feature that feeds library column ``j``.
    ``tree_votes(X)``, for libraries whose trees predict a class on their own (scikit-learn
    classifier forests), returns the class index each tree predicts, shape ``(n, n_trees)``.
    """

    name: str
    raw_margin: Callable[[np.ndarray], np.ndarray]
    columns: np.ndarray
    tree_votes: Callable[[np.ndarray], np.ndarray] | None = None

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Raw output of the library model on ``X`` given in the Ensemble's feature order."""
        return np.asarray(self.raw_margin(np.ascontiguousarray(X[:, self.columns])))

    def votes(self, X: np.ndarray, n_labels: int) -> np.ndarray | None:
        """Votes per class on ``X`` (Ensemble feature order), shape ``(n, n_labels)``, as the
        library's own trees cast them; None when the library has no per-tree classes."""
        if self.tree_votes is None:
            return None
        labels = np.asarray(self.tree_votes(np.ascontiguousarray(X[:, self.columns])))
        return np.stack([(labels == c).sum(axis=1) for c in range(n_labels)], axis=1)


def leaf_table(n_nodes: int, n_outputs: int, where: str) -> np.ndarray:
    """Zeros for the leaf values of ``n_nodes`` nodes and ``n_outputs`` outputs; a table over
    :data:`MAX_LEAF_VALUES` is a :class:`ModelError` before anything is allocated."""
    if n_nodes * n_outputs > MAX_LEAF_VALUES:
        raise ModelError(
            f"{where}: {n_nodes:,} nodes with {n_outputs:,} outputs each would need "
            f"{n_nodes * n_outputs:,} leaf values, more than the {MAX_LEAF_VALUES:,} allowed"
        )
    return np.zeros((n_nodes, n_outputs))


def le_threshold_as_lt(threshold: np.ndarray) -> np.ndarray:
    """float32 thresholds ``s`` with ``x < s`` exactly when ``x <= t`` for every float32 ``x``.

    Libraries that split on ``x <= t`` with a float64 ``t`` (scikit-learn, LightGBM) compare the
    float32 input in float64. The float32 inputs with ``x <= t`` are those up to ``d``, the
    largest float32 not above ``t``; so ``s`` is the float32 right after ``d``. Rounding ``t`` to
    the nearest float32 first would be wrong when it rounds up.
    """
    t = np.asarray(threshold, dtype=np.float64)
    # From the largest float32 up, every input goes left: ``s`` is +inf (numpy's overflow warning
    # says nothing more).
    with np.errstate(over="ignore"):
        down = t.astype(np.float32)
        above = down.astype(np.float64) > t
        down[above] = np.nextafter(down[above], np.float32(-np.inf))
        return np.nextafter(down, np.float32(np.inf))


def margin_close(expected: np.ndarray, actual: np.ndarray, tolerance: float = 1e-5) -> np.ndarray:
    """Elementwise: ``|expected - actual| <= tolerance * max(1, |expected|)``."""
    expected = np.asarray(expected, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    return np.abs(expected - actual) <= tolerance * np.maximum(1.0, np.abs(expected))
