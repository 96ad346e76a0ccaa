"""``solutions = N``: the N best distinct solutions of an objective, best first (issue 40).

Distinct means another leaf combination of the trees the objective reads
(:func:`~veritas_dsl.ir.distinct.leaf_combination`). The brute-force oracle tries the leaf
combinations from the best value down, so its first N distinct ones are the reference: A* must
give the same values (as a multiset: ties come in any order), in order, each witness distinct
and valid on the model, with bounds that stay the optimum's.

As in tests/solvers/test_stop_decided.py, every A* kernel call doubles the last, so where a
limited run stops does not depend on the machine's speed.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.ir import (
    Feature,
    Find,
    Maximize,
    MaximizeMin,
    Minimize,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Query,
    Tie,
)
from veritas_dsl.ir.distinct import counted_trees, leaf_combination
from veritas_dsl.ir.evaluate import goal_value, model_outputs
from veritas_dsl.ir.query import maximizes
from veritas_dsl.result import Result, Termination
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.solvers.sat.engine import SatEngine
from veritas_dsl.solvers.solve import solve
from veritas_dsl.validate import validate_witnesses

from conftest import random_forest

#: Where a run stops does not depend on the machine (conftest.astar_pace_fixed).
pytestmark = pytest.mark.usefixtures("astar_pace_fixed")


def term(model: str = "m", instance: str = "x", coef: float = 1.0) -> OutputTerm:
    return OutputTerm((OutputAtom(coef, model, instance, 0),))


def one_model(model, goal, constraints=(), instances=("x",), models=None) -> Query:
    features = tuple(Feature(n) for n in model.feature_names)
    return Query("q", features, instances, models or {"m": model}, constraints, goal)


def values(result) -> list[float]:
    return [w.value for w in result.witnesses]


def engines(n: int):
    """A* ranks its solutions itself; MILP (HiGHS) solves again with no-goods, one solve per
    solution (only for a few: each solve takes longer than A* takes for all)."""
    return [AStarEngine(), MilpEngine("milp", "highs")] if n <= 12 else [AStarEngine()]


def assert_n_best(query: Query, n: int) -> None:
    """Each engine's N best equal the oracle's, in order, distinct, each valid and of its
    value."""
    oracle = solve(OracleEngine(), query, Limits(solutions=n))
    for engine in engines(n):
        assert_same_n_best(query, n, solve(engine, query, Limits(solutions=n)), oracle)


def assert_same_n_best(query: Query, n: int, astar, oracle) -> None:
    assert astar.termination is oracle.termination is Termination.OPTIMAL
    assert sorted(values(astar)) == pytest.approx(sorted(values(oracle)), rel=1e-9, abs=1e-12)
    assert len(astar.witnesses) == min(n, len(oracle.witnesses))
    assert astar.solutions_proven == len(astar.witnesses)
    assert oracle.solutions_proven == len(oracle.witnesses)
    order = sorted(values(astar), reverse=maximizes(query.goal))
    assert values(astar) == order  # best first
    assert (astar.lower, astar.upper) == pytest.approx((oracle.lower, oracle.upper))
    best = astar.lower if maximizes(query.goal) else astar.upper
    assert values(astar)[0] == pytest.approx(best)  # the bounds stay the optimum's
    for result in (astar, oracle):
        combinations = {leaf_combination(query, w.inputs) for w in result.witnesses}
        assert len(combinations) == len(result.witnesses)  # distinct
        validate_witnesses(query, result.witnesses)  # each one valid on the model
        for w in result.witnesses:
            assert goal_value(query.goal, model_outputs(query, w.inputs)) == pytest.approx(
                w.value, rel=1e-12, abs=1e-12
            )


@pytest.mark.parametrize("goal", [Maximize, Minimize])
@pytest.mark.parametrize("n", [1, 2, 7, 40])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_astar_gives_the_oracles_n_best(goal, n, seed):
    model = random_forest(4, 3, 3, seed)
    assert_n_best(one_model(model, goal(term())), n)


def test_a_constraints_trees_do_not_make_solutions_distinct():
    # The search splits the constraint's trees too: complete states that differ only there
    # share the objective's leaves and count once.
    m, c = random_forest(3, 3, 3, 11), random_forest(3, 3, 3, 12)
    constraint = OutputConstraint(term("c"), ">=", 0.0)
    query = one_model(m, Maximize(term()), (constraint,), models={"m": m, "c": c})
    assert_n_best(query, 12)


def splits_on(model, tree: int, feature: int) -> bool:
    nodes = slice(model.tree_offsets[tree], model.tree_offsets[tree + 1])
    return feature in model.feature[nodes]


def test_a_tree_that_cancels_between_tied_instances_does_not_count():
    # m(y) - m(x) with x and y tied but on feature 0: a tree that does not test feature 0 adds
    # the same leaf twice with opposite signs. Counted, it would repeat each value once per
    # leaf of it (A* leaves such trees out of its search, as they add nothing).
    m = next(
        model
        for model in (random_forest(4, 2, 3, seed) for seed in range(100))
        if 0 < sum(splits_on(model, t, 0) for t in range(model.n_trees)) < model.n_trees
    )
    gap = OutputTerm((OutputAtom(1.0, "m", "y", 0), OutputAtom(-1.0, "m", "x", 0)))
    ties = tuple(Tie("x", "y", f) for f in (1, 2))
    query = one_model(m, Maximize(gap), ties, ("x", "y"))
    counted = {tree for _, _, tree in counted_trees(query)}
    assert counted == {t for t in range(m.n_trees) if splits_on(m, t, 0)}
    assert_n_best(query, 9)


def test_two_instances_and_a_worst_of():
    m, other = random_forest(3, 2, 3, 21), random_forest(3, 2, 3, 22)
    gap = OutputTerm((OutputAtom(1.0, "m", "y", 0), OutputAtom(-1.0, "m", "x", 0)))
    ties = tuple(Tie("x", "y", f) for f in (1, 2))
    assert_n_best(one_model(m, Maximize(gap), ties, ("x", "y")), 9)
    worst = MaximizeMin((term("m"), term("o")))
    assert_n_best(one_model(m, worst, models={"m": m, "o": other}), 9)


def test_fewer_than_n_exist_all_are_given_and_the_result_says_so():
    query = one_model(random_forest(2, 2, 2, 3), Maximize(term()))
    result = solve(AStarEngine(), query, Limits(solutions=1000))
    oracle = solve(OracleEngine(), query, Limits(solutions=1000))
    assert 1 < len(result.witnesses) == len(oracle.witnesses) < 1000
    assert result.solutions_note(1000) == (
        f"only {len(result.witnesses)} distinct solutions exist (1000 asked)"
    )
    assert_same_n_best(query, 1000, result, oracle)
    milp = solve(MilpEngine("milp", "highs"), query, Limits(solutions=1000))
    assert_same_n_best(query, 1000, milp, oracle)


def test_a_limit_before_the_n_are_proven_says_how_many_are():
    query = one_model(random_forest(30, 4, 6, 5), Maximize(term()))
    result = solve(AStarEngine(), query, Limits(max_steps=300, solutions=50))
    assert result.termination is Termination.STEP_LIMIT
    proven = result.solutions_proven
    assert proven < 50 and proven <= len(result.witnesses)
    assert values(result) == sorted(values(result), reverse=True)
    assert result.lower <= result.upper
    if proven:  # the ones proven are the best in order: a run to the end starts with them
        full = solve(AStarEngine(), query, Limits(solutions=proven))
        assert values(full) == pytest.approx(values(result)[:proven])
    assert "proven in order (50 asked)" in result.solutions_note(50)


@given(
    trees=st.integers(1, 4),
    depth=st.integers(1, 3),
    features=st.integers(1, 3),
    seed=st.integers(0, 10_000),
    n=st.integers(1, 25),
    maximise=st.booleans(),
)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_property_astar_equals_brute_force_on_small_models(
    trees, depth, features, seed, n, maximise
):
    model = random_forest(trees, depth, features, seed)
    assert_n_best(one_model(model, (Maximize if maximise else Minimize)(term())), n)


def test_an_engine_that_cannot_refuses_naming_those_that_can():
    query = one_model(random_forest(2, 2, 2, 3), Maximize(term()))
    with pytest.raises(UnsupportedQuery) as refusal:
        solve(SatEngine(), query, Limits(solutions=3))
    assert str(refusal.value).endswith(
        "engine sat cannot honour solutions; engines that can: oracle, astar, milp, gurobi"
    )


def test_a_query_without_an_objective_has_nothing_to_rank():
    query = one_model(random_forest(2, 2, 2, 3), Find())
    with pytest.raises(UnsupportedQuery, match="solutions = N ranks"):
        solve(AStarEngine(), query, Limits(solutions=3))


def spec(tmp_path, engines: str, goal: str = "maximize m(x)") -> str:
    random_forest(4, 3, 3, 7).save(tmp_path / "forest.json")
    path = tmp_path / "top.ver"
    expect = "expect upper <= 1000" if goal != "find" else "expect found"
    path.write_text(
        'model m = ensemble "forest.json"\n'
        f"query top {{\n  input x\n  {goal}\n  {expect}\n"
        f"  solve with {engines}\n}}\n"
    )
    return str(path)


def test_ver_run_json_gives_the_n_best_of_each_engine(tmp_path, capsys):
    path = spec(tmp_path, "astar(solutions = 6), oracle(solutions = 6), milp(solutions = 6)")
    code = main(["run", path, "--json"])
    entry = json.loads(capsys.readouterr().out)["results"][0]
    assert code == ExitCode.OK
    astar, oracle, milp = entry["engines"]
    for result in (astar, oracle, milp):
        assert result["solutions_proven"] == len(result["solutions"]) == 6
        found = [s["value"] for s in result["solutions"]]
        assert found == sorted(found, reverse=True) and found[0] == result["lower"]
        assert result["solutions"][0]["witness"] == result["witness"]
        points = [tuple(s["witness"]["x"].values()) for s in result["solutions"]]
        assert len(set(points)) == 6
    for result in (astar, milp):
        assert [s["value"] for s in result["solutions"]] == pytest.approx(
            [s["value"] for s in oracle["solutions"]]
        )


def test_ver_run_prints_each_solution(tmp_path, capsys):
    code = main(["run", spec(tmp_path, "astar(solutions = 3)", "minimize m(x)")])
    out = capsys.readouterr().out
    assert code == ExitCode.OK
    assert [line.split(":")[0].strip() for line in out.splitlines() if "solution " in line] == [
        "solution 1",
        "solution 2",
        "solution 3",
    ]


@pytest.mark.parametrize(
    ("engines", "goal", "column", "message"),
    [
        ("astar(solutions = 0)", "maximize m(x)", 20, "`solutions` must be positive"),
        ("astar(solutions = 1.5)", "maximize m(x)", 20, "`solutions` is a whole number"),
        ("astar(solutions = 2)", "find", 20, "`solutions` ranks the values of an objective"),
        ("sat(solutions = 2)", "maximize m(x)", 14, "engine sat cannot honour solutions"),
        ("astar(solutions = 2, gap = 1%)", "maximize m(x)", 14, "do not go together"),
    ],
)
def test_a_bad_solutions_option_is_a_located_error(
    tmp_path, capsys, engines, goal, column, message
):
    code = main(["run", spec(tmp_path, engines, goal)])
    err = capsys.readouterr().err
    assert code == ExitCode.ERROR
    assert f"top.ver:6:{column}" in err and message in err
    assert "Traceback" not in err


def test_the_oracle_stopped_after_some_solutions_keeps_sound_bounds(monkeypatch):
    # Ctrl-C after three points: those are the three best, in order, and the bounds are the
    # optimum's (the combinations tried after the first bound only worse ones).
    from veritas_dsl.solvers.oracle import engine as oracle_engine

    query = one_model(random_forest(4, 3, 3, 1), Maximize(term()))
    full = solve(OracleEngine(), query, Limits(solutions=10))
    found = oracle_engine.find_point
    points = []

    def interrupted_after_three(*args, **kwargs):
        if len(points) == 3:
            raise KeyboardInterrupt
        point = found(*args, **kwargs)
        if point is not None:
            points.append(point)
        return point

    monkeypatch.setattr(oracle_engine, "find_point", interrupted_after_three)
    result = solve(OracleEngine(), query, Limits(solutions=10))
    assert result.termination is Termination.INTERRUPTED
    assert result.solutions_proven == 3 and values(result) == values(full)[:3]
    assert result.lower == result.upper == full.lower


def test_milp_stopped_by_a_limit_on_a_later_solve_keeps_the_ones_before(monkeypatch):
    from veritas_dsl.solvers import nogoods

    query = one_model(random_forest(4, 3, 3, 2), Maximize(term()))
    full = solve(MilpEngine("milp", "highs"), query, Limits(solutions=6))
    solves, route = [], nogoods.route

    def third_runs_out_of_time(engine, q, limits, progress=None):
        solves.append(q)
        if len(solves) == 3:
            lower, upper = full.lower - 1, full.upper  # bounds of what the no-goods left
            return Result(q.name, engine.name, Termination.TIME_LIMIT, lower, upper)
        return route(engine, q, limits, progress)

    monkeypatch.setattr(nogoods, "route", third_runs_out_of_time)
    result = solve(MilpEngine("milp", "highs"), query, Limits(solutions=6))
    assert result.termination is Termination.TIME_LIMIT
    assert result.solutions_proven == 2 and values(result) == values(full)[:2]
    assert (result.lower, result.upper) == (full.lower, full.upper)  # the first solve's
    assert result.solutions_note(6) == (
        "the first 2 of 2 solutions found are proven in order (6 asked)"
    )


def test_an_infeasible_query_checks_its_premise_without_asking_it_for_solutions(tmp_path, capsys):
    # No input reaches m(x) >= 1000, so `expect upper <= 0` holds if some input meets the
    # linear condition, which the static box cannot tell: a find of it decides, and a find
    # has no solutions to rank.
    random_forest(4, 3, 3, 7).save(tmp_path / "forest.json")
    path = tmp_path / "none.ver"
    path.write_text(
        'model m = ensemble "forest.json"\n'
        "query top {\n  input x\n  where x.f0 + x.f1 >= 1\n  where m(x) >= 1000\n"
        "  maximize m(x)\n  expect upper <= 0\n  solve with astar(solutions = 3)\n}\n"
    )
    code = main(["run", str(path), "--json"])
    entry = json.loads(capsys.readouterr().out)["results"][0]
    assert entry["status"] == "infeasible" and entry["solutions"] == []
    assert [c["verdict"] for c in entry["checks"]] == ["holds"]
    assert code == ExitCode.OK
