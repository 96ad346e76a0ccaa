"""A saved DareForest is a model format: `model m = dare "forest.dare"` in a spec, `ver inspect`,
and `load_model` read the forest as it is now, and witnesses are checked on its own predict_proba."""

from __future__ import annotations

import json

import numpy as np
import pytest

from veritas_dsl import parse
from veritas_dsl.cli import main
from veritas_dsl.model import ModelError, load_model
from veritas_dsl.unlearning import DareForest


@pytest.fixture
def saved(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, (80, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 3).astype(int)
    forest = DareForest(n_trees=3, max_depth=3, k=None, max_features=None).fit(X, y)
    forest.delete([0, 5])
    forest.save(tmp_path / "forest.dare")
    return forest, tmp_path


def test_load_model_reads_the_forest_as_it_is_now(saved):
    forest, folder = saved
    model = load_model(folder / "forest.dare")  # the format from the suffix
    X = np.random.default_rng(1).uniform(-1, 5, (200, 3)).astype(np.float32)
    assert np.array_equal(model.eval(X), forest.predict_proba(X)[:, 1])
    assert model.task == "binary" and model.class_threshold == 0.5
    assert np.array_equal(load_model(folder / "forest.dare", "dare").eval(X), model.eval(X))


@pytest.mark.parametrize("engine", ["astar", "milp", "sat", "oracle"])
def test_a_spec_reads_a_dare_forest(saved, engine):
    forest, folder = saved
    spec = f"""model m = dare "forest.dare"
query top {{
    input x
    maximize m(x)
    solve with {engine}
}}
"""
    (run,) = parse(spec, str(folder / "spec.ver")).run()
    result = run.result
    assert result.termination.value == "optimal", result.message
    grid = np.stack(np.meshgrid(*[np.arange(-1, 5, 0.5)] * 3), -1).reshape(-1, 3)
    best = forest.predict_proba(grid.astype(np.float32))[:, 1].max()
    assert result.lower == pytest.approx(best, abs=1e-12)
    x = np.array([result.witnesses[0].inputs["x"]], dtype=np.float32)
    assert forest.predict_proba(x)[0, 1] == pytest.approx(result.lower, abs=1e-12)


def test_inspect_a_dare_forest(saved, capsys):
    _, folder = saved
    assert main(["inspect", "--json", str(folder / "forest.dare")]) == 0
    assert json.loads(capsys.readouterr().out)["n_trees"] == 3


def test_a_file_that_is_not_a_forest_is_a_model_error(tmp_path):
    (tmp_path / "bad.dare").write_bytes(b"not an npz file")
    with pytest.raises(ModelError, match=r"bad\.dare"):
        load_model(tmp_path / "bad.dare")
