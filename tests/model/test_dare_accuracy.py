"""What the deterministic configuration is, and the bench that measures its cost (issue 38,
item 5): its trees are all one tree (it draws nothing), so the forest is one decision tree, and
bench/dare_accuracy.py, whose table docs/unlearning-exactness.md gives, runs and says so."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import numpy as np
from dare_helpers import DETERMINISTIC
from sklearn.datasets import load_breast_cancer

from veritas_dsl.unlearning import DareForest

ROOT = Path(__file__).resolve().parents[2]


def test_deterministic_trees_are_all_one_tree():
    X, y = load_breast_cancer(return_X_y=True)
    forest = DareForest(n_trees=6, max_depth=10, **DETERMINISTIC).fit(X, y)
    one = DareForest(n_trees=1, max_depth=10, **DETERMINISTIC).fit(X, y)
    for edited, single in ((forest, one), (forest.copy().delete([0, 7]), one.copy().delete([0, 7]))):
        view, alone = edited.view(), single.view()
        size = len(alone.kind)
        assert len(view.kind) == 6 * size
        for name in ("kind", "feature", "threshold", "count", "positives"):
            assert np.array_equal(getattr(view, name), np.tile(getattr(alone, name), 6))
        assert np.array_equal(edited.predict_proba(X), single.predict_proba(X))


def test_the_accuracy_bench_runs(monkeypatch, capsys):
    argv = ["dare_accuracy.py", "--seeds", "2", "--trees", "4", "--depth", "4"]
    monkeypatch.setattr(sys, "argv", [*argv, "--data", "breast_cancer"])
    runpy.run_path(str(ROOT / "bench" / "dare_accuracy.py"), run_name="__main__")
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines() if "| breast" in line]
    assert [row[2].strip() for row in rows] == ["default", "R-DaRE", "determ."]
    assert [row[4].strip() for row in rows] == ["4", "4", "1"]  # distinct trees
    assert all(0.8 < float(row[3].split("±")[0]) <= 1 for row in rows)  # test accuracy
    assert "bench/dare_accuracy.py" in (ROOT / "docs" / "unlearning-exactness.md").read_text()
