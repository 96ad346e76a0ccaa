"""The worst-case certificate of greedy DaRE forests (issue 43): a greedy threshold may move within
its band, the node may take a rival cut or be grown afresh, and the bounds still hold. On small
data, every deletion of every k-subset (k = 1, 2) is made with ``delete``, and the forest it
gives lies between the bounds at every point of a grid through every threshold; a counterfactual
certified on the lower bound stays granted."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from veritas_dsl.model.errors import ModelError
from veritas_dsl.unlearning import DareForest, worst_case
from veritas_dsl.unlearning.dare.certificate import UnstableError, unstable_nodes
from veritas_dsl.unlearning.dare.point_bounds import point_bounds

from conftest import examples

#: Greedy settings: every threshold, every attribute; one attribute of two, thresholds sampled;
#: and the defaults but for the size.
GREEDY = [
    dict(k=None, max_features=None),
    dict(k=2, max_features=1),
    dict(),
]

#: Every multiple of 1/4 from -0.5 to 4.5 per attribute: thresholds are midpoints of whole
#: numbers, so each cell between two of them holds a point.
AXIS = np.arange(-0.5, 4.75, 0.25)
GRID = np.array(list(itertools.product(AXIS, repeat=2)), dtype=np.float32)


@st.composite
def small_data(draw):
    n = draw(st.integers(6, 10))
    X = np.array(draw(st.lists(st.tuples(*[st.integers(0, 4)] * 2), min_size=n, max_size=n)))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    return X.astype(np.float32), y


@st.composite
def blocks(draw):
    """Attribute 0 in {0, ..., 4} with 1 to 3 rows per value (single rows next to a threshold
    make it move), labels mostly ``x0 >= 2``; attribute 1 noise. At most 12 rows."""
    sizes = draw(st.lists(st.integers(1, 3), min_size=5, max_size=5))
    x0 = np.repeat(np.arange(5), sizes)[:12]
    flips = np.array(draw(st.lists(st.booleans(), min_size=len(x0), max_size=len(x0))))
    x1 = np.array(draw(st.lists(st.integers(0, 4), min_size=len(x0), max_size=len(x0))))
    y = ((x0 >= 2) ^ (flips & (np.arange(len(x0)) % 3 == 0))).astype(int)
    return np.stack([x0, x1], 1).astype(np.float32), y


def _check(forest: DareForest, n: int, k: int) -> None:
    """The bounds hold, and every point certified class 1 (0) stays so, on every deletion of
    exactly k rows (fewer are checked through the enumeration of the k-subsets' prefixes)."""
    lower, upper = worst_case(forest, k)
    low, high = lower.eval(GRID), upper.eval(GRID)
    granted, refused = low > 0.5, high < 0.5
    for size in range(1, k + 1):
        for rows in itertools.combinations(range(n), size):
            value = copy.deepcopy(forest).delete(list(rows)).predict_proba(GRID)[:, 1]
            bad = np.flatnonzero((value < low) | (value > high))
            assert len(bad) == 0, (rows, GRID[bad[0]], low[bad[0]], value[bad[0]], high[bad[0]])
            assert np.all(value[granted] > 0.5) and np.all(value[refused] < 0.5)


@settings(
    max_examples=examples(2), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    data=st.one_of(small_data(), blocks()),
    config=st.sampled_from(range(len(GREEDY))),
    depth=st.integers(1, 3),
    k=st.sampled_from([1, 2]),
    seed=st.integers(0, 3),
)
def test_greedy_bounds_hold_on_every_k_subset_deletion(data, config, depth, k, seed):
    X, y = data
    if len(set(y.tolist())) < 2:
        return
    forest = DareForest(n_trees=2, max_depth=depth, random_state=seed, **GREEDY[config])
    forest.fit(X, y)
    _check(forest, len(X), k)


def test_a_threshold_between_single_rows_moves_within_its_band():
    """The root cuts between the single rows at 3 and 4: deleting either moves it (3.5 to 3 or
    to 4), so the node is named, with its band, and the bounds still hold."""
    X = np.arange(8, dtype=np.float32)[:, None]
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    forest = DareForest(n_trees=1, max_depth=1, k=None, max_features=None).fit(X, y)
    (node,) = unstable_nodes(forest, 1)
    assert node.band == (3.0, 4.0) and "can move within [3, 4]" in node.reason
    lower, upper = worst_case(forest, 1)
    points = np.array([[2.9], [3.0], [3.2], [4.0], [4.1]], dtype=np.float32)
    # Below and above the band the leaf's bounds; within it, both leaves' extremes.
    assert lower.eval(points).tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert upper.eval(points).tolist() == [0.0, 0.0, 1.0, 1.0, 1.0]
    for r in range(8):
        after = copy.deepcopy(forest).delete([r]).predict_proba(points)[:, 1]
        assert np.all(lower.eval(points) <= after) and np.all(after <= upper.eval(points))


def test_a_default_greedy_forest_is_certified_at_k_1_where_it_was_refused():
    """A default DareForest (greedy, 10 thresholds sampled) on whole numbers, one row at 2: every
    tree cuts at 1.5, and deleting that row moves the cut to 2, which split the rows the same
    way; refused before (a single row next to the threshold), certified now: 0 and 1 are class 0
    and 3 and 4 class 1 after every one-row deletion, 2 (inside the band) is not certified."""
    x = np.array([0] * 6 + [1] * 6 + [2] + [3] * 6 + [4] * 6, dtype=np.float32)
    X, y = x[:, None], (x >= 2).astype(int)
    forest = DareForest(random_state=0).fit(X, y)
    nodes = unstable_nodes(forest, 1)
    assert len(nodes) == 100 and all(node.band == (1.5, 2.0) for node in nodes)
    lower, upper = worst_case(forest, 1)
    domain = np.arange(5, dtype=np.float32)[:, None]
    assert lower.eval(domain).tolist() == [0, 0, 0, 1, 1]
    assert upper.eval(domain).tolist() == [0, 0, 1, 1, 1]
    for r in range(len(x)):
        after = copy.deepcopy(forest).delete([r]).predict_proba(domain)[:, 1]
        assert after[[0, 1]].tolist() == [0, 0] and after[[3, 4]].tolist() == [1, 1]


def test_random_nodes_that_may_change_are_still_refused():
    X = np.arange(8, dtype=np.float32)[:, None]
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    forest = DareForest(n_trees=1, max_depth=1, random_depth=1, random_state=1).fit(X, y)
    nodes = unstable_nodes(forest, 4)
    assert nodes and all(node.kind == "random" for node in nodes)
    try:
        worst_case(forest, 4)
    except UnstableError as error:
        assert [node.kind for node in error.nodes] == ["random"]
    else:
        raise AssertionError("a random node that may change was certified")


@settings(
    max_examples=examples(2), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    data=st.one_of(small_data(), blocks()),
    config=st.sampled_from(range(len(GREEDY) + 1)),
    depth=st.integers(1, 3),
    k=st.sampled_from([1, 2]),
    seed=st.integers(0, 3),
)
def test_point_bounds_hold_on_every_k_subset_deletion(data, config, depth, k, seed):
    """``point_bounds`` follows the cuts a deletion can lead to (random nodes too, the last
    configuration): every deletion of at most k rows lies within them at every grid point."""
    X, y = data
    if len(set(y.tolist())) < 2:
        return
    settings_ = GREEDY[config] if config < len(GREEDY) else dict(random_depth=1)
    forest = DareForest(n_trees=2, max_depth=depth, random_state=seed, **settings_).fit(X, y)
    low, high = point_bounds(forest, GRID, k)
    for size in range(1, k + 1):
        for rows in itertools.combinations(range(len(X)), size):
            value = copy.deepcopy(forest).delete(list(rows)).predict_proba(GRID)[:, 1]
            bad = np.flatnonzero((value < low) | (value > high))
            assert len(bad) == 0, (rows, GRID[bad[0]], low[bad[0]], value[bad[0]], high[bad[0]])


def test_point_bounds_certify_what_the_worst_case_ensembles_cannot():
    """Four attributes of four values, 160 rows, a greedy forest of depth 3: its nodes that may
    change are bounded by their counts in ``worst_case`` (no point certified), while following
    their possible cuts certifies most points; every one-row deletion keeps them granted."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(160, 4)).astype(np.float32)
    y = ((X[:, 0] + X[:, 1] >= 3) ^ (rng.random(160) < 0.1)).astype(int)
    forest = DareForest(n_trees=5, max_depth=3, min_samples_leaf=5, random_state=0).fit(X, y)
    grid = np.array(list(itertools.product(range(4), repeat=4)), dtype=np.float32)
    low, high = point_bounds(forest, grid, 1)
    ensemble_low = worst_case(forest, 1)[0].eval(grid)
    granted = low > 0.5
    assert np.sum(ensemble_low > 0.5) < np.sum(granted)
    for r in range(len(X)):
        value = copy.deepcopy(forest).delete([r]).predict_proba(grid)[:, 1]
        assert np.all(value >= low) and np.all(value <= high)
        assert np.all(value[granted] > 0.5)


def test_point_bounds_refuse_bad_arguments():
    X = np.arange(8, dtype=np.float32)[:, None]
    forest = DareForest(n_trees=1, max_depth=1).fit(X, np.arange(8) >= 4)
    for bad in (-1, 1.5, True):
        with pytest.raises(ModelError, match="whole number"):
            point_bounds(forest, X, bad)
    with pytest.raises(ModelError, match="1 columns"):
        point_bounds(forest, np.zeros((2, 3)), 1)
    with pytest.raises(ModelError, match="numbers"):
        point_bounds(forest, [["a"]], 1)
    three = DareForest(n_trees=1, max_depth=1).fit(X, np.arange(8) % 3)
    with pytest.raises(ModelError, match="two classes"):
        point_bounds(three, X, 1)
    gini = DareForest(n_trees=1, max_depth=1, criterion="entropy").fit(X, np.arange(8) >= 4)
    with pytest.raises(ModelError, match="gini"):
        point_bounds(gini, X, 1)
