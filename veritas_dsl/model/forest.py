"""The shape of a forest held as flat child arrays: checking it, and putting it in order.

A forest here is ``left``/``right`` arrays of absolute node indices (-1 at leaves) and
``tree_offsets``: tree ``t`` owns nodes ``offsets[t]:offsets[t + 1]`` and its root is the first.
Engines walk these arrays without bounds checks, so a malformed forest (a child out of range, a
cycle, a node shared by two parents) must never reach them. Everything here is vectorised: models
have up to about a million nodes.
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.model.errors import ModelError


def where(offsets: np.ndarray, node: int) -> str:
    """``tree t, node k`` for an absolute node index, ``k`` counted within its tree."""
    tree = int(np.searchsorted(offsets, node, side="right")) - 1
    return f"tree {tree}, node {node - int(offsets[tree])}"


def check_offsets(offsets: np.ndarray, n_nodes: int) -> None:
    """Tree offsets rise strictly from 0 to ``n_nodes``: every tree has a root."""
    if len(offsets) < 2:
        raise ModelError("the model has no trees")
    if offsets[0] != 0 or offsets[-1] != n_nodes or np.any(np.diff(offsets) <= 0):
        raise ModelError("tree_offsets must rise strictly from 0 to the number of nodes")


def check_forest(
    leaf: np.ndarray, left: np.ndarray, right: np.ndarray, offsets: np.ndarray
) -> None:
    """Raise :class:`ModelError`, naming the tree and node, unless the arrays are a forest whose
    children come after their parent; ``leaf`` marks the leaves, whose children must be -1.

    It suffices that every child lies after its parent within the parent's tree and that every
    node but a root has exactly one parent: following parents then strictly decreases the index,
    so it ends at the root, and a tree of ``n`` nodes has ``n - 1`` edges, hence no cycle.
    """
    n = len(left)
    bad = np.nonzero(leaf & ((left != -1) | (right != -1)))[0]
    if len(bad):
        raise ModelError(f"{where(offsets, bad[0])} is a leaf with children")
    inner = np.nonzero(~leaf)[0]
    end = np.repeat(offsets[1:], np.diff(offsets))[inner]
    for side, child in (("left", left[inner]), ("right", right[inner])):
        bad = np.nonzero((child <= inner) | (child >= end))[0]
        if len(bad):
            node = inner[bad[0]]
            raise ModelError(
                f"{where(offsets, node)}: its {side} child {int(child[bad[0]])} is not a later "
                "node of the same tree"
            )
    parents = np.bincount(np.concatenate([left[inner], right[inner]]), minlength=n)
    parents[offsets[:-1]] += 1  # a root has no parent: count it as having one
    bad = np.nonzero(parents != 1)[0]
    if len(bad):
        node = bad[0]
        problem = "is reached from no parent" if parents[node] < 1 else "has two parents"
        raise ModelError(f"{where(offsets, node)} {problem}")


def parent_first_order(left: np.ndarray, right: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The nodes reachable from their tree's root, in an order where each follows its parent.

    Returns old indices in their new order: the given order when it already is a forest (see
    :func:`check_forest`), else breadth-first order per tree, which drops unreachable nodes (the
    deleted nodes a pruned XGBoost tree keeps). A node is a leaf when its left child is negative,
    and then both children must be -1; other children must lie within their tree, and no node may
    have two parents; otherwise :class:`ModelError`.
    """
    try:
        check_forest(left < 0, left, right, offsets)
        return np.arange(len(left))
    except ModelError:
        pass
    n = len(left)
    bad = np.nonzero((left < 0) & ((left != -1) | (right != -1)))[0]
    if len(bad):
        raise ModelError(f"{where(offsets, bad[0])} is a leaf with children")
    tree_of = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    inner = np.nonzero(left >= 0)[0]
    children = np.stack([left[inner], right[inner]], axis=1)
    inside = (children >= 0) & (children < n)
    inside[inside] = tree_of[children[inside]] == np.repeat(tree_of[inner], 2)[inside.ravel()]
    outside = ~inside
    if np.any(outside):
        row, side = np.argwhere(outside)[0]
        raise ModelError(
            f"{where(offsets, inner[row])}: its {('left', 'right')[side]} child "
            f"{int(children[row, side])} is not a node of the same tree"
        )
    parents = np.bincount(children.ravel(), minlength=n)
    parents[offsets[:-1]] += 1  # reaching a root from a node would close a cycle
    bad = np.nonzero(parents > 1)[0]
    if len(bad):
        raise ModelError(f"{where(offsets, bad[0])} has two parents, or is a root with one")
    # Each node has at most one parent and roots none, so every node is visited at most once.
    frontier = offsets[:-1].astype(np.int64)
    levels = [frontier]
    while len(frontier):
        frontier = frontier[left[frontier] >= 0]
        frontier = np.stack([left[frontier], right[frontier]], axis=1).ravel().astype(np.int64)
        levels.append(frontier)
    order = np.concatenate(levels)
    return order[np.argsort(tree_of[order], kind="stable")]


def reorder(
    order: np.ndarray, left: np.ndarray, right: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``left``, ``right`` and ``offsets`` of the forest keeping the nodes ``order`` lists, in
    that order (from :func:`parent_first_order`); other per-node arrays are indexed by ``order``."""
    position = np.full(len(left), -1, dtype=np.int64)
    position[order] = np.arange(len(order))
    kept_left, kept_right = left[order], right[order]
    leaf = kept_left < 0
    new_left = np.where(leaf, -1, position[np.maximum(kept_left, 0)])
    new_right = np.where(leaf, -1, position[np.maximum(kept_right, 0)])
    tree_of = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    sizes = np.bincount(tree_of[order], minlength=len(offsets) - 1)
    return new_left, new_right, np.concatenate([[0], np.cumsum(sizes)])


def skip_left(
    left: np.ndarray, right: np.ndarray, leaf: np.ndarray, skipped: np.ndarray, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One tree (root 0, children relative to it) without the splits ``skipped`` marks, each
    replaced by its left subtree: splits every number passes to the left, such as
    scikit-learn's splits of missing values from the rest (threshold +inf).

    Returns the old index of each node kept, parent first, and their children as new indices
    (-1 at leaves). Libraries' predictors follow children unchecked, so every child followed
    must be a node of the tree, reached once; otherwise :class:`ModelError` naming the node.
    """
    n = len(left)
    seen = np.zeros(n, dtype=bool)

    def visit(node: int, parent: int) -> int:
        if not 0 <= node < n or seen[node]:
            raise ModelError(
                f"{where}, node {parent}: its child {node} is not a node of the tree, or is "
                "reached twice"
            )
        seen[node] = True
        return node

    if n == 0:
        raise ModelError(f"{where} has no nodes")
    old: list[int] = []
    new_left: list[int] = []
    new_right: list[int] = []
    stack = [(visit(0, -1), -1, 0)]  # (old node, new parent, side)
    while stack:
        node, parent, side = stack.pop()
        while not leaf[node] and skipped[node]:
            node = visit(int(left[node]), node)
        new = len(old)
        old.append(node)
        new_left.append(-1)
        new_right.append(-1)
        if parent >= 0:
            (new_left if side == 0 else new_right)[parent] = new
        if not leaf[node]:
            stack.append((visit(int(right[node]), node), new, 1))
            stack.append((visit(int(left[node]), node), new, 0))
    return np.array(old), np.array(new_left), np.array(new_right)
