"""The Numba kernel of a greedy DaRE node chooses as a plain numpy reference does, through both of
its paths (sorting the node's rows, or picking them out of every row presorted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from dare_helpers import tied_data
from dare_reference import greedy_split as reference
from hypothesis import given, settings
from hypothesis import strategies as st

import veritas_dsl
from veritas_dsl.unlearning.dare.estimator import CRITERIA
from veritas_dsl.unlearning.dare.kernels import _sort_ranks, best_split, mix, mix_int
from veritas_dsl.unlearning.dare.splits import Presorted, greedy_split

from conftest import examples


@settings(max_examples=examples(1))
@given(
    data=tied_data(max_rows=40, max_columns=5),
    k=st.sampled_from([None, 1, 2, 4]),
    max_features=st.integers(1, 5),
    min_samples_leaf=st.integers(1, 4),
    share=st.floats(0.05, 1.0),
    criterion=st.sampled_from(["gini", "entropy"]),
)
def test_kernel_chooses_as_the_reference(data, k, max_features, min_samples_leaf, share, criterion):
    X, y, seed = data
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(X), max(1, int(share * len(X))), replace=False))
    expected = reference(X, y, rows, seed, k, max_features, min_samples_leaf, criterion)
    got = greedy_split(
        y, rows, seed, k, max_features, min_samples_leaf, Presorted.of(X, y), CRITERIA[criterion]
    )
    assert (None if got is None else (got.attribute, got.threshold)) == expected


@pytest.mark.parametrize("n", [3, 200])
def test_both_paths_agree_on_wide_values(n):
    rng = np.random.default_rng(n)
    X = (rng.standard_normal((n, 3)) * 10.0 ** rng.integers(-30, 30, (n, 3))).astype(np.float32)
    y = rng.integers(0, 2, n)
    rows = np.arange(n)
    for seed in range(5):
        expected = reference(X, y, rows, seed, 3, 2, 1)
        split = greedy_split(y, rows, seed, 3, 2, 1, Presorted.of(X, y))
        assert (split.attribute, split.threshold) == expected


def test_the_kernel_is_cached_outside_the_package(tmp_path):
    # As the A* kernels (tests/solvers/test_astar_cache.py): Numba's default cache beside the
    # source would leave files in the installed package that pip uninstall does not remove.
    package = Path(veritas_dsl.__file__).parent
    before = {p: p.stat().st_mtime_ns for p in package.rglob("*") if p.suffix != ".pyc"}
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop("NUMBA_CACHE_DIR", None)
    code = (
        "import numpy as np; from veritas_dsl.unlearning import DareForest; "
        "DareForest(n_trees=1).fit(np.eye(3), [0, 1, 1])"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    after = {p: p.stat().st_mtime_ns for p in package.rglob("*") if p.suffix != ".pyc"}
    assert [str(p) for p in after if after[p] != before.get(p)] == []
    assert list((tmp_path / "xdg").rglob("*.nbi")) + list((tmp_path / "home").rglob("*.nbi"))


@pytest.mark.parametrize("n_rows", [1_000, 5_000])
def test_sorting_the_rows_chooses_as_picking_them_from_every_row(n_rows):
    # Nodes of 64 rows or more (and a 16th of the bitmap's words) sort their ranks through a
    # bitmap, smaller ones by comparison; the presorted path is the reference. Values repeat.
    rng = np.random.default_rng(n_rows)
    X = rng.integers(0, 60, (n_rows, 4)).astype(np.float32) / 7
    y = rng.integers(0, 2, n_rows).astype(np.int8)
    p = Presorted.of(X, y)
    for size in (40, 129, 300, n_rows // 2, n_rows):
        rows = np.sort(rng.choice(n_rows, size, replace=False))
        for seed in range(4):
            fixed = (p.columns, y, rows, p.order, p.values, p.labels, p.position)
            a0, t0, c0, cache0 = best_split(*fixed, True, seed, 3, 2, 1, 4096, 0)
            a1, t1, c1, cache1 = best_split(*fixed, False, seed, 3, 2, 1, 4096, 0)
            assert (a0, t0, c0) == (a1, t1, c1)
            for part0, part1 in zip(cache0, cache1, strict=True):
                np.testing.assert_array_equal(part0, part1)


@pytest.mark.parametrize("limit", [50, 2_000, 100_000, 2**23 + 5])
def test_sorting_ranks_sorts(limit):
    rng = np.random.default_rng(limit)
    bits = np.zeros((limit + 63) // 64, dtype=np.uint64)
    for n in sorted({min(n, limit) for n in (1, 63, 64, 1_000, 5_000)}):
        keys = rng.choice(limit, n, replace=False).astype(np.int64)  # distinct, as ranks are
        got = keys.copy()
        _sort_ranks(got, bits)
        np.testing.assert_array_equal(got, np.sort(keys))
        assert not bits.any()  # left zero for the next attribute


def test_mix_on_python_ints_is_the_kernels():
    # tree.child_seed mixes in Python: a greedy subtree's seeds must stay those of the kernel.
    rng = np.random.default_rng(5)
    for z in [0, 1, 2**63, 2**64 - 1, *rng.integers(0, 2**64 - 1, 200, dtype=np.uint64).tolist()]:
        assert mix_int(z) == int(mix(np.uint64(z)))
