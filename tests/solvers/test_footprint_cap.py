"""The verified cap (veritas_dsl/unlearning/cap.py): the product trees are each tree's clipped
change, exactly, and every exact engine proves the capped model's footprint at most tau, with
a witness where the footprint reaches its maximum.

The forests are small (2 features of whole numbers 0..7, 3 trees of depth 3, random nodes so
that a deletion retrains subtrees): the brute-force oracle answers, and every cell of the grid
of half-integers is one input of each cell of every tree."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from veritas_dsl.ir import Maximize, Minimize
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.solve import solve
from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.cap import CapError, cap, clipped, draw_noise, product
from veritas_dsl.unlearning.dare.derive import deleted
from veritas_dsl.unlearning.leakage import footprint_query

from conftest import require

ENGINES = ("astar", "milp", "sat", "oracle")
#: Every cell of a forest on whole numbers 0..7 (thresholds are half-integers).
GRID = np.array(list(itertools.product(np.arange(-0.5, 8.5, 0.5), repeat=2)), np.float32)


def forests(seed: int):
    """A forest and, after deleting 3 rows, its Ensembles before and after."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(60, 2)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.normal(0, 2, 60) > 7).astype(int)
    before = DareForest(n_trees=3, max_depth=3, k=2, random_depth=1, random_state=seed)
    before.fit(X, y)
    after = deleted(before, rng.choice(60, 3, replace=False))
    return before.to_ensemble(), after.to_ensemble()


def tree_values(model, X) -> list[list[Fraction]]:
    """Each tree's leaf value at each row of ``X``, exactly."""
    leaves = model.leaves(X)
    num, den = model.fractions.numerator[:, 0], model.fractions.denominator[:, 0]
    return [[Fraction(int(num[n]), int(den[n])) for n in row] for row in leaves]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("clip", [Fraction(0), Fraction(1, 200), Fraction(1, 30), Fraction(1)])
def test_each_product_tree_is_before_plus_the_clipped_change(seed, clip):
    before, after = forests(seed)
    capped = clipped(before, after, product(before, after), clip)
    assert capped.n_trees == before.n_trees
    points = np.concatenate(
        [GRID, np.random.default_rng(seed).uniform(-2, 10, size=(200, 2)).astype(np.float32)]
    )
    old, new, got = (tree_values(m, points) for m in (before, after, capped))
    for o_row, n_row, g_row in zip(old, new, got, strict=True):
        for o, n, g in zip(o_row, n_row, g_row, strict=True):
            assert g == o + max(-clip, min(clip, n - o))
    if clip == 1:  # no clip binds: Mu' is Mu as a function
        assert np.array_equal(capped.eval(points), after.eval(points))


def test_an_unchanged_tree_is_the_before_tree_bit_for_bit():
    before, _ = forests(0)
    same = clipped(before, before, product(before, before), Fraction(1, 100))
    for name in ("feature", "threshold", "left", "right", "value"):
        assert np.array_equal(getattr(same, name), getattr(before, name))
    assert np.array_equal(same.fractions.denominator, before.fractions.denominator)


def grid_footprint(before, model) -> float:
    return float(np.abs(model.eval(GRID) - before.eval(GRID)).max())


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("seed", range(3))
def test_every_engine_proves_the_cap_with_a_witness_at_its_maximum(name, seed):
    require(registry.get(name))
    before, after = forests(seed)
    uncapped = grid_footprint(before, after)
    assert uncapped > 0.02, uncapped  # the deletion changed something to cap
    for tau in (uncapped / 2, uncapped / 5, 0.002):
        found = cap(before, after, tau, engine=name, steps=6, timeout_s=None)
        exact = grid_footprint(before, found.model)  # every input's value is a grid cell's
        assert found.proven and found.footprint <= tau
        assert found.reached == pytest.approx(exact, abs=1e-12)
        assert found.footprint == pytest.approx(exact, abs=1e-12)
        point = np.array([found.point], np.float32)
        at = abs(float(found.model.eval(point)[0] - before.eval(point)[0]))
        assert at == found.reached
        # Every engine, asked itself, agrees on the published pair.
        for other in ENGINES:
            if registry.get(other).available():
                for goal, sign in ((Maximize, 1), (Minimize, -1)):
                    query = footprint_query(before, found.model, goal)
                    result = solve(registry.get(other), query)
                    assert result.exact
                    assert sign * (result.upper if sign > 0 else result.lower) <= tau


def test_without_an_engine_the_cap_holds_by_the_trees_alone():
    before, after = forests(1)
    for tau in (0.2, 0.05, 0.01, 0.0):
        found = cap(before, after, tau, steps=0)
        assert found.steps == 0 and found.reached is None and not found.proven
        assert grid_footprint(before, found.model) <= found.footprint <= tau
    assert cap(before, after, 0.0, steps=0).clip == 0.0


def test_a_cap_above_the_footprint_publishes_the_model_after():
    before, after = forests(2)
    found = cap(before, after, 1.0, steps=0)
    assert np.array_equal(found.model.eval(GRID), after.eval(GRID))
    assert found.uncapped >= grid_footprint(before, after)


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("seed", range(3))
def test_every_engine_proves_the_noisy_cap_on_the_model_published(name, seed):
    require(registry.get(name))
    before, after = forests(seed)
    tau = grid_footprint(before, after) / 2
    found = cap(before, after, tau, engine=name, steps=6, timeout_s=None, noise=0.8, seed=seed)
    exact = grid_footprint(before, found.model)
    assert found.proven and exact <= found.footprint <= tau
    assert found.footprint == pytest.approx(exact, abs=1e-12)
    point = np.array([found.point], np.float32)
    assert abs(float(found.model.eval(point)[0] - before.eval(point)[0])) == found.reached
    # The noise reaches trees the deletion left alone: every tree moved somewhere.
    moved = np.abs(
        np.array(tree_values(found.model, GRID), float) - np.array(tree_values(before, GRID), float)
    ).max(axis=0)
    assert np.all(moved > 0), moved


def test_the_noise_is_bounded_seeded_and_keeps_probabilities():
    before, after = forests(3)
    tau, share = 0.05, 0.5
    trees = product(before, after)
    first = draw_noise(trees, Fraction(share * tau), seed=7)
    assert first == draw_noise(trees, Fraction(share * tau), seed=7)
    assert first != draw_noise(trees, Fraction(share * tau), seed=8)
    per_tree = Fraction(share * tau) / before.n_trees
    assert first and all(abs(d) <= per_tree for d in first.values())
    assert max(abs(d) for d in first.values()) > per_tree / 2  # drawn over the whole range
    # Without a clip the published trees differ from Mo's by the noise alone, also at pure
    # leaves (0 or 1/T), which move both ways (held within [0, 1/T], they gave the attack a
    # signal).
    model = clipped(before, after, trees, Fraction(0), first)
    old, new = tree_values(before, GRID), tree_values(model, GRID)
    for o_row, n_row in zip(old, new, strict=True):
        for o, n in zip(o_row, n_row, strict=True):
            assert abs(n - o) <= per_tree
    pure = [(o, n) for o_row, n_row in zip(old, new, strict=True)
            for o, n in zip(o_row, n_row, strict=True) if o == 0]  # fmt: skip
    assert any(n < 0 for _, n in pure) and any(n > 0 for _, n in pure)
    found = cap(before, after, tau, steps=0, noise=share, seed=7)
    again = cap(before, after, tau, steps=0, noise=share, seed=7)
    assert np.array_equal(found.model.value, again.model.value) and found.clip == again.clip
    assert grid_footprint(before, found.model) <= found.footprint <= tau


def test_the_noise_share_is_checked():
    before, after = forests(0)
    for bad in (-0.1, 1.0, float("nan"), "0.5"):
        with pytest.raises(CapError, match="noise"):
            cap(before, after, 0.1, noise=bad)
    for bad in (-1, 1.5, True):
        with pytest.raises(CapError, match="seed"):
            cap(before, after, 0.1, noise=0.5, seed=bad)


def test_the_cap_refuses_what_it_cannot_cap():
    before, after = forests(0)
    with pytest.raises(CapError, match="tau"):
        cap(before, after, -0.1)
    with pytest.raises(CapError, match="tau"):
        cap(before, after, float("nan"))
    with pytest.raises(CapError, match="steps"):
        cap(before, after, 0.1, steps=-1)
    with pytest.raises(CapError, match="engine"):
        cap(before, after, 0.1, engine="nosuch")
    plain = before.__class__(**{**before.__dict__, "fractions": None, "library": None})
    with pytest.raises(CapError, match="fractions"):
        cap(plain, after, 0.1)
    other, _ = forests(5)
    smaller = DareForest(n_trees=2, max_depth=2).fit(*_rows()).to_ensemble()
    with pytest.raises(CapError, match="tree counts"):
        cap(other, smaller, 0.1)


def _rows():
    X = np.arange(20, dtype=np.float32).reshape(10, 2)
    return X, np.arange(10) % 2
