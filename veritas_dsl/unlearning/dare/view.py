"""A frozen picture of a DaRE forest's trees as flat arrays, its predictions and its export.

``predict_proba`` walks the trees with the forest's own rule, ``x <= v`` in float64 on float32
inputs, and adds the leaves' fractions ``positives / (count * n_trees)`` exactly, rounding the
sum once (:mod:`veritas_dsl.model.fractions`), as :meth:`Ensemble.eval` adds the export's: its
``eval`` equals ``predict_proba[:, 1]`` exactly, a tie is 0.5 and a pure forest 1.0.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.fractions import LeafFractions
from veritas_dsl.model.library import LibraryModel, le_threshold_as_lt
from veritas_dsl.unlearning.dare.tree import LEAF, Tree


@dataclass(frozen=True, eq=False)
class ForestView:
    """Trees in preorder, concatenated; ``left``/``right`` are absolute indices (-1 at leaves)."""

    kind: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray  # float64, x <= threshold goes left
    left: np.ndarray
    right: np.ndarray
    count: np.ndarray
    positives: np.ndarray
    tree_offsets: np.ndarray
    n_features: int

    @classmethod
    def of(cls, trees: list[Tree], n_features: int) -> ForestView:
        sizes = [len(tree.kind) for tree in trees]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        parts: dict[str, list] = {name: [] for name in Tree.FIELDS}
        for tree, offset in zip(trees, offsets[:-1], strict=True):
            for name in Tree.FIELDS:
                values = np.asarray(getattr(tree, name))
                if name in ("left", "right"):
                    values = np.where(values >= 0, values + offset, -1)
                parts[name].append(values)
        arrays = {name: np.concatenate(parts[name]) for name in Tree.FIELDS if name != "seed"}
        view = cls(
            kind=arrays["kind"].astype(np.int8),
            feature=arrays["feature"].astype(np.int64),
            threshold=arrays["threshold"].astype(np.float64),
            left=arrays["left"].astype(np.int64),
            right=arrays["right"].astype(np.int64),
            count=arrays["count"].astype(np.int64),
            positives=arrays["positives"].astype(np.int64),
            tree_offsets=offsets,
            n_features=n_features,
        )
        for name in ("kind", "feature", "threshold", "left", "right", "count", "positives"):
            getattr(view, name).setflags(write=False)
        return view

    @property
    def n_trees(self) -> int:
        return len(self.tree_offsets) - 1

    def leaf_values(self) -> np.ndarray:
        """Each leaf's share of the output, ``positives / (count * n_trees)`` rounded once; 0 at
        splits."""
        return self.fractions.values()[:, 0]

    @cached_property
    def fractions(self) -> LeafFractions:
        """Each leaf's share of the output as a fraction, ``positives / (count * n_trees)``."""
        return self.shares(self.positives)

    def shares(self, numerator: np.ndarray, count: np.ndarray | None = None) -> LeafFractions:
        """Leaves' ``numerator / (count * n_trees)`` (``count``: the leaves' own); splits 0."""
        leaf = self.kind == LEAF
        count = self.count if count is None else count
        return LeafFractions(
            np.where(leaf, numerator, 0), np.where(leaf, np.maximum(count, 1) * self.n_trees, 1)
        )

    def leaves(self, X) -> np.ndarray:
        """The leaf each row reaches in each tree, shape ``(n, n_trees)``."""
        X = _inputs(X, self.n_features).astype(np.float64)
        node = np.broadcast_to(self.tree_offsets[:-1], (len(X), self.n_trees)).copy()
        rows = np.broadcast_to(np.arange(len(X))[:, None], node.shape)
        active = self.kind[node] != LEAF
        while active.any():
            at, r = node[active], rows[active]
            go_left = X[r, self.feature[at]] <= self.threshold[at]
            node[active] = np.where(go_left, self.left[at], self.right[at])
            active = self.kind[node] != LEAF
        return node

    def predict_proba(self, X) -> np.ndarray:
        """Column 1: the exact mean of the positive fractions, rounded once; column 0 the
        negative ones' (so that it is ``1 - column 1`` exactly where that is a float64)."""
        nodes = self.leaves(X)
        negatives = self.shares(self.count - self.positives)
        return np.concatenate([negatives.sums(nodes), self.fractions.sums(nodes)], axis=1)

    def to_ensemble(
        self, cls, values: LeafFractions | None = None, source: str = "DaRE forest", names=None
    ):
        """A binary ``cls`` (an Ensemble) with this forest's trees and leaf fractions, its
        features ``names`` (None: ``f0, f1, ...``). With other leaf ``values`` (a bound, not
        this forest) it has no library model: its ``eval`` is its own definition."""
        leaf = self.kind == LEAF
        library = LibraryModel(
            "DaRE forest", lambda X: self.predict_proba(X)[:, 1], np.arange(self.n_features)
        )
        fractions = self.fractions if values is None else values
        return cls(
            feature=np.where(leaf, -1, self.feature),
            threshold=np.where(leaf, np.float32(0), le_threshold_as_lt(self.threshold)),
            left=self.left,
            right=self.right,
            value=fractions.values(),
            tree_offsets=self.tree_offsets,
            base_score=np.zeros(1),
            feature_names=names or tuple(f"f{i}" for i in range(self.n_features)),
            task="binary",
            class_threshold=0.5,
            probability="identity",
            source=source,
            library=library if values is None else None,
            fractions=fractions,
        )


def _inputs(X, n_features: int) -> np.ndarray:
    try:
        X = np.array(X, dtype=np.float32, ndmin=2)
    except (TypeError, ValueError) as error:
        raise ModelError(f"the rows are not numbers: {error}") from None
    if X.ndim != 2 or X.shape[1] != n_features:
        raise ModelError(f"X has shape {X.shape}; the forest takes {n_features} columns")
    if np.isnan(X).any():
        raise ModelError("X contains NaN")
    return X
