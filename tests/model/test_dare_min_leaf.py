"""Random nodes honour ``min_samples_leaf`` (m): every split leaves at least m rows each side,
after fit, deletions and additions; a random node where no attribute can be split so is a leaf;
and with m = 1 forests are those main made before the rule (same draws, same files)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from dare_helpers import structure, tied_data
from hypothesis import example, given, settings
from hypothesis import strategies as st

from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare.splits import is_leaf
from veritas_dsl.unlearning.dare.tree import LEAF

from conftest import examples

DATA = Path(__file__).parent / "data"


def _splittable(values: np.ndarray, m: int) -> bool:
    """Some threshold leaves m rows each side: the m-th smallest value is below the m-th
    largest (written apart from the code under test)."""
    ordered = np.sort(values)
    return len(ordered) >= 2 * m and ordered[m - 1] < ordered[len(ordered) - m]


def _assert_leaves_hold_m_rows(forest: DareForest) -> None:
    m = forest.min_samples_leaf
    X, y = forest._X.astype(np.float64), forest._y
    for tree in forest._trees:
        stack = [(0, forest.remaining(), 0)]
        while stack:
            node, rows, depth = stack.pop()
            if tree.kind[node] == LEAF:
                assert node == 0 or len(rows) >= m, (node, len(rows), m)
                stops = is_leaf(len(rows), int(y[rows].sum()), depth, forest.max_depth, m)
                if depth < forest.random_depth and not stops:  # a random node that could split
                    assert not any(_splittable(X[rows, a], m) for a in range(X.shape[1]))
                continue
            left = X[rows, tree.feature[node]] <= tree.threshold[node]
            assert m <= left.sum() <= len(rows) - m, (node, int(left.sum()), len(rows), m)
            stack += [(tree.left[node], rows[left], depth + 1)]
            stack += [(tree.right[node], rows[~left], depth + 1)]


@settings(max_examples=examples(0.6))
@given(
    data=tied_data(max_rows=30, max_columns=3),
    random_depth=st.integers(1, 3),
    min_samples_leaf=st.integers(1, 4),
)
@example(  # a random root over [min, max) left one row on a side
    data=(np.array([[0], [1], [2], [3]], np.float32), np.array([0, 1, 0, 1]), 0),
    random_depth=1,
    min_samples_leaf=2,
)
def test_every_split_under_random_nodes_leaves_m_rows(data, random_depth, min_samples_leaf):
    X, y, seed = data
    params = dict(n_trees=2, max_depth=4, k=2, random_depth=random_depth)
    forest = DareForest(**params, min_samples_leaf=min_samples_leaf, random_state=seed % 1000)
    _assert_leaves_hold_m_rows(forest.fit(X, y))
    rng = np.random.default_rng(seed)
    for _ in range(12):
        alive = forest.remaining()
        chance = rng.random()
        if len(alive) > 2 and chance < 0.4:  # one row: the fast path (Grower.forget)
            forest.delete(rng.choice(alive, 1))
        elif len(alive) > 3 and chance < 0.7:  # several: the slow path (Grower.update)
            forest.delete(rng.choice(alive, 2, replace=False))
        else:
            forest.add(X[rng.integers(len(X), size=2)] + 0.5, rng.integers(0, 2, 2))
        _assert_leaves_hold_m_rows(forest)


def _fit() -> DareForest:
    """The forest in data/random_m1_before.dare: random top levels, m = 1."""
    rng = np.random.default_rng(11)
    n = 50
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 4, n), rng.integers(0, 2, n)])
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0.5).astype(int)
    forest = DareForest(n_trees=4, max_depth=4, k=2, random_depth=2, random_state=3)
    return forest.fit(X, y)


def _edit(forest: DareForest) -> DareForest:
    """The edits that turned data/random_m1_before.dare into data/random_m1_after.dare."""
    for r in (7, 19, 31):
        forest.delete([r])
    forest.delete([1, 2, 3, 40])
    forest.add(forest._X[[10, 20]] + 0.25, [1, 0])
    forest.add(forest._X[[0]] * 3, [0])
    return forest.delete([50])


def test_forests_with_one_row_a_leaf_are_those_main_made():
    """Both files were written on main (7e04ecd: greedy children's seeds derived, before the
    rule), by ``_fit`` and ``_edit``:
    fitting, and loading then editing, give them again node for node, generator included."""
    before, after = DareForest.load(DATA / "random_m1_before.dare"), _edit(_fit())
    assert structure(_fit()) == structure(before)
    saved = DareForest.load(DATA / "random_m1_after.dare")
    for edited in (_edit(before), after):
        assert structure(edited) == structure(saved)
        assert edited._rng.bit_generator.state == saved._rng.bit_generator.state
