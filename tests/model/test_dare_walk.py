"""What the one-call walk (veritas_dsl/unlearning/dare/walk.py) reads must stay what the tree is: the
node table and the leaves' row pool equal the node lists and leaves after every deletion, and
each greedy node's cache, read from the flat pools through its slot as the kernel reads it,
holds exactly the valid thresholds of key at most its bound with their counts, as the cache
``best_split`` builds from the node's remaining rows says (node for node), the valid ones of
an attribute in increasing key order when there are more than ``k``."""

from __future__ import annotations

import numpy as np
from dare_helpers import tied_data
from hypothesis import example, given, settings
from hypothesis import strategies as st

from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare.kernels import ALL, threshold_keys
from veritas_dsl.unlearning.dare.splits import greedy_choice
from veritas_dsl.unlearning.dare.tree import GREEDY, LEAF
from veritas_dsl.unlearning.dare.walk import COUNT, FIELDS, ROWS

from conftest import examples


def _flat_cache(tree, node: int) -> tuple | None:
    slots, attrs, bound, cand, cand_values = tree.cache.arrays()
    if node >= len(slots) or slots[node, 1] < 0:
        return None
    a, na, c, nc = slots[node].tolist()
    return attrs[a : a + na], bound[a : a + na], cand[c : c + nc], cand_values[c : c + nc]


def check_flat(forest: DareForest) -> int:
    """Assert the flat arrays are the tree (module docstring); return the caches checked."""
    grower = forest._grower()
    y, msl = forest._y, forest.min_samples_leaf
    checked = 0
    for tree in forest._trees:
        for column, name in enumerate(FIELDS):
            if name != "rows":
                assert tree.table[:, column].tolist() == list(getattr(tree, name)), name
        assert tree.thresholds.tolist() == tree.threshold
        for node in range(len(tree.kind)):
            if tree.kind[node] == LEAF:
                start, count = tree.table[node, ROWS], tree.table[node, COUNT]
                assert tree.rows.held[start : start + count].tolist() == tree.rows[node].tolist()
                assert np.all(tree.leaf_of[tree.rows[node]] == node)
            flat = _flat_cache(tree, node)
            assert (flat is None) == (node not in tree.cache)
            if flat is None:
                continue
            assert tree.kind[node] == GREEDY
            attrs, bound, cand, values = flat
            # follow_deletion reads each attribute's rows as one block, in the order taken.
            blocks = [a for i, a in enumerate(cand[:, 0].tolist()) if i == 0 or cand[i - 1, 0] != a]
            assert blocks == attrs.tolist(), node
            rows = tree.rows_below(node)
            # Every valid threshold with its counts: best_split's cache with k=None.
            _, every = greedy_choice(
                y, rows, tree.seed[node], None, grower.settings.max_features, msl,
                grower.presorted,
            )  # fmt: skip
            sampled, own = greedy_choice(
                y, rows, tree.seed[node], forest.k, grower.settings.max_features, msl,
                grower.presorted,
            )  # fmt: skip
            assert (sampled.attribute, sampled.threshold) == (
                tree.feature[node],
                tree.threshold[node],
            )
            assert attrs.tolist() == own[0].tolist()
            if every is None:  # too many thresholds to cache them all: the node is too big here
                continue
            for i, a in enumerate(attrs.tolist()):
                of_a = np.flatnonzero(every[2][:, 0] == a)
                mids = every[3][of_a].sum(axis=1) / 2.0
                keys = threshold_keys(tree.seed[node], a, mids)
                expected = {
                    tuple(every[3][c]): tuple(every[2][c, 1:7])
                    for c, key in zip(of_a, keys, strict=True)
                    if bound[i] == ALL or key <= bound[i]
                }
                alive = np.flatnonzero((cand[:, 0] == a) & (cand[:, 7] == 1))
                assert {tuple(values[c]): tuple(cand[c, 1:7]) for c in alive} == expected
                # follow_deletion samples the first k valid rows: in key order when more.
                alive_keys = threshold_keys(tree.seed[node], a, values[alive].sum(axis=1) / 2.0)
                ordered = np.all(alive_keys[:-1] < alive_keys[1:])
                assert ordered or not 0 < (forest.k or 0) < len(alive), (node, a)
            checked += 1
    return checked


@settings(max_examples=examples(0.4), deadline=None)
@given(
    data=tied_data(max_rows=40, max_columns=4),
    k=st.sampled_from([None, 1, 2]),
    random_depth=st.integers(0, 2),
    min_samples_leaf=st.integers(1, 3),
)
@example(
    data=(np.arange(12, dtype=np.float32)[:, None] % 5, np.arange(12) % 3 == 0, 1),
    k=1,
    random_depth=0,
    min_samples_leaf=1,
)
def test_the_flat_arrays_follow_every_deletion(data, k, random_depth, min_samples_leaf):
    X, y, seed = data
    forest = DareForest(
        n_trees=3, max_depth=4, k=k, max_features=2, random_depth=random_depth,
        min_samples_leaf=min_samples_leaf, random_state=seed % 1000,
    ).fit(X, y.astype(int))  # fmt: skip
    check_flat(forest)
    for r in np.random.default_rng(seed).permutation(len(X))[: len(X) - 1]:
        forest.delete([int(r)])
        check_flat(forest)


def test_the_flat_caches_are_checked_on_a_forest_that_keeps_them():
    """Continuous columns with many thresholds: caches followed by deletions (not rebuilt)
    exist and are checked, and their pools are packed when garbage outgrows them."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int)
    forest = DareForest(n_trees=2, max_depth=5, k=2, max_features=2).fit(X, y)
    assert check_flat(forest) > 0
    for r in rng.permutation(300)[:150].tolist():
        forest.delete([r])
    assert check_flat(forest) > 0
    for tree in forest._trees:
        slots = tree.cache.arrays()[0]
        live = int(slots[slots[:, 1] >= 0, 3].sum())
        assert tree.cache._used[1] == live + tree.cache._garbage
        assert tree.cache._garbage <= live + max(len(c[2]) for c in tree.cache.values())
