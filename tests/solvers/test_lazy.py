"""Queries of many output constraints answered with the constraints added as they are needed:
in rounds (``solvers.lazy``: MILP and SAT) or switched on inside one search (A*:
``astar.search.BranchSearch``). On random small DaRE forests and families of 12 deletion
variants, the engines agree with each other and with every model's ``predict_proba`` on every
cell of the input space (the brute force here: the oracle engine refuses 13 models, and it never
solves lazily). And a round stopped by a limit never lends the original query a bound it has not
earned."""

from __future__ import annotations

import math

import numpy as np
import pytest

from veritas_dsl import parse
from veritas_dsl.ir.evaluate import holds as holds_on
from veritas_dsl.ir.evaluate import model_outputs
from veritas_dsl.ir.query import OutputConstraint
from veritas_dsl.result import Result, Termination, TracePoint, Witness
from veritas_dsl.solvers import registry
from veritas_dsl.solvers import solve as checked
from veritas_dsl.solvers.base import Engine, Limits, route
from veritas_dsl.solvers.lazy import LAZY_FROM, Lazy, lazily, solve_lazily
from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.checking.families import draw_deletions
from veritas_dsl.unlearning.dare.derive import deleted

from reference.families import CELLS, granted

ENGINES = "astar, milp, sat"
FRACTION, COUNT = 0.1, 12
FEATURES = "features {\n f0 : int in [0, 4]\n f1 : int in [0, 4]\n f2 : int in [0, 4]\n}\n"
ROUNDS: list[int] = []  # rounds of every lazy answer, for the test that they were needed
SWITCHED: list[tuple[int, int]] = []  # A*: constraints switched on, of those it started without


def setup(tmp_path, seed: int):
    """The saved base forest and the family's models (the base, then its variants), made in
    Python as the spec makes them."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, (50, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 3, 50) > 5).astype(int)
    before = DareForest(n_trees=3, max_depth=3, k=None, max_features=None, random_state=seed)
    before.fit(X, y).save(tmp_path / "forest.dare")
    variants = [deleted(before, ids) for ids in draw_deletions(before, FRACTION, COUNT, seed)]
    np.savetxt(tmp_path / "test.csv", CELLS[::11], delimiter=",", header="f0,f1,f2", comments="")
    return before, [before, *variants]


def spec(tmp_path, seed: int, body: str):
    path = tmp_path / "spec.ver"
    path.write_text(
        'model before = dare "forest.dare"\n'
        f"models V = deletions(before, fraction = {FRACTION}, count = {COUNT}, seed = {seed})\n"
        'data test = csv "test.csv"\n' + FEATURES + body
    )
    return parse(path.read_text(), str(path))


def run(tmp_path, seed: int, body: str, engines: str = ENGINES):
    results = spec(tmp_path, seed, body).run(jobs=1)
    for result in results:
        assert [r.engine for r in result.results] == engines.split(", ")
        for r in result.results:
            assert r.termination in (Termination.OPTIMAL, Termination.INFEASIBLE), (r.engine, r)
            if r.engine == "astar":
                on, total = r.stats["lazy_constraints"].split("/")
                SWITCHED.append((int(on), int(total)))
            else:
                ROUNDS.append(r.stats["lazy_rounds"])
    return results


@pytest.mark.parametrize("seed", range(6))
def test_lazy_rounds_agree_with_every_variant_on_every_cell(tmp_path, seed):
    before, variants = setup(tmp_path, seed)
    body = "".join(
        f"query {name} {{\n input x\n where class(m, x) == 1 for m in V\n{goal}\n"
        f" solve with {ENGINES}\n}}\n"
        for name, goal in [
            ("best", " maximize before(x)"),
            ("worst", " minimize before(x)"),
            ("flip", " where class(before, x) == 0\n find"),
        ]
    )
    best, worst, flip = run(tmp_path, seed, body)
    ok = granted(variants, CELLS)
    values = before.predict_proba(CELLS)[:, 1]
    for answer, pick in [(best, np.max), (worst, np.min)]:
        for r in answer.results:
            if not ok.any():
                assert r.termination is Termination.INFEASIBLE, r.engine
                continue
            assert r.lower == pytest.approx(pick(values[ok]), abs=1e-9), r.engine
            assert r.upper == pytest.approx(r.lower, abs=1e-9), r.engine
            (x,) = r.witnesses[0].inputs.values()
            assert granted(variants, np.atleast_2d(x))[0], r.engine
    exists = bool((ok & (values <= 0.5)).any())
    for r in flip.results:
        assert bool(r.witnesses) == exists, r.engine
        for w in r.witnesses:
            (x,) = w.inputs.values()
            assert granted(variants, np.atleast_2d(x))[0], r.engine


@pytest.mark.parametrize("norm", ["l1", "linf"])
@pytest.mark.parametrize("seed", range(4))
def test_a_lazy_robust_counterfactual_is_closest_and_holds_on_every_variant(tmp_path, seed, norm):
    _, variants = setup(tmp_path, seed)
    engines = "astar, milp"  # SAT measures no distance
    body = (
        "query cf for r in test[0:3] {\n input x\n where class(m, x) == 1 for m in V\n"
        f" minimize {norm}(x, r)\n solve with {engines}\n}}\n"
    )
    results = run(tmp_path, seed, body, engines)
    ok = granted(variants, CELLS)
    for k, result in enumerate(results):
        row = CELLS[::11][k]
        for r in result.results:
            if not ok.any():
                assert r.termination is Termination.INFEASIBLE, r.engine
                continue
            gaps = np.abs(CELLS[ok] - row)
            closest = (gaps.sum(axis=1) if norm == "l1" else gaps.max(axis=1)).min()
            assert r.lower == pytest.approx(closest), r.engine
            (x,) = r.witnesses[0].inputs.values()
            assert granted(variants, np.atleast_2d(x))[0], (r.engine, k)


def test_the_rounds_were_needed():
    """The answers above came from more than one round at times (else the loop that adds
    constraints went untested); this test runs after them in file order."""
    assert ROUNDS, "no lazy answer was recorded"
    assert max(ROUNDS) >= 2, ROUNDS


def test_the_astar_searches_switched_constraints_on():
    """Some A* searches above switched constraints on (else that path went untested), and some
    finished with constraints still off (else nothing was saved)."""
    assert SWITCHED, "no A* answer was recorded"
    assert any(on > 0 for on, _ in SWITCHED), SWITCHED
    assert any(on < total for on, total in SWITCHED), SWITCHED


def lowered_query(tmp_path, goal: str):
    setup(tmp_path, 0)
    text = f"query q {{\n input x\n where class(m, x) == 1 for m in V\n {goal}\n}}\n"
    (lowered,) = spec(tmp_path, 0, text).lowered()
    return lowered.query


def test_only_queries_of_many_output_constraints_are_lazy(tmp_path):
    query = lowered_query(tmp_path, "maximize before(x)")
    assert len(query.constraints) >= LAZY_FROM
    milp, oracle, astar = registry.get("milp"), registry.get("oracle"), registry.get("astar")
    assert lazily(milp, query, Limits())
    assert not lazily(oracle, query, Limits())
    assert not lazily(astar, query, Limits())  # its searches switch constraints on themselves
    assert not lazily(milp, query, Limits(max_steps=100))


def test_the_rounds_are_an_engine_on_the_one_route(tmp_path, monkeypatch):
    """The rounds are an engine wrapping another (:class:`Lazy`): it has every member of the
    Engine protocol, the route runs it like any engine, with the answer of the engine given
    every constraint at once, and the checked route runs a lazy query on it, once."""
    query = lowered_query(tmp_path, "maximize before(x)")
    milp = registry.get("milp")
    lazy = Lazy(milp)
    members = [m for m in vars(Engine) if not m.startswith("_")] + list(Engine.__annotations__)
    assert {"name", "capabilities", "chain", "available", "solve_reduced", "solve"} <= set(members)
    assert all(hasattr(lazy, member) for member in members)
    assert lazy.name == "milp" and lazy.available() == milp.available()
    assert lazy.capabilities.constructs == milp.capabilities.constructs
    assert not lazily(lazy, query, Limits())  # never wrapped twice
    rounds, whole = route(lazy, query, Limits(timeout_s=30)), route(milp, query, Limits(30))
    assert rounds.stats["lazy_rounds"] >= 1 and "lazy_rounds" not in whole.stats
    assert rounds.termination is whole.termination is Termination.OPTIMAL
    assert (rounds.lower, rounds.upper) == pytest.approx((whole.lower, whole.upper), abs=1e-9)
    assert lazy.solve(query, Limits(30)).upper == pytest.approx(whole.upper, abs=1e-9)
    routed = []
    monkeypatch.setattr(checked, "route", lambda engine, *a: routed.append(engine) or route(engine, *a))
    assert checked.solve(milp, query, Limits(30)).stats["lazy_rounds"] == rounds.stats["lazy_rounds"]
    assert [type(engine) for engine in routed] == [Lazy]


def test_a_stopped_round_lends_only_the_bound_on_the_goals_side(tmp_path):
    """Round 1 ends optimal at an input that breaks a constraint left out; round 2 is stopped
    by the time limit with bounds [0.2, 0.6] and a witness that breaks one too. The original
    maximisation knows its upper bound (0.6, from the relaxation) and no lower bound: the
    relaxed incumbent is no input of the original query."""
    query = lowered_query(tmp_path, "maximize before(x)")
    breaks = next(
        x for x in CELLS if not all(holds(query, c, x) for c in query.constraints)
    )  # fmt: skip
    answers = iter(
        [
            Result("q", "astar", Termination.OPTIMAL, 0.9, 0.9, [Witness({"x": breaks}, 0.9)]),
            Result(
                "q", "astar", Termination.TIME_LIMIT, 0.2, 0.6, [Witness({"x": breaks}, 0.2)],
                trace=[TracePoint(0.1, 0.2, 0.6)],
            ),
        ]
    )  # fmt: skip
    seen = []

    def solve_once(engine, relaxed, limits, progress):
        seen.append(len(relaxed.constraints))
        return next(answers)

    result = solve_lazily(registry.get("astar"), query, Limits(timeout_s=5), None, solve_once)
    others = sum(not isinstance(c, OutputConstraint) for c in query.constraints)
    assert seen == [others, others + 1]
    assert result.termination is Termination.TIME_LIMIT
    assert (result.lower, result.upper) == (-math.inf, 0.6)
    assert result.witnesses == []
    assert all(p.lower == -math.inf and p.upper <= 0.9 for p in result.trace)
    assert result.stats["lazy_rounds"] == 2


def holds(query, constraint, x) -> bool:
    inputs = {"x": np.asarray(x, np.float32)}
    return holds_on(constraint, inputs, model_outputs(query, inputs))
