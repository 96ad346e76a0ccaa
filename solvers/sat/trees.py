"""The trees of an :class:`~.encode.Encoding`: leaf literals, and the leaves' cells.

One literal per leaf, for every tree of every (model, instance) pair the query reads. A leaf holds
exactly when the conditions on its path hold (``x < t`` is the negation of ``x >= t``); one leaf
per tree holds, since two leaves disagree on the split where their paths part.
"""

from __future__ import annotations

import numpy as np


class TreeClauses:
    """The tree part of :class:`~.encode.Encoding` (a mixin: it uses the encoding's literals,
    ``query``, ``var``, ``grids``, ``deadline``, and fills ``leaves`` and ``_boxes``)."""

    def encode_trees(self, model_name: str, instance: str) -> np.ndarray:
        """Leaf literals of every tree of ``model_name`` on ``instance`` (encoded once)."""
        key = (model_name, instance)
        if key in self.leaves:
            return self.leaves[key]
        model = self.query.models[model_name]
        i = self.query.instances.index(instance)
        literal = np.zeros(model.n_nodes, dtype=np.int64)
        for root in model.roots:
            self.deadline.check()
            in_tree = []
            stack: list[tuple[int, tuple[int, ...]]] = [(int(root), ())]
            while stack:
                node, path = stack.pop()
                f = int(model.feature[node])
                if f < 0:
                    leaf = self.new_var()
                    literal[node] = leaf
                    in_tree.append(leaf)
                    for condition in path:
                        self.clause([-leaf, condition])
                    self.clause([leaf, *(-c for c in path)])
                    continue
                split = self.ge(int(self.var[i, f]), float(model.threshold[node]))
                stack.append((int(model.right[node]), (*path, split)))
                stack.append((int(model.left[node]), (*path, -split)))
            self.clause(in_tree)
        self.leaves[key] = literal
        return literal

    def leaf_boxes(
        self, model_name: str, tree: int
    ) -> list[tuple[int, dict[int, tuple[int, int]]]]:
        """The leaves of one tree with the cells their paths allow: ``(node, {feature: (first
        cell, last cell)})``; an unreachable leaf has an empty range."""
        key = (model_name, tree)
        if key not in self._boxes:
            model = self.query.models[model_name]
            boxes = []
            stack: list[tuple[int, dict[int, tuple[int, int]]]] = [(int(model.roots[tree]), {})]
            while stack:
                node, box = stack.pop()
                f = int(model.feature[node])
                if f < 0:
                    boxes.append((node, box))
                    continue
                grid = self.grids[f]
                cut = grid.domain.ge(float(model.threshold[node]))
                k = grid.n_cells if cut is False else 0 if cut is True else grid.index(cut)
                lo, hi = box.get(f, (0, grid.n_cells - 1))
                stack.append((int(model.right[node]), {**box, f: (max(lo, k), hi)}))
                stack.append((int(model.left[node]), {**box, f: (lo, min(hi, k - 1))}))
            self._boxes[key] = boxes
        return self._boxes[key]

    def leaf_pairs(self, model_name: str, tree: int, first: str, second: str, limit: int):
        """Literals ``p <-> leaf_a on first and leaf_b on second`` for the pairs of leaves of one
        tree that can hold together (on a variable the two instances share, their cells meet):
        ``[(p, node_a, node_b)]``, or None when there are more than ``limit``.

        Exactly one pair holds in every model. For two instances tied on most features, a tree
        that does not split on the others has only the pairs ``(a, a)``.
        """
        boxes = self.leaf_boxes(model_name, tree)
        shared = (
            self.var[self.query.instances.index(first)]
            == self.var[self.query.instances.index(second)]
        )
        leaves = self.leaves
        pairs = []
        for node_a, box_a in boxes:
            for node_b, box_b in boxes:
                if all(
                    max(box_a[f][0], box_b[f][0]) <= min(box_a[f][1], box_b[f][1])
                    for f in box_a.keys() & box_b.keys()
                    if shared[f]
                ):
                    pairs.append((node_a, node_b))
                    if len(pairs) > limit:
                        return None
        la, lb = leaves[model_name, first], leaves[model_name, second]
        result = []
        for node_a, node_b in pairs:
            a, b = int(la[node_a]), int(lb[node_b])
            p = self.new_var()
            self.clauses += [[-p, a], [-p, b], [-a, -b, p]]
            result.append((p, node_a, node_b))
        self.clause([p for p, _, _ in result])
        return result
