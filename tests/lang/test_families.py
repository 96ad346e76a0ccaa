"""Families of models: `models V = deletions(...)` holds a saved forest as it is and K exact DaRE
deletion variants of it, reproducibly; `cond for m in V` is lowered to the conjunction over them
all, the model as it is included."""

from __future__ import annotations

import numpy as np
import pytest

from veritas_dsl import parse
from veritas_dsl.ir import OutputConstraint
from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.checking.families import draw_deletions
from veritas_dsl.unlearning.dare.derive import deleted

BASE = 'model before = dare "forest.dare"\n'


def forest(tmp_path) -> DareForest:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 5, (80, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, 80) > 4).astype(int)
    before = DareForest(n_trees=5, max_depth=3, random_state=1).fit(X, y)
    before.save(tmp_path / "forest.dare")
    return before


def spec(tmp_path, text: str):
    path = tmp_path / "spec.ver"
    path.write_text(BASE + text)
    return parse(path.read_text(), str(path))


QUERY = "query robust {\n input x\n where class(m, x) == 1 for m in V\n find\n}\n"


def test_a_family_is_its_variants_each_the_base_after_its_own_drawn_deletion(tmp_path):
    before = forest(tmp_path)
    s = spec(
        tmp_path, "models V = deletions(before, fraction = 0.05, count = 6, seed = 3)\n" + QUERY
    )
    sets = draw_deletions(before, 0.05, 6, 3)
    assert [len(ids) for ids in sets] == [4] * 6  # round(0.05 * 80)
    assert len({tuple(ids) for ids in sets}) == 6, "the sets should differ"
    X = np.random.default_rng(1).uniform(-1, 5, (200, 3)).astype(np.float32)
    (lowered,) = s.lowered()
    models = lowered.query.models
    assert [n for n in models if n.startswith("V")] == [f"V[{k}]" for k in range(6)]
    for k, ids in enumerate(sets):
        expected = deleted(before, ids).predict_proba(X)[:, 1]
        assert np.array_equal(models[f"V[{k}]"].eval(X), expected)
    # the base is unchanged
    assert np.array_equal(models["before"].eval(X), before.predict_proba(X)[:, 1])


def test_the_same_spec_gives_the_same_variants_and_another_seed_others(tmp_path):
    forest(tmp_path)
    X = np.random.default_rng(2).uniform(-1, 5, (300, 3)).astype(np.float32)

    def outputs(seed):
        text = f"models V = deletions(before, fraction = 0.1, count = 4, seed = {seed})\n" + QUERY
        (lowered,) = spec(tmp_path, text).lowered()
        return [lowered.query.models[f"V[{k}]"].eval(X) for k in range(4)]

    first, again, other = outputs(0), outputs(0), outputs(1)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert any(not np.array_equal(a, b) for a, b in zip(first, other, strict=True))


def test_a_condition_over_a_family_is_the_conjunction_over_its_models(tmp_path):
    forest(tmp_path)
    text = "models V = deletions(before, fraction = 0.05, count = 3)\n" + QUERY
    (lowered,) = spec(tmp_path, text).lowered()
    constraints = [c for c in lowered.query.constraints if isinstance(c, OutputConstraint)]
    read = sorted(a.model for c in constraints for a in c.term.atoms)
    assert read == ["V[0]", "V[1]", "V[2]", "before"]


def test_not_over_a_family_is_a_disjunction(tmp_path):
    forest(tmp_path)
    text = (
        "models V = deletions(before, fraction = 0.05, count = 3)\n"
        "query q {\n input x\n where not (class(m, x) == 1 for m in V)\n find\n}\n"
    )
    (lowered,) = spec(tmp_path, text).lowered()
    (anyof,) = lowered.query.constraints
    assert len(anyof.alternatives) == 4


def test_a_family_from_a_rows_file_forgets_each_line(tmp_path):
    before = forest(tmp_path)
    (tmp_path / "sets.txt").write_text("# one set a line\n3, 17,42\n\n5\n0 ,1\n")
    s = spec(tmp_path, 'models V = deletions(before, rows = "sets.txt")\n' + QUERY)
    (lowered,) = s.lowered()
    X = np.random.default_rng(3).uniform(-1, 5, (200, 3)).astype(np.float32)
    for k, ids in enumerate([[3, 17, 42], [5], [0, 1]]):
        expected = deleted(before, ids).predict_proba(X)[:, 1]
        assert np.array_equal(lowered.query.models[f"V[{k}]"].eval(X), expected)
    assert "V[3]" not in lowered.query.models


def test_a_family_model_is_called_and_indexed_through_its_variable(tmp_path):
    forest(tmp_path)
    text = (
        "models V = deletions(before, fraction = 0.05, count = 2)\n"
        "query q {\n input x\n where m(x) >= 0.5 and m(x)[0] <= 0.9 for m in V\n find\n}\n"
    )
    (lowered,) = spec(tmp_path, text).lowered()
    read = sorted(a.model for c in lowered.query.constraints for a in c.term.atoms)
    assert read == ["V[0]", "V[0]", "V[1]", "V[1]", "before", "before"]


@pytest.mark.parametrize("engines", ["astar", "milp", "sat", "oracle"])
def test_every_engine_answers_a_family_query(tmp_path, engines):
    forest(tmp_path)
    text = "models V = deletions(before, fraction = 0.05, count = 3)\n" + QUERY.replace(
        " find\n", f" find\n solve with {engines}\n"
    )
    (result,) = spec(tmp_path, text).run(jobs=1)
    assert [r.engine for r in result.results] == [engines]


def test_a_robust_counterfactual_is_granted_by_the_model_as_it_is(tmp_path):
    """Deleting row 6 (a negative at f0 = 1) lifts f0 = 1 from 0.5 to 2/3: the variant grants
    it, the forest as it is does not. The family holds the forest itself, so the closest input
    every model of V grants is f0 = 2 (before issue 38 it was f0 = 1, rejected by `before`)."""
    X = np.repeat([0, 1, 2], 4)[:, None].astype(np.float32)
    y = np.array([0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0])
    before = DareForest(n_trees=1, max_depth=2, k=None, max_features=None).fit(X, y)
    before.save(tmp_path / "forest.dare")
    assert before.predict_proba(X[[4]])[0, 1] == 0.5
    assert deleted(before, [6]).predict_proba(X[[4]])[0, 1] > 0.5
    (tmp_path / "sets.txt").write_text("6\n")
    (tmp_path / "rows.csv").write_text("f0\n0\n")
    text = (
        'models V = deletions(before, rows = "sets.txt")\ndata rows = csv "rows.csv"\n'
        "features {\n f0 : int in [0, 2]\n}\n"
        "query robust {\n input x\n where class(m, x) == 1 for m in V\n"
        " minimize l1(x, rows[0])\n solve with astar, milp, oracle\n}\n"
    )
    (run,) = spec(tmp_path, text).run(jobs=1)
    for r in run.results:
        (x,) = r.witnesses[0].inputs.values()
        assert before.predict_proba(np.atleast_2d(x))[0, 1] > 0.5, r.engine
        assert x.tolist() == [2.0], r.engine
