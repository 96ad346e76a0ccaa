"""One plan a query, made before anything runs: engines' capabilities are checked once a query
and engine (at preflight, never again while solving, nor in workers), and a witness is validated
once, in the process that holds the library models (a worker does not)."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest

from veritas_dsl import cluster, compare, parallel, parse, run
from veritas_dsl.parallel import Pool, run_all
from veritas_dsl.run import RunOptions, preflight
from veritas_dsl.solvers import registry

ROOT = Path(__file__).resolve().parents[1]


def lowered_queries(engines: str | None = None, norm: str = "linf"):
    """The 20 lowered queries of examples/closest.ver, on ``engines`` when given."""
    text = (ROOT / "examples" / "closest.ver").read_text().replace("linf(", f"{norm}(")
    if engines:
        solve_with = f"minimize {norm}(x, r)\n    solve with {engines}\n"
        text = text.replace(f"minimize {norm}(x, r)\n", solve_with)
    return list(parse(text, str(ROOT / "examples" / "planned.ver")).lowered())


@pytest.fixture
def checks(monkeypatch):
    """The engine names ``registry.check_supports`` was asked about, in order."""
    seen = []
    real = registry.check_supports

    def counted(engine, query):
        seen.append(engine.name)
        return real(engine, query)

    monkeypatch.setattr(registry, "check_supports", counted)
    return seen


@pytest.mark.parametrize("engines", ["milp", "astar, milp"])
def test_capabilities_are_checked_once_a_query_and_engine(checks, engines):
    lowered = lowered_queries(engines)
    options = RunOptions(timeout_s=30)
    plans = preflight(lowered, options)
    per_query = len(engines.split(", "))
    assert len(checks) == per_query * len(lowered) == 20 * per_query
    runs = run_all(lowered, options, 1, plans=plans)
    assert len(checks) == per_query * len(lowered)  # none while solving
    assert all(len(r.results) == per_query for r in runs)
    assert sum(bool(r.result.witnesses) for r in runs) == 16  # 4 rows have no counterfactual


def test_a_whole_file_solver_that_lacks_a_construct_is_planned_unsupported(checks):
    # SAT measures no L1 distance: every query reported unsupported, none an error
    lowered = lowered_queries(norm="l1")
    plans = preflight(lowered, RunOptions(solver="sat"))
    assert [p.refusal[0] for p in plans] == ["sat"] * 20 and len(checks) == 20
    runs = run_all(lowered, RunOptions(solver="sat"), 1, plans=plans)
    assert {r.result.termination.value for r in runs} == {"unsupported"}
    assert len(checks) == 20


def test_compare_checks_each_engine_once_a_query(checks):
    lowered = lowered_queries()[:2]
    compare.compare(lowered, ["astar", "milp", "sat"], 30)
    assert checks == ["astar", "milp", "sat"] * 2


class _HereAsWorker(Pool):
    """Each task run in this process by the worker's own function, so its calls are counted."""

    def __init__(self, lowered, task) -> None:
        self.lowered = lowered
        self.task = task

    def submit(self, index, plan) -> Future:
        answer = Future()
        answer.set_result(self.task(self.lowered, index, plan))
        return answer


def _dask_task(lowered, index, plan):
    return cluster._solve_on_worker(lowered, index, RunOptions(), plan)


def _process_task(lowered, index, plan):
    parallel._worker_lowered = lowered
    return parallel._solve_task(index, RunOptions(), plan)


@pytest.mark.parametrize("task", [_dask_task, _process_task])
def test_a_workers_witness_is_validated_once_in_the_parent(monkeypatch, task):
    class Stop:
        def is_set(self) -> bool:
            return False

    monkeypatch.setattr(parallel.signal, "signal", lambda *args: None)  # this process's Ctrl-C
    monkeypatch.setattr(parallel, "_worker_stop", Stop())
    monkeypatch.setattr(parallel, "_worker_lowered", [])
    validated = []
    real = run.validate_witnesses

    def counted(query, witnesses):
        validated.extend(id(w) for w in witnesses)
        return real(query, witnesses)

    monkeypatch.setattr(run, "validate_witnesses", counted)
    lowered = lowered_queries()[:4]
    runs = run_all(lowered, RunOptions(), 1, pool=lambda queries: _HereAsWorker(queries, task))
    witnesses = [id(w) for r in runs for result in r.results for w in result.witnesses]
    assert witnesses and sorted(validated) == sorted(witnesses)


def test_a_spec_run_checks_each_query_once(checks):
    # The Python API (Spec.run) plans at preflight and hands the plans on, as `ver run` does.
    spec = parse((ROOT / "examples" / "closest.ver").read_text(), str(ROOT / "examples" / "x.ver"))
    runs = spec.run(solver="milp", timeout_s=30)
    assert len(runs) == 20 and len(checks) == 20
