"""An engine that fails, or cannot take a query, means not everything asked for ran: exit 2 in
`ver run`, `ver check` and `ver compare`, with every result still reported."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from odd_engines import FAILURE, register

from veritas_dsl.cli import ExitCode, main

HEADER = 'model m = ensemble "m.json"\ndata rows = csv "rows.csv"\n'
TWO = (
    HEADER
    + """
query broken {
    input x
    maximize m(x)
    expect upper <= 7
    solve with failing
}
query fine {
    input x
    minimize m(x)
    expect lower >= -3
}
"""
)


@pytest.fixture
def spec(tmp_path, two_trees, monkeypatch):
    register(monkeypatch)
    two_trees.save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1\n0,0\n1.5,0.5\n")
    path = tmp_path / "spec.ver"
    path.write_text(TWO)
    return path


def test_run_exits_2_and_shows_every_result(spec, capsys):
    assert main(["run", str(spec)]) == ExitCode.ERROR
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert out[0].split()[:4] == ["broken", "failing", "error", "(0.00"]  # no bound shown
    assert f"error: {FAILURE}" in out[1]
    assert any(line.startswith("fine ") and "value -3" in line for line in out)
    assert f"{spec}:4:1: broken: engine failing failed: {FAILURE}" in captured.err


@pytest.mark.parametrize("command", ["run", "check"])
def test_an_engine_that_raises_is_an_engine_error_not_an_internal_error(spec, command, capsys):
    spec.write_text(TWO.replace("solve with failing", "solve with raising"))
    assert main([command, "--json", str(spec)]) == ExitCode.ERROR
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    broken, fine = document["results" if command == "run" else "checks"]
    why = "ZeroDivisionError: a bug in the engine"
    assert (broken["status"], broken["message"]) == ("error", why)
    assert fine["status"] == "optimal"
    assert "internal error" not in captured.err and "Traceback" not in captured.err


def test_debug_shows_the_traceback_of_an_engine_that_raises(spec, capsys):
    spec.write_text(TWO.replace("solve with failing", "solve with raising"))
    assert main(["--debug", "run", str(spec)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "engine raising failed on query broken\nTraceback" in err
    assert "ZeroDivisionError: a bug in the engine" in err
    assert main(["run", str(spec)]) == ExitCode.ERROR  # without --debug, no traceback
    assert "Traceback" not in capsys.readouterr().err


def test_run_json_is_the_whole_document(spec, capsys):
    assert main(["run", "--json", str(spec)]) == ExitCode.ERROR
    broken, fine = json.loads(capsys.readouterr().out)["results"]
    assert (broken["status"], broken["message"]) == ("error", FAILURE)
    assert (fine["status"], fine["lower"]) == ("optimal", -3)


def test_check_exits_2_and_names_the_failure(spec, tmp_path, capsys):
    junit = tmp_path / "junit.xml"
    assert main(["check", "--junit", str(junit), str(spec)]) == ExitCode.ERROR
    out = capsys.readouterr().out
    assert "broken: expect upper <= 7: undecided" in out  # not settled by a failed engine
    assert f"  engine failing failed: {FAILURE}" in out
    assert "fine: expect lower >= -3: holds" in out
    assert out.splitlines()[-1].endswith("1 not run by their engine")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("errors"), suite.get("failures")) == ("1", "0")
    assert FAILURE in suite.find("testcase/error").get("message")


def test_check_json_carries_the_message(spec, capsys):
    assert main(["check", "--json", str(spec)]) == ExitCode.ERROR
    broken, fine = json.loads(capsys.readouterr().out)["checks"]
    assert (broken["status"], broken["message"]) == ("error", FAILURE)
    assert fine["verdict"] == "holds"


def test_compare_exits_2(spec, capsys):
    assert main(["compare", str(spec), "--solvers", "oracle,failing"]) == ExitCode.ERROR
    captured = capsys.readouterr()
    rows = [line.split() for line in captured.out.splitlines()]
    assert rows[2][:2] == ["failing", "error"]
    assert f"error: query broken: engine failing failed: {FAILURE}" in captured.err


L1 = (
    HEADER
    + """
query near {
    input x
    where l1(x, rows[0]) <= 1
    maximize m(x)
    expect upper <= 3.5
}
query top {
    input x
    maximize m(x)
    expect upper <= 7
}
"""
)


@pytest.mark.parametrize("command", ["run", "check"])
def test_a_solver_that_lacks_a_construct_runs_the_other_queries(spec, command, capsys):
    spec.write_text(L1)
    assert main([command, "--solver", "sat", str(spec)]) == ExitCode.ERROR
    captured = capsys.readouterr()
    why = "engine sat does not support l1; engines that can: oracle, astar, milp, gurobi"
    assert why in captured.out + captured.err
    if command == "run":
        assert captured.out.splitlines()[0].split()[:3] == ["near", "sat", "unsupported"]
        assert f"{spec}:4:1: near: unsupported: {why}" in captured.err
        assert any(
            line.startswith("top ") and "value 7" in line for line in captured.out.split("\n")
        )
    else:
        assert "top: expect upper <= 7: holds" in captured.out
    assert "nothing was run" not in captured.err


def test_an_engine_named_in_the_spec_that_lacks_a_construct_stops_everything(spec, capsys):
    spec.write_text(
        L1.replace("maximize m(x)\n    expect upper <= 3.5", "maximize m(x)\n    solve with sat")
    )
    assert main(["run", str(spec)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "error[V503]" in err and "1 error; nothing was run" in err


@pytest.mark.parametrize("command", ["run", "check"])
def test_a_solver_that_is_not_installed_is_a_command_line_error(spec, command, capsys):
    with pytest.raises(SystemExit) as stopped:
        main([command, "--solver", "absent", str(spec)])
    assert stopped.value.code == ExitCode.ERROR
    err = capsys.readouterr().err
    assert f"ver {command}: error: argument --solver: engine absent is not available here" in err
