"""A greedy subtree is a pure function of its rows and its root's seed (tree.child_seed), so a
subtree retired when its root's split changed can be grafted back when the split returns
(unlearning/dare/memo.py): deleting rows must give the very forest growing again gives."""

from __future__ import annotations

import copy

import numpy as np
from dare_helpers import DETERMINISTIC, assert_same_forest, structure, tied_data
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare import tree as dare_tree
from veritas_dsl.unlearning.dare.memo import graft
from veritas_dsl.unlearning.dare.tree import GREEDY, LEAF, Tree

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


def without_memos(forest: DareForest, ids) -> list[int]:
    """Delete ``ids`` one by one from ``forest``, forgetting every memo before each deletion;
    return each deletion's cost."""
    costs = []
    for r in ids:
        for tree in forest._trees:
            tree.memos.clear()
        forest.delete([int(r)])
        costs.append(forest.last_deletion_cost)
    return costs


def flip_data(seed: int = 0, n: int = 60) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Small tied data and a deletion order under which a node returns to an earlier split."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, (n, 3)).astype(np.float32)
    y = rng.integers(0, 2, n)
    return X, y, rng.permutation(n)[:30]


@settings(max_examples=examples(0.4), deadline=None)
@given(
    data=tied_data(max_rows=40, max_columns=4),
    random_depth=st.integers(0, 2),
    k=st.sampled_from([1, 2, None]),
)
def test_memos_change_nothing_but_the_cost(data, random_depth, k):
    X, y, seed = data
    params = dict(n_trees=3, max_depth=4, k=k, max_features=2, random_depth=random_depth)
    forest = DareForest(**params, random_state=seed % 1000).fit(X, y)
    plain = copy.deepcopy(forest)
    for r in np.random.default_rng(seed).permutation(len(X))[: len(X) - 2]:
        forest.delete([int(r)])
        without_memos(plain, [r])
        assert structure(forest) == structure(plain)
        assert forest._rng.bit_generator.state == plain._rng.bit_generator.state


def test_a_node_that_returns_to_its_split_grafts_its_old_subtree(tmp_path, monkeypatch):
    grafted = []
    monkeypatch.setattr(dare_tree, "graft", lambda *a: grafted.append(a) or graft(*a))
    X, y, order = flip_data()
    forest = DareForest(n_trees=1, max_depth=3, **DETERMINISTIC).fit(X, y)
    forest.save(tmp_path / "f.dare")
    plain = copy.deepcopy(forest)
    costs, total, plain_total = [], 0, 0
    for r in order:
        before = len(grafted)
        forest.delete([int(r)])
        cost = without_memos(plain, [r])[0]
        total, plain_total = total + forest.last_deletion_cost, plain_total + cost
        assert structure(forest) == structure(plain)
        assert_same_forest(forest, X, y)
        if len(grafted) > before:  # the memo path grafted; the plain one grew again
            costs.append((forest.last_deletion_cost, cost))
    # A graft costs the rows of the nodes on the deleted rows' paths, growing those of every node.
    assert len(costs) >= 2 and all(memo <= plain_cost for memo, plain_cost in costs), costs
    assert total < plain_total
    loaded = DareForest.load(tmp_path / "f.dare")  # no memos: the same forest all the same
    for r in order:
        loaded.delete([int(r)])
    assert structure(loaded) == structure(forest)
