"""`maximize min(m(x) for m in V)` / `minimize max(...)` over a family of DaRE deletion variants:
every default engine agrees with the variants evaluated in Python on every cell of the input space
(and with the oracle), witnesses score what they claim on each variant's own ``predict_proba``,
and bounds stopped by a limit bracket the optimum."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from veritas_dsl import parse
from veritas_dsl.cli import main
from veritas_dsl.result import Termination, Witness
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.solve import solve
from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.checking.families import draw_deletions
from veritas_dsl.unlearning.dare.derive import deleted
from veritas_dsl.validate import WitnessMismatch, validate_witness

ENGINES = "astar, milp, sat, oracle"
FRACTION, COUNT = 0.1, 3
CELLS = np.array(list(itertools.product(range(5), repeat=3)), np.float32)
FEATURES = "features {\n f0 : int in [0, 4]\n f1 : int in [0, 4]\n f2 : int in [0, 4]\n}\n"


def setup(tmp_path, seed: int, n_trees: int = 2, depth: int = 3):
    """The family's models, made in Python as the spec makes them: the saved base forest,
    then its variants."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, (50, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 3, 50) > 5).astype(int)
    settings = [dict(k=None, max_features=None), dict(k=2, max_features=2, random_depth=1)]
    before = DareForest(
        n_trees=n_trees, max_depth=depth, random_state=seed, **settings[seed % 2]
    ).fit(X, y)
    before.save(tmp_path / "forest.dare")
    return [before] + [deleted(before, ids) for ids in draw_deletions(before, FRACTION, COUNT, seed)]


def write(tmp_path, seed: int, body: str):
    path = tmp_path / "spec.ver"
    path.write_text(
        'model before = dare "forest.dare"\n'
        f"models V = deletions(before, fraction = {FRACTION}, count = {COUNT}, seed = {seed})\n"
        + FEATURES
        + body
    )
    return path


def probabilities(forests, points) -> np.ndarray:
    """Each forest's probability of class 1 on each point: (n_forests, n_points)."""
    return np.array([f.predict_proba(np.atleast_2d(points))[:, 1] for f in forests])


@pytest.mark.parametrize("seed", range(4))
def test_the_worst_variant_objective_agrees_with_every_variant(tmp_path, seed):
    variants = setup(tmp_path, seed)
    body = (
        "query worst {\n input x\n maximize min(m(x) for m in V)\n"
        f" solve with {ENGINES}\n}}\n"
        "query best_case {\n input x\n where x.f0 >= 2\n minimize max(m(x) for m in V)\n"
        f" solve with {ENGINES}\n}}\n"
    )
    path = write(tmp_path, seed, body)
    worst, best_case = parse(path.read_text(), str(path)).run(jobs=1)
    p = probabilities(variants, CELLS)
    assert not np.allclose(p.min(axis=0), p.max(axis=0)), "the variants agree: a weak test"
    checks = (
        (worst, np.min, p.min(axis=0).max()),
        (best_case, np.max, p.max(axis=0)[CELLS[:, 0] >= 2].min()),
    )
    for run, pick, expected in checks:
        assert [r.engine for r in run.results] == ENGINES.split(", ")
        for r in run.results:
            assert r.termination is Termination.OPTIMAL, (r.engine, r)
            assert r.lower == r.upper == pytest.approx(expected, abs=1e-9), r.engine
            (x,) = r.witnesses[0].inputs.values()
            value = pick(probabilities(variants, x))
            assert r.witnesses[0].value == pytest.approx(value, abs=1e-9), r.engine
            assert value == pytest.approx(expected, abs=1e-9), r.engine


def lowered_query(tmp_path, seed: int, body: str, **forest):
    variants = setup(tmp_path, seed, **forest)
    path = write(tmp_path, seed, body)
    (lowered,) = parse(path.read_text(), str(path)).lowered()
    return lowered.query, variants


@pytest.mark.parametrize("steps", [1, 2, 5, 50])
def test_bounds_stopped_by_a_limit_bracket_the_optimum(tmp_path, steps):
    """A larger family (6 trees of depth 3 each, granted by every variant): the bounds the
    A* and MILP engines report at a step limit hold the exact optimum, and their witnesses
    reproduce."""
    body = (
        "query q {\n input x\n where class(m, x) == 1 for m in V\n"
        " maximize min(m(x) for m in V)\n}\n"
    )
    query, variants = lowered_query(tmp_path, 1, body, n_trees=6, depth=3)
    p = probabilities(variants, CELLS)
    granted = np.all(p > 0.5, axis=0)
    assert granted.any()
    optimum = p.min(axis=0)[granted].max()
    for name in ("astar", "milp", "sat"):
        exact = solve(registry.get(name), query)
        assert exact.termination is Termination.OPTIMAL
        assert exact.lower == pytest.approx(optimum, abs=1e-9), name
        if name == "sat":  # no step limit: its calls are stopped by time only
            continue
        stopped = solve(registry.get(name), query, Limits(max_steps=steps))
        if name == "astar" and steps == 1:
            assert stopped.upper > optimum + 1e-6, "the first bound is the optimum: a weak test"
        assert stopped.lower <= optimum + 1e-9 and optimum <= stopped.upper + 1e-9, (name, stopped)
        for witness in stopped.witnesses:
            validate_witness(query, witness)
            assert witness.value <= optimum + 1e-9


def test_the_cli_answers_a_robust_query_valid_on_every_variant(tmp_path, capsys):
    """End to end: a spec read by `ver run --json`; the reported input is granted by every
    variant, with the least probability the report states, and no input does better."""
    variants = setup(tmp_path, 2, n_trees=4, depth=3)
    body = (
        "query robust {\n input x\n where class(m, x) == 1 for m in V\n"
        " maximize min(m(x) for m in V)\n solve with astar, milp\n}\n"
    )
    path = write(tmp_path, 2, body)
    assert main(["run", "--json", str(path)]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["results"]
    assert entry["status"] == "optimal"
    x = np.array([entry["witness"]["x"][f] for f in ("f0", "f1", "f2")], np.float32)
    at_x = probabilities(variants, x)[:, 0]
    assert (at_x > 0.5).all()
    assert entry["lower"] == entry["upper"] == pytest.approx(at_x.min(), abs=1e-9)
    p = probabilities(variants, CELLS)
    assert at_x.min() == pytest.approx(p.min(axis=0)[np.all(p > 0.5, axis=0)].max(), abs=1e-9)


def test_a_witness_reporting_another_value_than_the_worst_models_is_rejected(tmp_path):
    body = "query q {\n input x\n maximize min(m(x) for m in V)\n}\n"
    query, variants = lowered_query(tmp_path, 0, body)
    x = CELLS[17]
    at_x = probabilities(variants, x)[:, 0]
    assert at_x.min() < at_x.max()
    validate_witness(query, Witness({"x": x}, float(at_x.min())))
    with pytest.raises(WitnessMismatch, match="worst model"):
        validate_witness(query, Witness({"x": x}, float(at_x.max())))
