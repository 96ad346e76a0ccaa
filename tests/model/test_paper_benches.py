"""The two papers' experiments as benches (issue 43, items 3 and 4): bench/recourse.py on the
recourse paper's protocol and bench/dare_paper.py, DaRE's tolerance, k, space and accuracy
tables. Their rules (the tolerance's d_rmax, the adversary's prefixes, the L2 cost, the real
data's coding and balancing) are checked here, and both run at a small size."""

from __future__ import annotations

import importlib
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from veritas_dsl.unlearning import DareForest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch):
    """The bench folder's modules, imported as the scripts import each other."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    return importlib.import_module


def test_the_tolerance_raises_d_rmax_while_the_error_stays_within_it(bench):
    tolerated = bench("dare_paper").tolerated_depth
    errors = {0: 0.05, 1: 0.0505, 2: 0.052, 3: 0.07, 4: 0.05}
    assert [tolerated(errors, t) for t in (0.1, 0.25, 0.5, 1.0)] == [1, 2, 2, 2]
    assert tolerated({0: 0.05, 1: 0.07, 2: 0.05}, 0.1) == 0  # the first excess stops it
    assert tolerated({0: 0.05, 1: 0.04}, 0.1) == 1  # better than G-DaRE is within


def test_memory_counts_an_array_shared_by_views_once(bench):
    held = bench("dare_paper").held_bytes
    a = np.zeros(1000)
    alone = held(a, set())
    assert alone == 8000
    shared = held([a, a[:10], a[5:]], set())
    assert 8000 < shared < 8000 + 200  # the list, not three copies


def test_the_dare_paper_bench_runs(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["dare_paper.py", "--quick"])
    runpy.run_path(str(ROOT / "bench" / "dare_paper.py"), run_name="__main__")
    out = capsys.readouterr().out
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| wine")]
    tolerance = [r for r in rows if "DaRE" in r[1] and len(r) == 7]
    assert [r[1].strip() for r in tolerance][:2] == ["G-DaRE", "R-DaRE 0.1 %"]
    depths = [int(r[2]) for r in tolerance]
    assert depths[0] == 0 and depths[1:] == sorted(depths[1:])
    space = [r for r in rows if len(r) == 11]
    assert space and float(space[0][-1].replace(",", "")) > 1  # DaRE holds more than a RF


def test_l2_cost_is_the_euclidean_norm_of_the_scaled_change(bench):
    l1, l2 = bench("recourse").distances(np.array([[3.0, -4.0], [0.0, 0.5]]))
    assert l1.tolist() == [7.0, 0.5] and l2.tolist() == [5.0, 0.5]
    assert bench("recourse").mean_se(np.array([1.0, 3.0])) == "2.0 ± 1.0"


def test_the_adversary_of_each_k_is_a_prefix_of_one_greedy_run(bench):
    recourse = bench("recourse")
    X, y = load_breast_cancer(return_X_y=True)
    forest = DareForest(n_trees=3, max_depth=2, random_depth=2, min_samples_leaf=5)
    forest.fit(X[:60], y[:60])
    updates = recourse.Updates(forest)
    points = X[60:90].astype(np.float32)
    sets = recourse.adversary(updates, points, [1, 2], "delete")
    assert len(sets[1]) == 1 and sets[2][:1] == sets[1] and len(sets[2]) <= 2

    def broken(rows):
        return int((~recourse.granted(updates.delete(rows), points)).sum())

    # the first greedy step is exact: no single row breaks more
    assert broken(sets[1]) == max(broken([r]) for r in updates.ids.tolist())
    assert broken(sets[2]) >= broken(sets[1])


def test_german_credit_codes_are_their_values(bench):
    line = "A11 6 A34 A410 1169 A65 A75 4 A93 A101 4 A121 67 A143 A152 2 A173 1 A192 A201"
    row = bench("recourse_data").german_row(line.split(" "))
    assert row == [1, 6, 4, 10, 1169, 5, 5, 4, 3, 1, 4, 1, 67, 3, 2, 2, 3, 1, 2, 1]


def test_balancing_subsamples_the_larger_class_of_the_training_rows_only(bench):
    split = bench("recourse_data").split
    X = np.arange(400, dtype=float).reshape(200, 2)
    y = (np.arange(200) < 150).astype(int)  # 150 of class 1
    _, y_train, X_test, _ = split(X, y, balance=True)
    assert np.sum(y_train == 1) == np.sum(y_train == 0) > 0
    assert len(X_test) == 50 and np.array_equal(split(X, y)[2], X_test)


def test_the_recourse_bench_runs(monkeypatch, capsys):
    argv = "--sets cancer --rows 2 --draws 2 --ks 1 --seeds 8 --alphas 0,1 --candidates 3"
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    monkeypatch.setattr(sys, "argv", ["recourse.py", *argv.split(), "--no-greedy"])
    runpy.run_path(str(ROOT / "bench" / "recourse.py"), run_name="__main__")
    out = capsys.readouterr().out
    lines = [line.split("|") for line in out.splitlines() if line.count("|") == 9]
    cost = [r for r in lines if r[4].count("/") == 2]  # found/optimal/rows
    methods = [r[3].strip() for r in cost if "cancer" in r[1]]
    assert methods[:3] == ["plain", "robust", "cert1"] and set(methods[3:]) <= {"nn1"}
    assert all("±" in r[5] and "±" in r[6] for r in cost if "cancer" in r[1])
    # the counterfactuals point_bounds certifies at k = 1, of those answered
    assert all(r[8].strip().endswith("/2") for r in cost if "cancer" in r[1])
    assert "| DaRE worst 1 | adversarial <= 1 |" in out


def test_the_certified_neighbours_stay_granted_after_every_one_row_deletion(bench):
    """``nn1``: binned attributes, a greedy forest; each rejected row gets the closest training
    row ``point_bounds`` certifies at k = 1, which every one-row ``delete`` keeps granted."""
    recourse = bench("recourse")
    X, y = load_breast_cancer(return_X_y=True)
    X, rejected = recourse.binned(X[:80, :4], X[80:90, :4], 4)
    assert all(len(np.unique(X[:, j])) <= 4 for j in range(4))
    forest = DareForest(n_trees=3, max_depth=2, min_samples_leaf=5).fit(X, y[:80])
    found = recourse.certified_neighbours(forest, X, rejected, 1)
    assert all(row is not None for row in found)
    points = np.array(found, dtype=np.float32)
    for r in range(80):
        assert recourse.granted(forest.copy().delete([r]), points).all()
