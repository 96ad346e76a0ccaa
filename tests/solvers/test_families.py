"""Queries over a family of deletion variants (`cond for m in V`) on random small DaRE forests:
every default engine answers, they agree with each other and with the family's models (the base
and its variants) evaluated in Python on every cell of the input space, and every witness holds
on every model's own ``predict_proba``."""

from __future__ import annotations

import numpy as np
import pytest

from veritas_dsl import parse
from veritas_dsl.result import Termination
from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.checking.families import draw_deletions
from veritas_dsl.unlearning.dare.derive import deleted

from reference.families import CELLS, granted

ENGINES = "astar, milp, sat, oracle"
FRACTION, COUNT = 0.1, 3


def setup(tmp_path, seed: int):
    """The saved base forest and the family's models (the base, then its variants), made in
    Python as the spec makes them."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, (50, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 3, 50) > 5).astype(int)
    settings = [dict(k=None, max_features=None), dict(k=2, max_features=2, random_depth=1)]
    before = DareForest(n_trees=2, max_depth=3, random_state=seed, **settings[seed % 2]).fit(X, y)
    before.save(tmp_path / "forest.dare")
    variants = [deleted(before, ids) for ids in draw_deletions(before, FRACTION, COUNT, seed)]
    np.savetxt(tmp_path / "test.csv", CELLS[::11], delimiter=",", header="f0,f1,f2", comments="")
    return before, [before, *variants]


def run(tmp_path, seed: int, body: str, engines: str = ENGINES):
    path = tmp_path / "spec.ver"
    path.write_text(
        'model before = dare "forest.dare"\n'
        f"models V = deletions(before, fraction = {FRACTION}, count = {COUNT}, seed = {seed})\n"
        'data test = csv "test.csv"\n'
        "features {\n f0 : int in [0, 4]\n f1 : int in [0, 4]\n f2 : int in [0, 4]\n}\n" + body
    )
    results = parse(path.read_text(), str(path)).run(jobs=1)
    for result in results:
        assert [r.engine for r in result.results] == engines.split(", ")
        for r in result.results:
            assert r.termination in (Termination.OPTIMAL, Termination.INFEASIBLE), (r.engine, r)
    return results


@pytest.mark.parametrize("seed", range(4))
def test_a_family_conjunction_agrees_with_every_model(tmp_path, seed):
    before, variants = setup(tmp_path, seed)
    body = (
        "query best {\n input x\n where class(m, x) == 1 for m in V\n maximize before(x)\n"
        f" solve with {ENGINES}\n}}\n"
        "query flip {\n input x\n where class(m, x) == 1 for m in V\n"
        f" where class(before, x) == 0\n find\n solve with {ENGINES}\n}}\n"
    )
    best, flip = run(tmp_path, seed, body)
    ok = granted(variants, CELLS)
    assert ok.any(), "no cell is granted by every variant: a weak test"
    assert not np.array_equal(ok, granted([before], CELLS)), "the variants change nothing"
    expected = before.predict_proba(CELLS[ok])[:, 1].max()
    for r in best.results:
        assert r.lower == pytest.approx(expected, abs=1e-9), r.engine
        (x,) = r.witnesses[0].inputs.values()
        assert granted(variants, np.atleast_2d(x))[0], r.engine
    for r in flip.results:  # the family holds `before`: none it grants is rejected by it
        assert not r.witnesses, r.engine


#: The engines of each norm (SAT measures no L1 distance).
NORMS = {"l1": "astar, milp, oracle", "linf": ENGINES}


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("seed", range(4))
def test_the_robust_counterfactual_holds_on_every_variant_and_is_closest(tmp_path, seed, norm):
    _, variants = setup(tmp_path, seed)
    body = (
        "query cf for r in test[0:3] {\n input x\n where class(m, x) == 1 for m in V\n"
        f" minimize {norm}(x, r)\n solve with {NORMS[norm]}\n}}\n"
    )
    results = run(tmp_path, seed, body, NORMS[norm])
    distance = (lambda d: d.sum(axis=-1)) if norm == "l1" else (lambda d: d.max(axis=-1))
    ok = granted(variants, CELLS)
    assert ok.any(), "no cell is granted by every variant: a weak test"
    for k, result in enumerate(results):
        row = CELLS[::11][k]
        expected = distance(np.abs(CELLS[ok] - row)).min()
        for r in result.results:
            assert r.lower == pytest.approx(expected), (r.engine, k)
            (x,) = r.witnesses[0].inputs.values()
            assert granted(variants, np.atleast_2d(x))[0], (r.engine, k)
            assert distance(np.abs(np.asarray(x) - row)) == pytest.approx(expected)
