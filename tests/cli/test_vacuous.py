"""Vacuous answers: a property whose premise no input satisfies, or an expectation over a query no
input satisfies, is the verdict `vacuous` (a failed check), and conditions that no input
satisfies on their bounds alone get a located warning before anything runs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from veritas_dsl.cli import ExitCode, main

HEADER = 'model m = ensemble "m.json"\ndata rows = csv "rows.csv"\n'


@pytest.fixture
def folder(tmp_path, two_trees):
    two_trees.save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1\n0,0\n0.25,0.5\n9,0\n")
    return tmp_path


def write(folder, body: str, name: str = "spec.ver") -> str:
    path = folder / name
    path.write_text(HEADER + body)
    return str(path)


EMPTY_PREMISE = """
property impossible {
    forall x: x.x1 >= 30 and x.x1 <= 10 => m(x) <= 100
}
"""


def test_a_property_with_an_empty_premise_is_vacuous_in_ver_check(folder, capsys):
    path = write(folder, EMPTY_PREMISE)
    assert main(["check", path]) == ExitCode.FAILED
    captured = capsys.readouterr()
    assert (
        f"{path}:4:1: impossible: property impossible: vacuous "
        "(no input satisfies the premise; 0." in captured.out
    )
    assert captured.out.splitlines()[-1] == (
        "1 checks in 1 file: 0 hold, 0 failed, 1 vacuous, 0 undecided"
    )
    # the located warning, on stderr, points at both conditions at once
    assert captured.err.startswith(
        "warning[V601]: no input satisfies the premise of property `impossible`\n"
        f" --> {path}:5:15\n"
        "  |\n"
        "5 |     forall x: x.x1 >= 30 and x.x1 <= 10 => m(x) <= 100\n"
        "  |               ^^^^^^^^^^^^^^^^^^^^^^^^^ `x.x1` would have to be >= 30 and <= 10\n"
    )


def test_ver_run_warns_of_an_empty_where_with_its_location(folder, capsys):
    body = "query q {\n    input x\n    where x.x1 >= 30 and x.x1 <= 10\n    maximize m(x)\n}\n"
    path = write(folder, body)
    assert main(["run", path]) == ExitCode.OK  # no check to fail; the answer is still given
    captured = capsys.readouterr()
    assert "infeasible" in captured.out and "warning" not in captured.out
    assert "warning[V601]: no input satisfies the conditions of query `q`" in captured.err
    assert f"--> {path}:5:11" in captured.err
    assert "^^^^^^^^^^^^^^^^^^^^^^^^^ `x.x1` would have to be >= 30 and <= 10" in captured.err
    assert "every engine answers `infeasible`" in captured.err


def test_json_keeps_warnings_in_the_document_and_off_stdout_text(folder, capsys):
    body = "query q {\n    input x\n    where x.x1 >= 30 and x.x1 <= 10\n    maximize m(x)\n    expect upper <= 7\n}\n"
    path = write(folder, body)
    assert main(["run", "--json", path]) == ExitCode.FAILED
    captured = capsys.readouterr()
    document = json.loads(captured.out)  # stdout is one JSON document, nothing else
    (check,) = document["results"][0]["checks"]
    assert check["verdict"] == "vacuous" and check["holds"] is False
    assert check["detail"] == "no input satisfies the query's input conditions"
    (warning,) = document["warnings"]
    assert (warning["code"], warning["line"], warning["column"]) == ("V601", 5, 11)
    assert "warning[V601]" in captured.err


def test_check_json_and_junit_carry_the_vacuous_verdict(folder, tmp_path, capsys):
    path = write(folder, EMPTY_PREMISE)
    junit = tmp_path / "junit.xml"
    assert main(["check", "--json", "--junit", str(junit), path]) == ExitCode.FAILED
    document = json.loads(capsys.readouterr().out)
    (check,) = document["checks"]
    assert check["verdict"] == "vacuous"
    assert check["detail"] == "no input satisfies the premise"
    assert [w["code"] for w in document["warnings"]] == ["V601"]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1"
    failure = suite.find("testcase/failure")
    assert failure.get("message") == "vacuous: no input satisfies the premise"


def test_a_one_hot_group_can_empty_a_premise(tmp_path, one_hot_trees, capsys):
    one_hot_trees.save(tmp_path / "m.json")
    path = tmp_path / "g.ver"
    path.write_text(
        'model m = ensemble "m.json"\n'
        "features {\n    g : onehot(b0, b1, b2)\n}\n"
        "property both {\n    forall x: x.g == b0 and x.g == b2 => m(x) <= 1\n}\n"
        "property one {\n    forall x: x.g == b0 => m(x) <= 8\n}\n"
    )
    assert main(["check", str(path)]) == ExitCode.FAILED
    captured = capsys.readouterr()
    assert "both: property both: vacuous (no input satisfies the premise" in captured.out
    assert "one: property one: holds" in captured.out
    assert "would both be 1, but one-hot group (b0, b1, b2) allows one" in captured.err


def test_a_batch_row_outside_the_domain_is_vacuous_and_named(folder, capsys):
    body = (
        "features {\n    x0 : real in [0, 5]\n}\n"
        "property calm for r in rows[0:3] {\n    forall x: linf(x, r) <= 0.25 => m(x) <= 2\n}\n"
    )
    path = write(folder, body)
    assert main(["check", path]) == ExitCode.FAILED
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert "calm[0]: property calm: holds" in lines[0]
    assert "calm[1]: property calm: holds" in lines[1]
    assert "calm[2]: property calm: vacuous (no input satisfies the premise" in lines[2]
    assert "no input satisfies the premise of property `calm`, for row rows[2]" in captured.err
    assert "within 0.25 of rows[2], where it is 9) and <= 5 (its domain: real in [0, 5])" in (
        captured.err
    )


def test_the_engine_decides_a_premise_on_outputs(folder, capsys):
    # The model's largest output is 7: no input reaches 8, some reach 7.
    body = (
        "property never {\n    forall x: m(x) >= 8 => m(x) <= 0\n}\n"
        "property top {\n    forall x: m(x) >= 7 => m(x) <= 7\n    solve with milp\n}\n"
    )
    path = write(folder, body)
    assert main(["check", path]) == ExitCode.FAILED
    captured = capsys.readouterr()
    assert "never: property never: vacuous (no input satisfies the premise" in captured.out
    assert "top: property top: holds (no counterexample exists" in captured.out
    assert "warning" not in captured.err  # nothing the bounds alone could show


def test_a_premise_check_stopped_at_a_limit_is_undecided(folder, capsys):
    # One A* step proves that no output exceeds 100, but does not find an input reaching 7.
    body = (
        "property high {\n    forall x: m(x) >= 7 => m(x) <= 100\n"
        "    solve with astar(steps = 1)\n}\n"
    )
    assert main(["check", write(folder, body)]) == ExitCode.FAILED
    out = capsys.readouterr().out
    assert (
        "high: property high: undecided (no counterexample exists, but the premise could not "
        "be shown satisfiable (step_limit)" in out
    )


def test_expectations_of_queries(folder, capsys):
    body = """
query none_in_nothing {
    input x
    where x.x1 >= 30 and x.x1 <= 10 and m(x) > 100
    expect none
}
query none_near_a_row {
    input x
    where linf(x, rows[0]) <= 0.25 and m(x) > 100
    expect none
}
query highest_of_nothing {
    input x
    where m(x) > 100
    maximize m(x)
    expect upper <= 0
}
"""
    assert main(["check", write(folder, body)]) == ExitCode.FAILED
    out = capsys.readouterr().out
    # the input conditions are empty: nothing is claimed
    assert "none_in_nothing: expect none: vacuous (no input satisfies the query's input" in out
    # the ball holds inputs, none of which reaches 100: a robustness claim that holds
    assert "none_near_a_row: expect none: holds (no input satisfies the query" in out
    # outputs in `where` are the question: the maximum over no input is -inf, and that is <= 0
    assert "highest_of_nothing: expect upper <= 0: holds" in out


def test_a_dead_alternative_is_warned_of(folder, capsys):
    body = (
        "query q {\n    input x\n    where x.x0 >= 3 and (x.x0 <= 1 or x.x1 >= 2)\n"
        "    maximize m(x)\n}\n"
    )
    path = write(folder, body)
    assert main(["run", path]) == ExitCode.OK
    err = capsys.readouterr().err
    assert "warning[V602]: this alternative can never hold, in query `q`" in err
    assert f"--> {path}:5:26" in err
    assert f"together with the condition at {path}:5:11" in err


def test_a_batch_shares_one_warning(folder, capsys):
    body = (
        "query q for r in rows[0:3] {\n    input x\n    where x.x1 >= 30 and x.x1 <= 10\n"
        "    maximize m(x)\n}\n"
    )
    assert main(["run", write(folder, body)]) == ExitCode.OK
    err = capsys.readouterr().err
    assert err.count("warning[V601]") == 1
    assert "no input satisfies the conditions of query `q`, for every row (3)" in err
