"""`ver check` and `ver run` stop a query once its bounds settle every `expect` (status
`decided`), with the verdict a run to the optimum (`--to-optimum`) gives. The model is a random
forest whose optimum takes A* many kernel calls, each double the last (as in
tests/solvers/test_decided.py), so where a run stops does not depend on the machine's speed."""

from __future__ import annotations

import json

import pytest

from veritas_dsl.cli import ExitCode, main

from conftest import random_forest

#: Where a run stops does not depend on the machine (conftest.astar_pace_fixed).
pytestmark = pytest.mark.usefixtures("astar_pace_fixed")


def spec(tmp_path, expects: str, engine: str = "astar") -> str:
    random_forest(30, 4, 6, 5).save(tmp_path / "forest.json")
    path = tmp_path / "decided.ver"
    path.write_text(
        'model m = ensemble "forest.json"\n'
        f"query top {{\n  input x\n  maximize m(x)\n{expects}  solve with {engine}\n}}\n"
    )
    return str(path)


def checked(path: str, *flags: str, capsys) -> tuple[int, dict]:
    code = main(["check", path, "--json", *flags])
    document = json.loads(capsys.readouterr().out)
    return code, document


@pytest.mark.parametrize(
    ("expects", "verdict"),
    [
        ("  expect upper <= 1000\n", "holds"),  # the leaves' bounds settle it at once
        ("  expect lower >= -1000\n", "holds"),  # the first witness settles it
        ("  expect upper <= -1000\n", "failed"),  # so does a witness above -1000
        ("  expect upper <= 1000\n  expect lower >= -1000\n", "holds"),
    ],
)
def test_a_settled_check_stops_the_engine_with_the_optimums_verdict(
    tmp_path, capsys, expects, verdict
):
    path = spec(tmp_path, expects)
    code, early = checked(path, capsys=capsys)
    _, full = checked(path, "--to-optimum", capsys=capsys)
    assert {c["status"] for c in early["checks"]} == {"decided"}
    assert {c["status"] for c in full["checks"]} == {"optimal"}
    assert [c["verdict"] for c in early["checks"]] == [c["verdict"] for c in full["checks"]]
    assert {c["verdict"] for c in early["checks"]} == {verdict}
    assert code == (ExitCode.OK if verdict == "holds" else ExitCode.FAILED)


def test_a_gap_in_solve_with_stops_the_run_within_it(tmp_path, capsys):
    path = spec(tmp_path, "", engine="astar(gap = 20%)")
    assert main(["run", path, "--json"]) == ExitCode.OK
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert result["status"] == "gap"
    lower, upper = result["lower"], result["upper"]
    assert upper - lower <= 0.2 * max(abs(lower), abs(upper))


@pytest.mark.parametrize(
    ("gap", "message"),
    [("1GB", "`gap` is a share"), ("-1", "must be positive"), ('"1%"', "not a string")],
)
def test_a_gap_that_is_no_share_or_number_is_a_located_error(tmp_path, capsys, gap, message):
    path = spec(tmp_path, "", engine=f"astar(gap = {gap})")
    assert main(["run", path]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "error[V502]" in err and message in err and "decided.ver:5:" in err
