"""`--jsonl`, `--csv` written as rows finish, and `--resume`: a run killed mid-batch and resumed
answers every row exactly once, with the answers of a run that was never stopped."""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from veritas_dsl.atomic import OutputError
from veritas_dsl.cli import ExitCode, main
from veritas_dsl.report import jsonl

from conftest import build

SPEC = """model m = ensemble "m.json"
data rows = csv "rows.csv"
query near for r in rows[0:6] {
    input x
    where m(x) >= 2
    minimize l1(x, r)
}
property calm for r in rows[0:6] {
    forall x: linf(x, r) <= 0.3 => m(x) <= 2
}
query pair {
    input x1, x2
    where x1 == x2 except x0
    maximize m(x2) - m(x1)
}
"""
ROWS = "x0,x1\n0,0\n0.75,0.5\n1.5,0.5\n2.5,3\n-1,1.5\n0.9,0.9\n"
#: Every (query, row) the spec answers.
KEYS = {("near", i) for i in range(6)} | {("calm", i) for i in range(6)} | {("pair", None)}


@pytest.fixture
def spec(tmp_path):
    build([(0, 1.0, 0.0, 2.0), (1, 1.0, 0.0, 1.0)], 2).save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text(ROWS)
    path = tmp_path / "spec.ver"
    path.write_text(SPEC)
    return path


def lines(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def answers(entries) -> dict:
    """What must not depend on how the run was split: status, bounds, witness, verdicts."""
    found = {}
    for e in entries:
        verdicts = [c["verdict"] for c in e["checks"]]
        found[(e["query"], e["row"])] = (
            e["status"],
            e["lower"],
            e["upper"],
            e["witness"],
            verdicts,
        )
    return found


def test_jsonl_lines_are_the_json_results_and_csv_the_same_rows(spec, tmp_path, capsys):
    target, table = tmp_path / "out.jsonl", tmp_path / "out.csv"
    code = main(
        ["run", str(spec), "--json", "--jobs", "1", "--jsonl", str(target), "--csv", str(table)]
    )
    assert code == ExitCode.FAILED  # calm fails on some rows
    document = json.loads(capsys.readouterr().out)  # stdout holds the document alone
    streamed = lines(target)
    assert {e.pop("spec_hash") for e in streamed} != {None}
    assert {e.pop("schema") for e in streamed} == {document["schema"]}
    key = lambda e: (e["query"], -1 if e["row"] is None else e["row"])  # noqa: E731
    assert sorted(streamed, key=key) == sorted(document["results"], key=key)
    assert {(e["query"], e["row"]) for e in streamed} == KEYS
    rows = list(csv.reader(io.StringIO(table.read_text())))
    assert rows[0][:2] == ["query", "row"]
    assert sorted((r[0], r[1]) for r in rows[1:]) == sorted(
        (q, "" if r is None else str(r)) for q, r in KEYS
    )


def test_the_summary_and_exit_code_come_from_the_file(spec, tmp_path, capsys):
    target = tmp_path / "out.jsonl"
    assert main(["run", str(spec), "--jobs", "1", "--jsonl", str(target)]) == ExitCode.FAILED
    out = capsys.readouterr().out
    assert f"{target}: 13 results, 6 checks: " in out
    # Nothing is left to answer; the rows of the file still decide the exit code.
    assert main(["run", str(spec), "--resume", str(target)]) == ExitCode.FAILED
    out = capsys.readouterr().out
    assert "0 queries run" in out
    assert f"{target}: 13 results, 6 checks: " in out
    assert len(lines(target)) == 13


def test_a_spec_error_leaves_the_files_as_they_were(spec, tmp_path, capsys):
    target, table = tmp_path / "new.jsonl", tmp_path / "new.csv"
    spec.write_text(SPEC.replace("m(x) >= 2", "m(x) >= nope"))
    code = main(["run", str(spec), "--jsonl", str(target), "--csv", str(table)])
    assert code == ExitCode.ERROR
    assert not target.exists() and not table.exists()
    old = tmp_path / "old.jsonl"
    old.write_text('{"query": "near", "row": 0, "spec_hash": "x"}\n')
    assert main(["run", str(spec), "--resume", str(old)]) == ExitCode.ERROR
    assert old.read_text() == '{"query": "near", "row": 0, "spec_hash": "x"}\n'
    assert "V" in capsys.readouterr().err


@pytest.mark.parametrize("change", ["spec", "data", "timeout"])
def test_a_resume_file_of_another_run_is_refused(spec, tmp_path, capsys, change):
    target = tmp_path / "out.jsonl"
    main(["run", str(spec), "--jobs", "1", "--jsonl", str(target)])
    before = target.read_bytes()
    capsys.readouterr()
    extra = []
    if change == "spec":
        spec.write_text(SPEC + "# a comment changes the spec's text\n")
    elif change == "data":
        (tmp_path / "rows.csv").write_text(ROWS.replace("2.5,3", "2.5,3.5"))
    else:
        extra = ["--timeout", "5"]
    assert main(["run", str(spec), "--resume", str(target), *extra]) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert "another run" in captured.err and str(target) in captured.err
    assert captured.out == ""
    assert target.read_bytes() == before


def test_resume_answers_only_the_missing_rows(spec, tmp_path, capsys):
    target = tmp_path / "out.jsonl"
    main(["run", str(spec), "--jobs", "1", "--jsonl", str(target)])
    whole = target.read_text().splitlines(keepends=True)
    # Keep 5 lines and half of a sixth, as a killed run leaves its file.
    target.write_text("".join(whole[:5]) + whole[5][:40])
    capsys.readouterr()
    assert main(["run", str(spec), "--resume", str(target), "--jobs", "1"]) == ExitCode.FAILED
    assert "8 queries run" in capsys.readouterr().out
    resumed = lines(target)
    assert len(resumed) == 13 and {(e["query"], e["row"]) for e in resumed} == KEYS
    assert answers(resumed) == answers(json.loads(line) for line in whole)


def test_a_line_that_is_not_a_result_is_an_error(spec, tmp_path, capsys):
    target = tmp_path / "out.jsonl"
    target.write_text('{"query": "near", "row": 0, "spec_hash": "x"}\nnot json\n{}\n')
    assert main(["run", str(spec), "--resume", str(target)]) == ExitCode.ERROR
    assert f"{target}:2: not a line of" in capsys.readouterr().err


def test_a_results_file_another_run_writes_is_refused_at_once(spec, tmp_path, capsys):
    # Two runs resuming one file at once answered the rows it lacked twice. The file is locked
    # while written: here this test holds the lock, as a run writing it would.
    target = tmp_path / "out.jsonl"
    main(["run", str(spec), "--jobs", "1", "--jsonl", str(target)])
    whole = target.read_text().splitlines(keepends=True)
    target.write_text("".join(whole[:4]))
    capsys.readouterr()
    with open(target, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        for option in ("--resume", "--jsonl"):
            assert main(["run", str(spec), option, str(target)]) == ExitCode.ERROR
            captured = capsys.readouterr()
            assert f"error: {target} is being written by another run" in captured.err
            assert captured.out == "" and "Traceback" not in captured.err
            assert target.read_text() == "".join(whole[:4])
    assert main(["run", str(spec), "--resume", str(target)]) == ExitCode.FAILED  # released
    assert len(lines(target)) == 13


def test_a_run_holds_its_results_file_until_it_closes(tmp_path):
    target = tmp_path / "new.jsonl"
    first = jsonl.Streams(str(target), False, None, "hash")
    with pytest.raises(OutputError, match="being written by another run"):
        jsonl.Streams(str(target), True, None, "hash")
    first.close(created=False)  # stopped before any line: the file it made for the lock goes
    assert not target.exists()
    target.write_text("")
    second = jsonl.Streams(str(target), True, None, "hash")
    second.close(created=False)
    assert target.exists()  # a file it found stays


def test_a_file_pasted_twice_counts_each_row_once(spec, tmp_path, capsys):
    target = tmp_path / "out.jsonl"
    main(["run", str(spec), "--jobs", "1", "--jsonl", str(target)])
    again = [{**e, "time_s": e["time_s"] + 1, "stats": {}} for e in lines(target)]  # times differ
    target.write_text(target.read_text() + "".join(json.dumps(e) + "\n" for e in again))
    capsys.readouterr()
    assert main(["run", str(spec), "--resume", str(target)]) == ExitCode.FAILED
    captured = capsys.readouterr()
    assert "0 queries run" in captured.out
    assert f"{target}: 13 results, 6 checks: 4 hold, 2 failed" in captured.out
    assert f"note: {target}: 13 lines answered a row again" in captured.err
    assert len(lines(target)) == 26


def test_a_row_answered_twice_differently_is_refused(spec, tmp_path, capsys):
    target = tmp_path / "out.jsonl"
    main(["run", str(spec), "--jobs", "1", "--jsonl", str(target)])
    entries = lines(target)
    other = {**entries[2], "upper": 99.0}
    target.write_text(target.read_text() + json.dumps(other) + "\n")
    before = target.read_bytes()
    capsys.readouterr()
    assert main(["run", str(spec), "--resume", str(target)]) == ExitCode.ERROR
    name = f"{other['query']}[{other['row']}]" if other["row"] is not None else other["query"]
    err = capsys.readouterr().err
    assert f"{target}:14: `{name}` answered again, differently from line 3" in err
    assert target.read_bytes() == before


CREDIT = """model clf = xgboost "{root}/models/credit.json"
data  test = csv "{root}/data/credit_test.csv"
features {{
    age     : int  in [18, 90]
    income  : real in [0, 500000]
    debt    : real in [0, 500000]
    sex     : bool
    housing : onehot(housing_own, housing_rent, housing_free)
}}
query closest for r in test[0:{rows}] {{
    input x
    where class(clf, x) != class(clf, r)
    minimize linf(x, r)
}}
"""


def test_a_killed_run_resumed_answers_every_row_once_as_an_unstopped_run(tmp_path):
    root = Path(__file__).resolve().parents[2] / "examples"
    rows = 80
    spec = tmp_path / "credit.ver"
    spec.write_text(CREDIT.format(root=root, rows=rows))
    target = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "veritas_dsl.cli", "run", str(spec), "--jobs", "1"]
    env = dict(os.environ, NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", "/tmp/nb"))
    process = subprocess.Popen(
        [*command, "--jsonl", str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if target.exists() and target.read_bytes().count(b"\n") >= 10:
            break
        time.sleep(0.005)
    with open(target, "rb") as other, pytest.raises(BlockingIOError):  # the run holds it locked
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done_before = target.read_bytes().count(b"\n")
    assert 10 <= done_before < rows, "the run was not stopped mid-batch"
    resumed = subprocess.run(
        [*command, "--resume", str(target)], capture_output=True, text=True, env=env, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{rows - done_before} queries run" in resumed.stdout
    entries = lines(target)
    assert sorted(e["row"] for e in entries) == list(range(rows))  # each row exactly once
    whole = tmp_path / "whole.jsonl"
    subprocess.run(
        [*command, "--jsonl", str(whole)], capture_output=True, env=env, timeout=300, check=True
    )
    assert answers(entries) == answers(lines(whole))


def test_progress_bar_counts_rows_and_checks(spec, capsys):
    from veritas_dsl import parse
    from veritas_dsl.report.progress import Bar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    runs = parse(SPEC, str(spec)).run(jobs=1)
    progress = Bar(enabled=True, stream=Terminal())
    for number, run in enumerate(runs, 1):
        progress.done(run, number, len(runs))
    progress.close()
    err = progress.stream.getvalue()
    last = [piece for piece in err.split("\r") if piece.strip()][-1]
    assert last.startswith("13/13 ") and "row/s" in last and "ETA 00:00" in last
    assert "4 hold, 2 fail, 0 undecided" in last
    # Not a terminal (as here) or --json: nothing on stderr but warnings.
    assert main(["run", str(spec), "--jobs", "1"]) == ExitCode.FAILED
    assert "\r" not in capsys.readouterr().err
