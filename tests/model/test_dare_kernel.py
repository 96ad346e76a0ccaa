"""The Numba kernel of a greedy DaRE node chooses as a plain numpy reference does, through both of
its paths (sorting the node's rows, or picking them out of every row presorted)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from dare_helpers import tied_data
from dare_reference import greedy_split as reference
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.model.dare.splits import greedy_split

from conftest import examples


@settings(max_examples=examples(1))
@given(
    data=tied_data(max_rows=40, max_columns=5),
    k=st.sampled_from([None, 1, 2, 4]),
    max_features=st.integers(1, 5),
    min_samples_leaf=st.integers(1, 4),
    share=st.floats(0.05, 1.0),
)
def test_kernel_chooses_as_the_reference(data, k, max_features, min_samples_leaf, share):
    X, y, seed = data
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(X), max(1, int(share * len(X))), replace=False))
    presorted = np.argsort(X, axis=0, kind="stable").T.copy()
    expected = reference(X, y, rows, seed, k, max_features, min_samples_leaf)
    got = greedy_split(X, y, rows, seed, k, max_features, min_samples_leaf, presorted)
    assert (None if got is None else (got.attribute, got.threshold)) == expected


@pytest.mark.parametrize("n", [3, 200])
def test_both_paths_agree_on_wide_values(n):
    rng = np.random.default_rng(n)
    X = (rng.standard_normal((n, 3)) * 10.0 ** rng.integers(-30, 30, (n, 3))).astype(np.float32)
    y = rng.integers(0, 2, n)
    rows = np.arange(n)
    for seed in range(5):
        expected = reference(X, y, rows, seed, 3, 2, 1)
        split = greedy_split(X, y, rows, seed, 3, 2, 1, np.argsort(X, axis=0).T.copy())
        assert (split.attribute, split.threshold) == expected


def test_the_kernel_is_cached_outside_the_package(tmp_path):
    # As the A* kernels (tests/solvers/test_astar_cache.py): Numba's default cache beside the
    # source would leave files in the installed package that pip uninstall does not remove.
    from solvers.test_astar_cache import cached, package_files, run

    code = (
        "import numpy as np; from veritas_dsl.unlearning import DareForest; "
        "DareForest(n_trees=1).fit(np.eye(3), [0, 1, 1])"
    )
    before = package_files()
    run(tmp_path, {"NUMBA_CACHE_DIR": None}, sys.executable, "-c", code)
    after = package_files()
    assert [str(p) for p in after if after[p] != before.get(p)] == []
    assert cached(tmp_path / "xdg") + cached(tmp_path / "home"), "no kernel was cached"
