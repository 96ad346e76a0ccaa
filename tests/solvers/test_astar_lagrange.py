"""The Lagrangian bound (``solvers/astar/lagrange.py``): a bound for every multiplier vector,
the subgradient's and random ones, against the brute-force oracle's exact maximum; at 0 it is
the sum of each tree's best leaf."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.ir import Feature, Maximize, OutputAtom, OutputTerm, Query
from veritas_dsl.model import Ensemble
from veritas_dsl.solvers.astar import lagrange
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.oracle.engine import OracleEngine

TERM = OutputTerm((OutputAtom(1.0, "m", "x"),))


def random_forest(seed: int, n_trees: int, depth: int, n_features: int) -> Ensemble:
    """Full trees on few features whose thresholds come from a small grid, so trees share
    thresholds and disagree on cells."""
    rng = np.random.default_rng(seed)
    feature, threshold, left, right, value, offsets = [], [], [], [], [], [0]
    for _ in range(n_trees):
        start = len(feature)
        n_nodes = 2 ** (depth + 1) - 1
        for i in range(n_nodes):
            internal = 2 * i + 1 < n_nodes
            feature.append(int(rng.integers(n_features)) if internal else -1)
            threshold.append(float(rng.integers(-3, 4)) / 2 if internal else 0.0)
            left.append(start + 2 * i + 1 if internal else -1)
            right.append(start + 2 * i + 2 if internal else -1)
            value.append([0.0 if internal else float(rng.integers(-8, 9)) / 4])
        offsets.append(len(feature))
    return Ensemble(
        feature=feature, threshold=threshold, left=left, right=right, value=value,
        tree_offsets=offsets, base_score=[0.25], feature_names=[f"f{i}" for i in range(n_features)],
    )  # fmt: skip


def exact_max(model: Ensemble, lo=None, hi=None) -> float:
    """The oracle's maximum, in the closed box ``[lo, hi]`` if given (per feature)."""
    n = len(model.feature_names)
    lo, hi = lo or [-np.inf] * n, hi or [np.inf] * n
    features = tuple(Feature(name, lo=a, hi=b)
                     for name, a, b in zip(model.feature_names, lo, hi, strict=True))
    q = Query("max", features, ("x",), {"m": model}, (), Maximize(TERM))
    result = OracleEngine().solve(q, Limits(timeout_s=60))
    assert result.lower == result.upper
    return result.lower


def one_tree(model: Ensemble, t: int) -> Ensemble:
    lo, hi = model.tree_offsets[t], model.tree_offsets[t + 1]
    left, right = (np.where(c[lo:hi] >= 0, c[lo:hi] - lo, -1) for c in (model.left, model.right))
    return Ensemble(
        feature=model.feature[lo:hi], threshold=model.threshold[lo:hi], left=left, right=right,
        value=model.value[lo:hi], tree_offsets=[0, hi - lo], base_score=[0.0],
        feature_names=model.feature_names,
    )  # fmt: skip


def best_leaves(model: Ensemble) -> float:
    """The sum of each tree's best reachable leaf: each tree's own exact maximum."""
    return float(model.base_score[0]) + sum(
        exact_max(one_tree(model, t)) for t in range(len(model.tree_offsets) - 1))


#: Small random forests, as the oracle measures them.
FORESTS = dict(
    seed=st.integers(0, 10**6), n_trees=st.integers(1, 5), depth=st.integers(1, 3),
    n_features=st.integers(1, 3),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(**FORESTS)
def test_every_multiplier_vector_gives_a_bound(seed, n_trees, depth, n_features):
    model = random_forest(seed, n_trees, depth, n_features)
    d = lagrange.decompose(model)
    optimum = exact_max(model)
    at_zero = lagrange.evaluate(d, np.zeros(d.n_lam))[0]
    assert at_zero == pytest.approx(best_leaves(model), abs=1e-9)
    seen = []
    best = lagrange.minimise(d, 40, optimum, trace=lambda value, lam: seen.append(value))
    rng = np.random.default_rng(seed)
    for _ in range(5):
        seen.append(lagrange.evaluate(d, rng.normal(0, 2, d.n_lam))[0])
    assert min(seen) >= optimum - 1e-9  # float64 values: may be ulps below
    assert best >= optimum  # the returned bound is exact, rounded up
    assert best == pytest.approx(min(seen[: len(seen) - 5]), abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(**FORESTS)
def test_the_exact_bound_is_never_below_the_maximum_even_by_ulps(seed, n_trees, depth, n_features):
    """Multipliers in tenths (not exact in binary) make float64 sums round; the exact
    evaluation rounded up stays at or above the oracle's maximum, with no tolerance."""
    model = random_forest(seed, n_trees, depth, n_features)
    d = lagrange.decompose(model)
    optimum = exact_max(model)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        lam = rng.integers(-30, 31, d.n_lam) / 10
        assert lagrange.sound_bound(d, lam) >= optimum
        assert lagrange.sound_bound(d, lam) >= lagrange.evaluate(d, lam)[0] - 1e-9


def test_a_float_sum_ulps_below_the_maximum_is_rounded_back_up():
    """Two depth-1 trees on one feature (maximum 0) where float64 gives ``L = -1.1e-16``:
    the tenths in the multipliers do not cancel in binary, in exact arithmetic they do."""
    model = random_forest(0, 2, 1, 1)
    d = lagrange.decompose(model)
    optimum = exact_max(model)
    assert d.n_lam == 4 and optimum == 0.0
    lam = np.array([0.9, 1.0, 0.1, 0.7])
    assert lagrange.evaluate(d, lam)[0] < optimum  # the float64 evaluation: unsound
    assert lagrange.sound_bound(d, lam) >= optimum


def test_the_steps_tighten_a_loose_sum_of_best_leaves():
    """Forests where the sum of best leaves is loose: the steps take some of it back."""
    tightened = 0
    for seed in range(20):
        model = random_forest(seed, 4, 2, 2)
        d = lagrange.decompose(model)
        optimum, loose = exact_max(model), best_leaves(model)
        best = lagrange.minimise(d, 100, optimum)
        assert optimum - 1e-9 <= best <= loose + 1e-12
        tightened += best < loose - 1e-6
    assert tightened >= 5, "the steps never tightened the bound: a weak test"


#: A box per feature: ends a quarter off the thresholds' grid of halves, or unbounded.
BOXES = st.lists(st.tuples(st.integers(-4, 4), st.integers(0, 5)), min_size=3, max_size=3)


def box_of(spec, n_features):
    """``(a, w)`` per feature: from ``a / 2 + 1/4`` (-inf at -4) over ``w / 2`` (+inf at 5)."""
    start = [a / 2 + 0.25 for a, _ in spec[:n_features]]
    lo = [-np.inf if a == -4 else x for x, (a, _) in zip(start, spec, strict=False)]
    hi = [np.inf if w == 5 else x + w / 2 for x, (_, w) in zip(start, spec, strict=False)]
    return lo, hi


@settings(max_examples=60, deadline=None)
@given(**FORESTS, spec=BOXES)
def test_a_box_bound_is_never_below_the_maximum_in_the_box(seed, n_trees, depth, n_features,
                                                           spec):
    """Per-state use: in a box, the restricted ``L`` at 0 is the sum of each tree's own maximum
    in the box, and at tuned (root) multipliers, the same warm ones in the box, and random ones
    it stays at or above the oracle's maximum in the box, with no tolerance."""
    model = random_forest(seed, n_trees, depth, n_features)
    d = lagrange.decompose(model)
    lo, hi = box_of(spec, n_features)
    cells = lagrange.box_cells(d, lo, hi)
    optimum = exact_max(model, lo, hi)
    own = float(model.base_score[0]) + sum(
        exact_max(one_tree(model, t), lo, hi) for t in range(n_trees))
    assert lagrange.box_bound(d, np.zeros(d.n_lam), cells) == pytest.approx(own, abs=1e-12)
    root: list = []
    lagrange.minimise(d, 40, exact_max(model), trace=lambda _, lam: root.append(lam))
    rng = np.random.default_rng(seed)
    for lam in [*root[-3:], *(rng.integers(-30, 31, d.n_lam) / 10 for _ in range(3))]:
        assert lagrange.box_bound(d, lam, cells) >= optimum


@settings(max_examples=30, deadline=None)
@given(**FORESTS)
def test_the_box_bound_of_the_whole_space_is_the_root_bound(seed, n_trees, depth, n_features):
    model = random_forest(seed, n_trees, depth, n_features)
    d = lagrange.decompose(model)
    cells = lagrange.box_cells(d, [-np.inf] * n_features, [np.inf] * n_features)
    lam = np.random.default_rng(seed).integers(-30, 31, d.n_lam) / 10
    assert lagrange.box_bound(d, lam, cells) == lagrange.sound_bound(d, lam)
