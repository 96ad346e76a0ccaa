"""`worst_case(before, deletions = k)` and `best_case(...)` in a spec: the certified bounds of
every forest deleting at most k rows gives. A counterfactual found on `worst_case` stays class 1
after every such deletion (enumerated), where the plain one found on `before` does not; a forest
whose splits a deletion can change is refused at the declaration, exit 2."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

import numpy as np
import pytest

from veritas_dsl import SpecError, parse
from veritas_dsl.cli import main
from veritas_dsl.result import Termination
from veritas_dsl.unlearning import DareForest, worst_case

# (seed, random_depth, max_depth, k): tiny data on which the certificate holds and the plain
# counterfactual of the row (0, 2) is undone by deleting one row (found by a search).
CASES = [(40, 0, 2, 1), (20, 1, 2, 2), (20, 1, 3, 1)]


def _forest(seed: int, random_depth: int, max_depth: int) -> DareForest:
    """12 rows of 4 distinct ones (each 3 times), 2 attributes in {0, 1, 2}."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 3, (4, 2))
    X = np.repeat(base, 3, axis=0).astype(np.float32)
    y = (rng.random(12) < np.repeat(0.15 + 0.7 * (base[:, 0] >= 1), 3)).astype(int)
    settings = dict(k=None, max_features=None, random_depth=random_depth)
    return DareForest(n_trees=3, max_depth=max_depth, random_state=seed, **settings).fit(X, y)


def _spec(tmp_path, forest: DareForest, k: int) -> str:
    forest.save(tmp_path / "forest.dare")
    (tmp_path / "rows.csv").write_text("f0,f1\n0,2\n")
    return (
        'model before = dare "forest.dare"\n'
        f"model w = worst_case(before, deletions = {k})\n"
        f"model b = best_case(before, deletions = {k})\n"
        'data rows = csv "rows.csv"\n'
        "features {\n f0 : int in [0, 2]\n f1 : int in [0, 2]\n}\n"
        "query plain {\n input x\n where class(before, x) == 1\n"
        " minimize l1(x, rows[0])\n solve with astar, milp, oracle\n}\n"
        "query certified {\n input x\n where class(w, x) == 1\n"
        " minimize l1(x, rows[0])\n solve with astar, milp, oracle\n}\n"
    )


def _witnesses(result) -> list[np.ndarray]:
    found = []
    for r in result.results:
        assert r.termination == Termination.OPTIMAL, (r.engine, r)
        (x,) = r.witnesses[0].inputs.values()
        found.append(np.asarray(x, dtype=np.float32))
    return found


@pytest.mark.parametrize(("seed", "random_depth", "max_depth", "k"), CASES)
def test_a_counterfactual_on_worst_case_survives_every_deletion(
    tmp_path, seed, random_depth, max_depth, k
):
    forest = _forest(seed, random_depth, max_depth)
    spec = tmp_path / "spec.ver"
    spec.write_text(_spec(tmp_path, forest, k))
    checked = parse(spec.read_text(), str(spec))
    lower, upper = worst_case(forest, k)
    grid = np.array(list(itertools.product(range(3), repeat=2)), np.float32)
    assert np.array_equal(checked.checked.models["w"].eval(grid), lower.eval(grid))
    assert np.array_equal(checked.checked.models["b"].eval(grid), upper.eval(grid))
    plain, certified = checked.run(jobs=1)
    plain_x, certified_x = _witnesses(plain), _witnesses(certified)
    assert plain.results[0].upper <= certified.results[0].lower  # robustness never costs less
    broken = []
    for size in range(1, k + 1):
        for rows in itertools.combinations(range(12), size):
            after = copy.deepcopy(forest).delete(list(rows))
            for x in certified_x:
                assert after.predict_proba(x[None])[0, 1] > 0.5, (rows, x)
            if any(after.predict_proba(x[None])[0, 1] <= 0.5 for x in plain_x):
                broken.append(rows)
    assert broken, "no deletion undoes the plain counterfactual: a weak test"


def test_refusal_is_located_and_exits_2(tmp_path, capsys):
    X = np.arange(8, dtype=np.float32)[:, None]
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    DareForest(n_trees=1, max_depth=1, random_depth=1, random_state=1).fit(X, y).save(
        tmp_path / "forest.dare"
    )
    spec = tmp_path / "spec.ver"
    spec.write_text(
        'model before = dare "forest.dare"\n'
        "model w = worst_case(before, deletions = 4)\n"
        "query q {\n input x\n maximize w(x)\n}\n"
    )
    assert main(["run", str(spec)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "spec.ver:2:1" in err and "V421" in err
    assert "tree 0 node 0 (root, random f0 <= 3.58275)" in err and "leaves it pure" in err


def test_a_bound_is_a_model_but_not_a_forest(tmp_path):
    """`w` evaluates like any model; deriving from it is refused (V410, naming what it is)."""
    forest = _forest(*CASES[0][:3])
    spec = tmp_path / "spec.ver"
    spec.write_text(
        _spec(tmp_path, forest, 1).split("data rows")[0] + "model again = delete(w, rows = [1])\n"
    )
    with pytest.raises(SpecError) as error:
        parse(spec.read_text(), str(spec))
    (found,) = error.value.diagnostics
    assert (found.code, found.span.line, found.span.column) == ("V410", 4, 22)
    assert "its format is `worst_case`" in found.message


EXAMPLE_FOREST = Path(__file__).resolve().parents[2] / "examples" / "models" / "recourse.dare"


def test_a_bound_set_against_a_refit_is_refused_located_and_exits_2(tmp_path, capsys):
    """The shipped recourse forest has random nodes: `worst_case` covers its `delete`, not
    `retrain` (a fit draws the random nodes afresh). Issue 38: asking for a counterfactual
    certified by `w` and rejected by a refit is refused at the refit, V422, exit 2."""
    spec = tmp_path / "spec.ver"
    spec.write_text(
        f'model before = dare "{EXAMPLE_FOREST}"\n'
        "model w = worst_case(before, deletions = 3)\n"
        "model again = retrain(before, without = [1, 2])\n"
        "query q {\n input x\n where class(w, x) == 1 and class(again, x) == 0\n find\n}\n"
    )
    assert main(["run", str(spec)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{spec}:6:35" in err and "error[V422]" in err
    assert "covers `delete` of up to 3 row(s) of `before`, and `again` is fit again" in err
    assert "help: compare with `delete(before, rows = ...)`" in err


def test_without_random_nodes_the_bound_covers_the_refit(tmp_path):
    """A forest without random nodes: a refit with its seed is the deleted forest, so the spec
    that sets `w` against `retrain` is answered, and `w` is below every refit of <= k rows."""
    seed, random_depth, max_depth, k = CASES[0]
    assert random_depth == 0
    forest = _forest(seed, random_depth, max_depth)
    forest.save(tmp_path / "forest.dare")
    spec = tmp_path / "spec.ver"
    spec.write_text(
        'model before = dare "forest.dare"\n'
        f"model w = worst_case(before, deletions = {k})\n"
        "model again = retrain(before, without = [0])\n"
        "features {\n f0 : int in [0, 2]\n f1 : int in [0, 2]\n}\n"
        "property below {\n forall x: w(x) <= again(x)\n solve with astar, milp, oracle\n}\n"
    )
    (run,) = parse(spec.read_text(), str(spec)).run(jobs=1)
    assert all(r.termination is Termination.INFEASIBLE for r in run.results)  # it holds
    lower, _ = worst_case(forest, k)
    X, y = forest.training_rows()
    grid = np.array(list(itertools.product(range(3), repeat=2)), np.float32)
    for size in range(1, k + 1):
        for rows in itertools.combinations(range(12), size):
            keep = np.setdiff1d(np.arange(12), rows)
            again = DareForest(**forest.params()).fit(X[keep], y[keep])
            assert np.all(lower.eval(grid) <= again.predict_proba(grid)[:, 1]), rows
