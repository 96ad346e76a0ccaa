"""The A* engine builds a model's search trees once and reuses them (``solvers/astar/memo.py``):
a hit answers as a miss, and nothing memoised for one model reaches another, even one of the
same shape, or the same model under another box or other leaf contributions."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from veritas_dsl.ir import (
    Feature,
    Maximize,
    Minimize,
    MinimizeDistance,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Query,
    Row,
)
from veritas_dsl.ir.evaluate import distance, exact_distance
from veritas_dsl.model import Ensemble
from veritas_dsl.solvers.astar import memo
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits

#: Every input of the grid the models split on (thresholds at .5), and a little beyond.
GRID = np.array(list(itertools.product(np.arange(-1, 6, 0.5), repeat=2)), np.float32)


def forest(seed: int, shape_seed: int = 0) -> Ensemble:
    """Six trees of depth 2 on two features; ``shape_seed`` fixes the splits, ``seed`` the leaves."""
    shape = np.random.default_rng(shape_seed)
    leaves = np.random.default_rng(seed)
    feature, threshold, left, right, value, offsets = [], [], [], [], [], [0]
    for _ in range(6):
        base = offsets[-1]
        f = shape.integers(0, 2, 3)
        t = shape.integers(0, 5, 3) + 0.5
        feature += [f[0], f[1], f[2], -1, -1, -1, -1]
        threshold += [t[0], t[1], t[2], 0, 0, 0, 0]
        left += [base + 1, base + 3, base + 5, -1, -1, -1, -1]
        right += [base + 2, base + 4, base + 6, -1, -1, -1, -1]
        value += [0, 0, 0, *leaves.normal(0, 1, 4).round(3)]
        offsets.append(base + 7)
    return Ensemble(
        feature=np.array(feature), threshold=np.array(threshold), left=np.array(left),
        right=np.array(right), value=np.array(value)[:, None], tree_offsets=np.array(offsets),
        base_score=np.zeros(1), feature_names=("a", "b"), task="binary",
    )  # fmt: skip


FEATURES = (Feature("a", lo=-1, hi=5), Feature("b", lo=-1, hi=5))
TERM = OutputTerm((OutputAtom(1.0, "m", "x"),))


def extreme(model, goal=Maximize, features=FEATURES) -> Query:
    return Query("q", features, ("x",), {"m": model}, (), goal(TERM))


def solve(query):
    return AStarEngine().solve(query, Limits(timeout_s=30))


@pytest.fixture(autouse=True)
def empty_memo():
    solve(extreme(forest(99)))  # the kernels' first load solves a query of its own
    memo.clear()
    yield
    memo.clear()


def counting(monkeypatch) -> tuple[list, list]:
    """Count the misses of the memo: structures (cells, compaction) and units built."""
    structures, units = [], []
    for name, builds in (("_structure", structures), ("fill_trees", units)):
        build = getattr(memo, name)

        def counted(*args, _build=build, _builds=builds, **kwargs):
            _builds.append(1)
            return _build(*args, **kwargs)

        monkeypatch.setattr(memo, name, counted)
    return structures, units


def test_a_hit_answers_as_a_miss(monkeypatch):
    structures, units = counting(monkeypatch)
    model = forest(1)
    first = solve(extreme(model))
    second = solve(extreme(model))
    assert (len(structures), len(units)) == (1, 1), "the second solve built its trees again"
    assert (first.lower, first.upper) == (second.lower, second.upper)
    assert np.array_equal(first.witnesses[0].inputs["x"], second.witnesses[0].inputs["x"])
    assert first.upper == pytest.approx(model.eval(GRID).max())


def test_prepare_builds_the_structure_only_and_the_solve_reuses_it(monkeypatch):
    structures, units = counting(monkeypatch)
    model = forest(5)
    seconds = AStarEngine().prepare(extreme(model))
    assert seconds >= 0 and (len(structures), len(units)) == (1, 0)
    best = solve(extreme(model, Minimize))  # another term: the same cells and trees
    assert (len(structures), len(units)) == (1, 1)
    assert best.lower == pytest.approx(model.eval(GRID).min())
    fresh = forest(5)  # a model never prepared answers the same
    assert (best.lower, best.upper) == (solve(extreme(fresh, Minimize)).lower, best.upper)


def test_models_of_one_shape_never_share_leaves(monkeypatch):
    structures, units = counting(monkeypatch)
    a, b = forest(1), forest(2)
    assert np.array_equal(a.threshold, b.threshold) and not np.array_equal(a.value, b.value)
    for goal in (Maximize, Minimize, Maximize):
        for model in (a, b):
            result = solve(extreme(model, goal))
            best = model.eval(GRID).max() if goal is Maximize else model.eval(GRID).min()
            assert result.lower == pytest.approx(best) and result.upper == pytest.approx(best)
    # each model: one structure, units for +m and for -m; the third round all hits
    assert (len(structures), len(units)) == (2, 4)


def test_the_same_leaves_of_another_model_are_not_taken_from_the_memo(monkeypatch):
    structures, units = counting(monkeypatch)
    a = forest(1)
    twin = dataclasses.replace(a)  # equal arrays, another object
    solve(extreme(a))
    solve(extreme(twin))
    assert (len(structures), len(units)) == (2, 2)


def test_another_box_is_another_entry(monkeypatch):
    structures, units = counting(monkeypatch)
    model = forest(3)
    narrow = (Feature("a", lo=1, hi=2), Feature("b", lo=0, hi=3))
    wide = solve(extreme(model))
    boxed = solve(extreme(model, features=narrow))
    again = solve(extreme(model))
    inside = GRID[(GRID[:, 0] >= 1) & (GRID[:, 0] <= 2) & (GRID[:, 1] >= 0) & (GRID[:, 1] <= 3)]
    assert boxed.upper == pytest.approx(model.eval(inside).max())
    assert (again.lower, again.upper) == (wide.lower, wide.upper)
    assert (len(structures), len(units)) == (2, 2)


def test_rows_of_a_batch_share_the_trees_and_answer_as_alone(monkeypatch):
    structures, units = counting(monkeypatch)
    model = forest(4)
    rows = GRID[::17]
    margins = model.eval(rows)
    answers = []
    for row, margin in zip(rows, margins, strict=True):
        flip = OutputConstraint(TERM, "<=", 0.0) if margin > 0 else OutputConstraint(TERM, ">", 0.0)
        goal = MinimizeDistance("linf", "x", Row(tuple(row.tolist())))
        answers.append(solve(Query("q", FEATURES, ("x",), {"m": model}, (flip,), goal)))
    assert len(structures) == 1 and len(units) <= 2  # +m and -m, whatever the row
    for row, result, margin in zip(rows, answers, margins, strict=True):
        memo.clear()
        flip = OutputConstraint(TERM, "<=", 0.0) if margin > 0 else OutputConstraint(TERM, ">", 0.0)
        goal = MinimizeDistance("linf", "x", Row(tuple(row.tolist())))
        alone = solve(Query("q", FEATURES, ("x",), {"m": model}, (flip,), goal))
        assert (alone.termination, alone.lower, alone.upper) == (
            result.termination, result.lower, result.upper,
        )  # fmt: skip


def test_a_dead_model_takes_its_entries_along():
    model = forest(5)
    solve(extreme(model))
    assert len(memo._MEMO) == 1
    del model
    assert len(memo._MEMO) == 0


@pytest.mark.parametrize("seed", range(20))
def test_the_fast_linf_distance_is_the_rounded_exact_one(seed):
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.integers(-40, 38, (2, 6))
    a = (rng.normal(size=6) * scale[0]).astype(np.float32)
    b = (rng.normal(size=6) * scale[1]).astype(np.float32)
    b[:2] = a[:2]
    assert distance("linf", a, b) == float(exact_distance("linf", a, b))


def test_the_rows_of_a_family_batch_share_the_merged_trees(monkeypatch, tmp_path):
    # A family's variants merge into one model per query (sharing.share_trees); the memo keeps
    # it, so that the rows after the first find their cells, trees and units built.
    from test_sharing import family_query  # a DareForest family, features 0..4

    structures, units = counting(monkeypatch)
    merges = []
    share = memo.share_trees
    monkeypatch.setattr(memo, "share_trees", lambda *a: merges.append(1) or share(*a))
    query = family_query(tmp_path, "where class(m, x) == 1 for m in V\n maximize before(x)")

    def closest(row):
        goal = MinimizeDistance("l1", "x", Row(row))
        return solve(dataclasses.replace(query, goal=goal))

    rows = [(0.0, 0.0, 0.0), (4.0, 0.0, 2.0), (1.0, 3.0, 0.0)]
    answers = [closest(row) for row in rows]
    assert (len(merges), len(structures), len(units)) == (1, 1, 1)
    for row, result in zip(rows, answers, strict=True):
        memo.clear()
        alone = closest(row)
        assert (alone.termination, alone.lower, alone.upper) == (
            result.termination, result.lower, result.upper,
        )  # fmt: skip
    assert len(merges) == 1 + len(rows)
