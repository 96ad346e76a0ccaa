"""A greedy subtree is a pure function of its rows and its root's seed (tree.child_seed), so a
subtree retired when its root's split changed can be grafted back when the split returns
(model/dare/memo.py): deleting rows must give the very forest growing again gives."""

from __future__ import annotations

import numpy as np
from dare_helpers import tied_data
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.model.dare.tree import GREEDY, LEAF, Tree
from veritas_dsl.unlearning import DareForest

from conftest import examples


def subtree(tree: Tree, node: int) -> list[tuple]:
    """The nodes under ``node`` in preorder, children as offsets from ``node`` (compact tree)."""
    out = []
    for j in range(node, tree.end[node]):
        kids = (-1, -1) if tree.kind[j] == LEAF else (tree.left[j] - node, tree.right[j] - node)
        rows = tuple(tree.rows[j].tolist()) if tree.kind[j] == LEAF else ()
        fields = (tree.kind[j], tree.feature[j], tree.threshold[j], tree.count[j])
        out.append((*fields, tree.positives[j], tree.seed[j], kids, rows))
    return out


def depths(tree: Tree) -> list[int]:
    depth = [0] * len(tree.kind)
    for j in range(len(tree.kind)):
        if tree.kind[j] != LEAF:
            depth[tree.left[j]] = depth[tree.right[j]] = depth[j] + 1
    return depth


def check_greedy_subtrees(forest: DareForest) -> int:
    """Every greedy node's subtree is what growing its rows with its seed gives, without
    drawing from the forest's generator; return how many were checked."""
    grower = forest._grower()
    state = forest._rng.bit_generator.state
    checked = 0
    for tree in forest._trees:
        depth = depths(tree)
        for node in range(len(tree.kind)):
            if tree.kind[node] != GREEDY:
                continue
            fresh = Tree()
            rows = tree.rows_below(node)
            grower._grow(fresh, fresh._new(), rows, depth[node], tree.seed[node])
            fresh.compact(len(forest._X))
            assert subtree(fresh, 0) == subtree(tree, node)
            checked += 1
    assert forest._rng.bit_generator.state == state
    return checked


@settings(max_examples=examples(0.4), deadline=None)
@given(
    data=tied_data(max_rows=30, max_columns=4),
    random_depth=st.integers(0, 2),
    k=st.sampled_from([1, 2, None]),
)
def test_every_greedy_subtree_is_a_grow_of_its_rows_with_its_seed(data, random_depth, k):
    X, y, seed = data
    params = dict(n_trees=3, max_depth=4, k=k, max_features=1, random_depth=random_depth)
    forest = DareForest(**params, random_state=seed % 1000).fit(X, y)
    order = np.random.default_rng(seed).permutation(len(X))[: len(X) - 2]
    check_greedy_subtrees(forest)
    for r in order:
        forest.delete([int(r)])
        check_greedy_subtrees(forest)
