"""Deleting one row sends only that row down the trees and trusts each greedy node's cache
(veritas_dsl/unlearning/dare/cache.py): it must give the very forest the slow path gives (every node
chosen again from its rows, ``DareForest._change``), random generator included, and leave every
cache holding exactly the valid thresholds of key at most its bound, with their counts."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
from dare_helpers import structure, tied_data
from hypothesis import example, given, settings
from hypothesis import strategies as st

from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare.kernels import ALL, threshold_keys
from veritas_dsl.unlearning.dare.splits import greedy_choice
from veritas_dsl.unlearning.dare.tree import GREEDY, LEAF, RANDOM

from conftest import examples


def _valid_thresholds(X, y, rows, a, min_samples_leaf) -> dict:
    """Every valid threshold of attribute ``a`` on ``rows``, by its two values: its left rows
    and positives, and the rows and positives at the values below and above (a reference
    written apart from the kernel)."""
    xs = X[rows, a].astype(np.float64)
    levels = np.unique(xs)
    counts = [(int((xs == v).sum()), int(y[rows][xs == v].sum())) for v in levels]
    out, seen, seen_pos = {}, 0, 0
    for i in range(len(levels) - 1):
        seen, seen_pos = seen + counts[i][0], seen_pos + counts[i][1]
        (n0, p0), (n1, p1) = counts[i], counts[i + 1]
        pure = (p0 == 0 and p1 == 0) or (p0 == n0 and p1 == n1)
        if not pure and seen >= min_samples_leaf and len(rows) - seen >= min_samples_leaf:
            out[(levels[i], levels[i + 1])] = (seen, seen_pos, n0, p0, n1, p1)
    return out


def check_caches(forest: DareForest) -> int:
    """Assert every greedy node's cache is what its rows make it (the attributes it takes,
    and per attribute every valid threshold of key at most the bound, no other, with their
    counts); return how many caches were checked."""
    grower = forest._grower()
    X, y, msl = forest._X, forest._y, forest.min_samples_leaf
    checked = 0
    for tree in forest._trees:
        for node, (attrs, bound, cand, values) in tree.cache.items():
            assert tree.kind[node] == GREEDY
            rows = tree.rows_below(node)
            fresh = greedy_choice(
                y, rows, tree.seed[node], forest.k, grower.settings.max_features, msl,
                grower.presorted,
            )  # fmt: skip
            assert (fresh[0].attribute, fresh[0].threshold) == (
                tree.feature[node],
                tree.threshold[node],
            )
            assert attrs.tolist() == fresh[1][0].tolist()
            for i, a in enumerate(attrs):
                valid = _valid_thresholds(X, y, rows, a, msl)
                mids = np.array([(lo + hi) / 2.0 for lo, hi in valid], dtype=np.float64)
                keys = threshold_keys(tree.seed[node], a, mids)
                expected = {
                    pair: counts
                    for (pair, counts), key in zip(valid.items(), keys, strict=True)
                    if bound[i] == ALL or key <= bound[i]
                }
                alive = np.flatnonzero((cand[:, 0] == a) & (cand[:, 7] == 1))
                cached = {tuple(values[c]): tuple(cand[c, 1:7]) for c in alive}
                assert cached == expected, (node, a)
            checked += 1
    return checked


def _delete_both_ways(forest: DareForest, r: int) -> DareForest:
    """Delete ``r`` from ``forest`` by the fast path and from a copy by the slow one; assert
    they agree and the caches hold; return the forest."""
    slow = copy.deepcopy(forest)
    alive = slow._alive.copy()
    alive[r] = False
    slow._change(alive, np.array([r]), adding=False)
    forest.delete([r])
    assert structure(forest) == structure(slow)
    assert forest.last_deletion_cost == slow.last_deletion_cost
    assert forest._rng.bit_generator.state == slow._rng.bit_generator.state
    check_caches(forest)
    return forest


@settings(max_examples=examples(0.5))
@given(
    data=tied_data(max_rows=30, max_columns=4),
    k=st.sampled_from([None, 1, 2, 3]),
    random_depth=st.integers(0, 3),
    max_features=st.sampled_from([None, 1, 2, "sqrt"]),
    min_samples_leaf=st.integers(1, 4),
)
@example(  # random nodes whose sides fall to m rows, then under
    data=(np.arange(10, dtype=np.float32)[:, None] % 7, np.arange(10) % 2, 3),
    k=None,
    random_depth=2,
    max_features=None,
    min_samples_leaf=2,
)
@example(
    data=(np.array([[0], [0], [1], [1]], np.float32), np.array([0, 1, 0, 1]), 0),
    k=1,
    random_depth=0,
    max_features=None,
    min_samples_leaf=1,
)
def test_one_deletion_at_a_time_equals_the_slow_path(
    data, k, random_depth, max_features, min_samples_leaf
):
    X, y, seed = data
    forest = DareForest(
        n_trees=2, max_depth=4, k=k, random_depth=random_depth, max_features=max_features,
        min_samples_leaf=min_samples_leaf, random_state=seed % 1000,
    ).fit(X, y)  # fmt: skip
    check_caches(forest)
    rng = np.random.default_rng(seed)
    for r in rng.permutation(len(X))[: len(X) - 1]:
        _delete_both_ways(forest, int(r))


def _events(forest: DareForest, r: int) -> set:
    """Which of the fast path's cases deleting ``r`` exercises, read from the caches it keeps
    and the nodes on its path."""
    seen = set()
    before = {}
    for tree in forest._trees:
        for cache in tree.cache.values():
            before[id(cache)] = (cache, [part.copy() for part in cache])
        node = 0
        while tree.kind[node] != 0:
            left = np.float64(forest._X[r, tree.feature[node]]) <= tree.threshold[node]
            child = tree.left[node] if left else tree.right[node]
            if tree.kind[node] == RANDOM and tree.count[child] == 1:
                seen.add("random side emptied")
            node = child
    _delete_both_ways(forest, r)
    if forest.last_deletion_cost > 0:
        seen.add("subtree grown again")
    for tree in forest._trees:
        for cache in tree.cache.values():
            if id(cache) not in before or before[id(cache)][0] is not cache:
                continue
            _, bound, cand, values = before[id(cache)][1]
            if np.any((cand[:, 7] == 1) & (cache[2][:, 7] == 0)):
                seen.add("threshold invalidated")
            moved = (cache[2][:, 7] == 1) & np.any(cache[3] != values, axis=1)
            if np.any(moved):
                seen.add("thresholds merged")
            if np.any(bound != cache[1]):
                seen.add("merged threshold evicted the largest key")
    return seen


def test_every_case_of_the_fast_path_meets_the_slow_path():
    """Continuous and tied columns, small k (spares run out, merged thresholds fall under the
    bound), random top levels: each case happens, and each time the two paths agree."""
    seen = set()
    for seed in range(6):
        rng = np.random.default_rng(seed)
        n = 80
        X = np.column_stack([rng.normal(size=n), rng.integers(0, 6, n), rng.normal(size=n)])
        y = (X[:, 0] + 0.3 * X[:, 1] + rng.normal(size=n) > 0.5).astype(int)
        params = dict(n_trees=3, max_depth=4, k=1 + seed % 2, max_features=2)
        forest = DareForest(**params, random_depth=seed % 3, random_state=seed).fit(X, y)
        for r in rng.permutation(n)[: n - 10]:
            seen |= _events(forest, int(r))
    assert seen == {
        "random side emptied",
        "subtree grown again",
        "threshold invalidated",
        "thresholds merged",
        "merged threshold evicted the largest key",
    }


def test_a_loaded_forest_builds_its_caches_as_deletions_need_them(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    forest = DareForest(n_trees=3, max_depth=4, k=2, random_depth=1).fit(X, y)
    forest.save(tmp_path / "f.dare")
    loaded = DareForest.load(tmp_path / "f.dare")
    assert check_caches(loaded) == 0
    for r in (3, 17, 42):
        forest.delete([r])
        _delete_both_ways(loaded, r)
        assert structure(loaded) == structure(forest)
    assert check_caches(loaded) > 0


def test_a_random_split_saved_before_m_counted_is_drawn_again_when_a_deletion_reaches_it():
    """data/random_m3_old.dare was written on main (a218029), when random nodes drew in
    ``[min, max)`` whatever ``min_samples_leaf`` (3 here): two roots leave 1 and 2 rows on a
    side. Both paths agree, and the first deletion (every deletion reaches the root) draws them
    again, leaving 3 rows a side."""
    forest = DareForest.load(Path(__file__).parent / "data" / "random_m3_old.dare")
    sides = [(t.count[t.left[0]], t.count[t.right[0]]) for t in forest._trees]
    assert sorted(min(pair) for pair in sides)[:2] == [1, 2]
    rng = np.random.default_rng(0)
    for i, r in enumerate(rng.permutation(forest.n_rows)[:30]):
        _delete_both_ways(forest, int(r))
        if i == 0:
            for tree in forest._trees:
                assert (
                    tree.kind[0] == LEAF
                    or min(tree.count[tree.left[0]], tree.count[tree.right[0]]) >= 3
                )
