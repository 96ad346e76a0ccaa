"""`ver check`: one line per check, exit codes, JSON, JUnit XML, folders of specs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from veritas_dsl.cli import ExitCode, main

HEADER = 'model m = ensemble "m.json"\ndata rows = csv "rows.csv"\n'
PASSING = (
    HEADER
    + """
query top {
    input x
    maximize m(x)
    expect upper <= 7
}
property calm for r in rows[0:2] {
    forall x: linf(x, r) <= 0.25 => m(x) <= 2
}
query unchecked {
    input x
    minimize m(x)
}
"""
)
FAILING = (
    HEADER
    + """
property steady {
    forall x: linf(x, rows[0]) <= 1 => m(x) <= 1.5
}
query top {
    input x1, x2
    where x1 == x2 except x0
    maximize m(x2) - m(x1)
    expect upper <= 5
}
"""
)


@pytest.fixture
def folder(tmp_path, two_trees):
    two_trees.save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1\n0,0\n0.25,0.5\n")
    (tmp_path / "pass.ver").write_text(PASSING)
    return tmp_path


def test_all_hold(folder, capsys):
    assert main(["check", str(folder / "pass.ver")]) == ExitCode.OK
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0].endswith("top: expect upper <= 7: holds (upper = 7; value 7; 0.00 s)")
        or "top: expect upper <= 7: holds" in out[0]
    )
    assert sum("calm[" in line for line in out) == 2
    assert not any("unchecked" in line for line in out)  # queries without expect are not run
    assert out[-1] == "3 checks in 1 file: 3 hold, 0 failed, 0 undecided"


def test_failures_exit_1_and_show_the_counterexample(folder, capsys):
    (folder / "fail.ver").write_text(FAILING)
    assert main(["check", str(folder)]) == ExitCode.FAILED
    out = capsys.readouterr().out
    assert "steady: property steady: failed (counterexample found" in out
    assert "counterexample:" in out and "feature  x" in out
    assert "top: expect upper <= 5: failed (upper = 5.5" in out
    assert "x1  x2" in out  # the two instances side by side
    assert out.splitlines()[-1] == "5 checks in 2 files: 3 hold, 2 failed, 0 undecided"


def test_spec_errors_exit_2_and_other_files_still_run(folder, capsys):
    (folder / "broken.ver").write_text(
        HEADER + "query q { input x  where x.nope > 0  expect found }"
    )
    assert main(["check", str(folder)]) == ExitCode.ERROR
    out = capsys.readouterr().out
    assert "error[V204]: unknown feature `nope`" in out
    assert "3 hold" in out and "1 spec error" in out


def test_json(folder, capsys):
    (folder / "fail.ver").write_text(FAILING)
    assert main(["check", "--json", str(folder / "fail.ver")]) == ExitCode.FAILED
    checks = json.loads(capsys.readouterr().out)["checks"]
    assert [c["verdict"] for c in checks] == ["failed", "failed"]
    assert checks[0]["witness"]["x"]["x0"] >= 1.0 and checks[0]["line"] == 4
    assert checks[1]["query"] == "top" and checks[1]["status"] == "optimal"


def test_junit(folder, tmp_path, capsys):
    (folder / "fail.ver").write_text(FAILING)
    (folder / "broken.ver").write_text(HEADER + "query q {")
    report = tmp_path / "out" / "junit.xml"
    report.parent.mkdir()
    assert main(["check", "--junit", str(report), str(folder)]) == ExitCode.ERROR
    root = ET.parse(report).getroot()
    suites = {s.get("name").split("/")[-1]: s for s in root.iter("testsuite")}
    assert suites["pass.ver"].get("tests") == "3" and suites["pass.ver"].get("failures") == "0"
    assert suites["fail.ver"].get("failures") == "2"
    failure = suites["fail.ver"].find("testcase/failure")
    assert "counterexample found" in failure.get("message") and "feature" in failure.text
    assert suites["broken.ver"].get("errors") == "1"
    assert suites["broken.ver"].find("testcase/error").get("message").startswith("V10")


def test_nothing_to_check(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == ExitCode.ERROR
    assert "no .ver files" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "absent.ver")]) == ExitCode.ERROR
