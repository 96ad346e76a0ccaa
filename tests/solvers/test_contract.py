"""The engine contract, the same for every engine (``veritas_dsl.solvers.solve``): capabilities
(constructs and limits) are checked before an engine runs, a fault of any engine is the same
``error`` Result carrying the exception, Ctrl-C is still each engine's ``interrupted``, and a
Result keeps why the engine stopped apart from what it found."""

from __future__ import annotations

import json
import pickle

import pytest

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.ir import Ball, Maximize, OutputConstraint, Query, Row
from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.constructs import CONSTRUCTS
from veritas_dsl.ir.query import Find, Prove
from veritas_dsl.result import Result, Solution, Termination, Witness
from veritas_dsl.run import EngineDisagreement, cross_check
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.astar import engine as astar_engine
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.milp import engine as milp_engine
from veritas_dsl.solvers.oracle import engine as oracle_engine
from veritas_dsl.solvers.sat import engine as sat_engine
from veritas_dsl.solvers.solve import solve
from veritas_dsl.validate import validate_witness

from conftest import require
from reference.ir import features, out, term

#: Where each engine's work can be made to fail: a name its engine module calls while solving.
FAULT_AT = {
    "astar": (astar_engine, "build_problem"),
    "milp": (milp_engine, "formulate"),
    "gurobi": (milp_engine, "formulate"),
    "sat": (sat_engine, "Encoding"),
    "oracle": (oracle_engine, "build_space"),
}


def query_of(model, goal, constraints=()) -> Query:
    return Query("q", features(model), ("x",), {"m": model}, tuple(constraints), goal)


def test_every_engine_has_a_place_for_a_fault():
    assert set(FAULT_AT) == set(registry.ENGINES)


@pytest.mark.parametrize("name", list(registry.ENGINES))
@pytest.mark.parametrize("goal", ["maximize", "find"])
def test_a_fault_of_any_engine_is_the_same_error_result(name, goal, two_trees, monkeypatch):
    engine = registry.get(name)
    require(engine)
    fault = RuntimeError("the engine broke")

    def broken(*args, **kwargs):
        raise fault

    module, attribute = FAULT_AT[name]
    monkeypatch.setattr(module, attribute, broken)
    big = OutputConstraint(term(out()), ">", 5.0)
    query = query_of(two_trees, Maximize(term(out())) if goal == "maximize" else Find(), [big])
    result = solve(engine, query, Limits(timeout_s=30))
    assert result.termination is Termination.ERROR
    assert result.error is fault
    assert result.message == "RuntimeError: the engine broke"
    assert (result.lower, result.upper) == trivial_bounds(query)
    assert (result.engine, result.query, result.witnesses) == (name, "q", [])
    assert result.solution is Solution.NONE and not result.exact


@pytest.mark.parametrize("name", list(registry.ENGINES))
def test_ctrl_c_in_any_engine_is_still_interrupted(name, two_trees, monkeypatch):
    engine = registry.get(name)
    require(engine)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    module, attribute = FAULT_AT[name]
    monkeypatch.setattr(module, attribute, interrupted)
    query = query_of(two_trees, Maximize(term(out())))
    result = solve(engine, query, Limits(timeout_s=30))
    assert result.termination is Termination.INTERRUPTED
    assert result.lower <= 7 <= result.upper  # the bounds stay bounds


def test_a_construct_the_engine_lacks_is_refused_before_it_runs(two_trees, monkeypatch):
    """SAT does not take L1 balls: refused with the engines that can, and never run."""
    monkeypatch.setattr(sat_engine, "Encoding", None)  # running it would fail otherwise
    ball = Ball("l1", "x", Row((0.0, 0.0)), 1.0)
    query = query_of(two_trees, Maximize(term(out())), [ball])
    with pytest.raises(UnsupportedQuery, match=r"engine sat does not support l1; engines that can"):
        solve(registry.get("sat"), query, Limits(timeout_s=30))


@pytest.mark.parametrize(
    ("name", "limits", "missing"),
    [
        ("sat", Limits(max_steps=100), "steps"),
        ("oracle", Limits(max_memory_bytes=1 << 30), "memory"),
        ("milp", Limits(timeout_s=5, max_memory_bytes=1 << 30), "memory"),
    ],
)
def test_a_limit_the_engine_cannot_honour_is_refused_naming_those_that_can(
    name, limits, missing, two_trees
):
    query = query_of(two_trees, Maximize(term(out())))
    able = [n for n, e in registry.ENGINES.items() if limits.asked() <= e.capabilities.limits]
    assert "astar" in able and name not in able
    message = f"engine {name} cannot honour {missing}; engines that can: {', '.join(able)}"
    with pytest.raises(UnsupportedQuery, match=message):
        solve(registry.get(name), query, limits)


def test_a_witness_found_at_a_time_limit_is_time_limit_with_the_witness(two_trees, monkeypatch):
    """HiGHS reports a solution through its callback and then stops at the time limit: the
    engine stopped for the limit, and the find is answered by the checked witness."""
    real = milp_engine.MilpEngine._run

    def stopped_after_a_solution(self, *args, **kwargs):
        outcome = real(self, *args, **kwargs)
        assert outcome.solution is not None
        outcome.solutions = [(0.0, outcome.objective, outcome.solution)]
        outcome.status = Termination.TIME_LIMIT
        return outcome

    monkeypatch.setattr(milp_engine.MilpEngine, "_run", stopped_after_a_solution)
    big = OutputConstraint(term(out()), ">", 5.0)
    for goal in (Find(), Prove((OutputConstraint(term(out()), "<=", 5.0),))):
        query = query_of(two_trees, goal, [] if isinstance(goal, Prove) else [big])
        result = solve(registry.get("milp"), query, Limits(timeout_s=30))
        assert result.termination is Termination.TIME_LIMIT
        assert len(result.witnesses) == 1
        validate_witness(query, result.witnesses[0])
        assert result.solution is Solution.OPTIMAL and result.exact  # the question is answered


def test_solution_is_what_was_found_whatever_stopped_the_engine():
    witness = Witness({"x": None})
    find = Result("q", "e", Termination.TIME_LIMIT, None, None, [witness])
    bounded = Result("q", "e", Termination.TIME_LIMIT, 1.0, 2.0, [witness])
    nothing = Result("q", "e", Termination.STEP_LIMIT, 0.0, 2.0)
    failed = Result("q", "e", Termination.ERROR, None, None, [witness])
    proven = Result("q", "e", Termination.OPTIMAL, 2.0, 2.0, [witness])
    infeasible = Result("q", "e", Termination.INFEASIBLE, None, None)
    assert [r.solution for r in (find, bounded, nothing, failed, proven, infeasible)] == [
        Solution.OPTIMAL,
        Solution.FEASIBLE,
        Solution.NONE,
        Solution.NONE,
        Solution.OPTIMAL,
        Solution.INFEASIBLE,
    ]
    assert [r.exact for r in (find, bounded, nothing, failed)] == [True, False, False, False]


def test_an_error_result_crosses_processes_without_its_exception():
    class Odd(Exception):
        def __init__(self, a, b):  # does not unpickle from its args
            super().__init__(f"{a}{b}")

    result = Result("q", "e", Termination.ERROR, message="Odd: 12", error=Odd(1, 2))
    copy = pickle.loads(pickle.dumps(result))
    assert (copy.termination, copy.message, copy.error) == (Termination.ERROR, "Odd: 12", None)
    assert result.error is not None  # the original keeps it


def test_engines_agree_by_what_they_found_not_why_they_stopped():
    witness = Witness({"x": None})
    found = Result("q", "astar", Termination.OPTIMAL, None, None, [witness])
    found_at_limit = Result("q", "milp", Termination.TIME_LIMIT, None, None, [witness])
    none = Result("q", "sat", Termination.INFEASIBLE, None, None)
    cross_check("q", [found, found_at_limit])
    with pytest.raises(EngineDisagreement, match=r"milp says optimal .* sat says infeasible"):
        cross_check("q", [found_at_limit, none])


@pytest.mark.parametrize("scale", [1e-13, 1e-6, 1.0, 1e15])
def test_engines_disagree_by_a_relative_difference_at_every_scale(scale):
    def answer(engine, value):
        return Result("q", engine, Termination.OPTIMAL, value, value, [Witness({"x": None})])

    cross_check("q", [answer("astar", 2.793 * scale), answer("milp", 2.793 * scale * (1 + 1e-9))])
    with pytest.raises(EngineDisagreement):  # an absolute 1e-6 let 2.8e-13 and 7.5e-13 agree
        cross_check("q", [answer("astar", 2.793 * scale), answer("milp", 4.855 * scale)])


def test_engines_agree_on_zero_summed_in_another_order():
    def answer(engine, value):
        return Result("q", engine, Termination.OPTIMAL, value, value, [Witness({"x": None})])

    cross_check("q", [answer("astar", 0.0), answer("milp", 0.1 + 0.2 + 0.3 - 0.1 - 0.2 - 0.3)])


SPEC = """model m = ensemble "m.json"
query big {
    input x
    where m(x) > 5
    expect found
    solve with milp
}
property small {
    forall x: m(x) <= 5
    solve with milp
}
"""


def test_a_find_answered_at_a_time_limit_keeps_its_verdict(
    two_trees, tmp_path, capsys, monkeypatch
):
    """The reports say the limit stopped the engine, and that it found what it was asked for."""
    real = milp_engine.MilpEngine._run

    def stopped_after_a_solution(self, *args, **kwargs):
        outcome = real(self, *args, **kwargs)
        outcome.solutions = [(0.0, outcome.objective, outcome.solution)]
        outcome.status = Termination.TIME_LIMIT
        return outcome

    monkeypatch.setattr(milp_engine.MilpEngine, "_run", stopped_after_a_solution)
    two_trees.save(tmp_path / "m.json")
    spec = tmp_path / "spec.ver"
    spec.write_text(SPEC)
    assert main(["run", "--json", str(spec)]) == ExitCode.FAILED  # the property fails
    big, small = json.loads(capsys.readouterr().out)["results"]
    for entry in (big, small):
        assert (entry["status"], entry["solution"]) == ("time_limit", "optimal")
        assert entry["witness"] is not None
    assert main(["run", str(spec)]) == ExitCode.FAILED
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["big", "milp", "found", "(time_limit)"]
    assert out[1].split() == ["ok", "expect", "found", "(an", "input", "was", "found)"]
    words = [line.split() for line in out]
    assert ["FAILED", "property", "small", "(counterexample", "found)"] in words
    assert ["small", "milp", "counterexample", "found", "(time_limit)"] in [w[:5] for w in words]


# A new construct, added to the IR before any engine is imported: every engine must refuse a
# query that uses it until it lists it (capabilities are listed, never CONSTRUCTS minus some).
NEW_CONSTRUCT = """
import importlib.abc, importlib.util, sys

class AddL3(importlib.abc.MetaPathFinder):
    # The IR module gets "l3" as it is first imported, before anything reads it.
    def find_spec(self, name, path, target=None):
        if name != "veritas_dsl.ir.constructs":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.CONSTRUCTS = module.CONSTRUCTS | {"l3"}
            used = module.constructs
            module.constructs = lambda query: used(query) | {"l3"}

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, AddL3())
from veritas_dsl.solvers import registry
from veritas_dsl.ir import Maximize, Query
from veritas_dsl.ir.query import Feature, OutputTerm, OutputAtom
from veritas_dsl.model import Ensemble
model = Ensemble([-1], [0], [-1], [-1], [[1.0]], [0, 1], [0.0], ("x",))
query = Query("q", (Feature("x"),), ("x",), {"m": model}, (),
              Maximize(OutputTerm((OutputAtom(1.0, "m", "x", 0),))))
claims = [n for n, e in registry.ENGINES.items() if "l3" in e.capabilities.constructs]
assert not claims, claims
assert registry.able(query) == [], registry.able(query)
for engine in registry.ENGINES.values():
    try:
        registry.check_supports(engine, query)
    except registry.UnsupportedQuery as refusal:
        assert "l3" in str(refusal), refusal
    else:
        raise AssertionError(f"{engine.name} took a query using l3")
print("every engine refused")
"""


def test_a_construct_new_to_the_ir_is_refused_by_every_engine():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", NEW_CONSTRUCT], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "every engine refused" in done.stdout, done.stderr


def test_every_engine_lists_only_constructs_of_the_ir():
    for engine in registry.ENGINES.values():
        assert engine.capabilities.constructs <= CONSTRUCTS, engine.name
    # the reference answers every construct, so that every engine can be checked against it
    assert registry.get("oracle").capabilities.constructs == CONSTRUCTS


@pytest.mark.parametrize("construct", sorted(CONSTRUCTS))
def test_every_engine_supports_or_refuses_every_construct(construct, two_trees, monkeypatch):
    # a query that uses just this construct, as constructs() would report it
    monkeypatch.setattr(registry, "constructs", lambda query: frozenset({construct}))
    query = query_of(two_trees, Maximize(term(out())))
    takers = [n for n, e in registry.ENGINES.items() if construct in e.capabilities.constructs]
    assert registry.able(query) == takers
    for name, engine in registry.ENGINES.items():
        if name in takers:
            registry.check_supports(engine, query)
            continue
        with pytest.raises(UnsupportedQuery) as refusal:
            registry.check_supports(engine, query)
        assert f"does not support {construct}; engines that can: {', '.join(takers)}" in str(
            refusal.value
        )
