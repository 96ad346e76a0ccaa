"""`ver run`: output, JSON document, and exit codes (0 all hold, 1 a check fails, 2 errors)."""

from __future__ import annotations

import io
import json
import re

import pytest

from veritas_dsl.cli import ExitCode, main


@pytest.fixture
def folder(tmp_path, two_trees):
    two_trees.save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1,label\n0,0,1\n1.5,0.5,0\n")
    return tmp_path


def write(folder, body: str):
    path = folder / "spec.ver"
    path.write_text('model m = ensemble "m.json"\ndata rows = csv "rows.csv"\n' + body)
    return str(path)


def test_run_prints_answers_and_exits_0(folder, capsys):
    path = write(folder, "query top {\n  input x\n  maximize m(x)\n  expect upper <= 7\n}\n")
    assert main(["run", path]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "top" in out and "value 7" in out
    assert "ok      expect upper <= 7" in out
    assert "1 hold, 0 failed" in out.splitlines()[-1]


def test_failed_expectation_exits_1_with_a_located_line(folder, capsys):
    path = write(folder, "query top {\n  input x\n  maximize m(x)\n  expect upper <= 6.5\n}\n")
    assert main(["run", path]) == ExitCode.FAILED
    err = capsys.readouterr().err
    assert f"{path}:6:3: top: expect upper <= 6.5 failed (upper = 7)" in err


def test_property_counterexample_exits_1(folder, capsys):
    path = write(folder, "property p {\n  forall x: linf(x, rows[0]) <= 1 => m(x) <= 1.5\n}\n")
    assert main(["run", path]) == ExitCode.FAILED
    captured = capsys.readouterr()
    assert "counterexample x: x0=1" in captured.out
    assert "p: property p failed" in captured.err


def test_json_document(folder, capsys):
    body = (
        "query top for r in rows[0:2] {\n  input x\n  where linf(x, r) <= 0.5\n  maximize m(x)\n}\n"
    )
    assert main(["run", "--json", write(folder, body)]) == ExitCode.OK
    document = json.loads(capsys.readouterr().out)
    first, second = document["results"]
    assert (first["query"], first["row"], second["row"]) == ("top", 0, 1)
    assert first["kind"] == "maximize" and first["solver"] == "astar"  # the default engine
    assert first["status"] == "optimal"
    assert first["lower"] == first["upper"] == 1.5
    assert set(first["witness"]["x"]) == {"x0", "x1"}
    assert first["time_s"] >= 0 and isinstance(first["stats"], dict)
    assert first["trace"][-1][1:] == [1.5, 1.5]  # the anytime bounds, closing on the optimum
    assert all(float(lower) <= 1.5 <= float(upper) for _, lower, upper in first["trace"])


def test_infinite_bounds_stay_valid_json(folder, capsys):
    body = "query q {\n  input x\n  where x.x0 <= 0 and m(x) > 5\n  maximize m(x)\n}\n"
    assert main(["run", "--json", write(folder, body)]) == ExitCode.OK
    entry = json.loads(capsys.readouterr().out)["results"][0]
    assert (entry["status"], entry["lower"], entry["upper"]) == ("infeasible", "-inf", "-inf")


def test_spec_errors_exit_2_with_diagnostics(folder, capsys):
    path = write(folder, "query q {\n  input x\n  where x.x3 > 0\n}\n")
    assert main(["run", path]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "error[V204]: unknown feature `x3`" in err
    assert f"--> {path}:5:11" in err
    assert "Traceback" not in err


def test_solver_flag_and_unknown_solver(folder, capsys):
    path = write(folder, "query top {\n  input x\n  maximize m(x)\n}\n")
    assert main(["run", "--solver", "oracle", path]) == ExitCode.OK
    capsys.readouterr()
    # A command-line mistake, reported as one (usage, the engines), not at the file's first query.
    with pytest.raises(SystemExit) as stopped:
        main(["run", "--solver", "nope", path])
    assert stopped.value.code == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "usage: ver run" in err
    assert "ver run: error: argument --solver: unknown engine 'nope'" in err
    assert "(choose from astar, gurobi, milp, oracle, sat)" in err
    assert path not in err and "-->" not in err


def test_missing_spec_file(tmp_path, capsys):
    assert main(["run", str(tmp_path / "absent.ver")]) == ExitCode.ERROR
    assert "cannot read" in capsys.readouterr().err


class Terminal(io.StringIO):
    """Stands for stderr on a terminal (of unknown size: 80 columns)."""

    def isatty(self) -> bool:
        return True


def test_progress_line_only_on_a_terminal():
    from types import SimpleNamespace

    from veritas_dsl.report.progress import Bar

    state = SimpleNamespace(time_s=1.5, lower=1.0, upper=3.0, states_per_s=1200.0)
    quiet = Bar(enabled=False, stream=Terminal())  # --json
    quiet.engine("q", "astar", state)
    quiet.close()
    assert quiet.stream.getvalue() == ""
    piped = Bar(enabled=True, stream=io.StringIO())  # not a terminal
    piped.engine("q", "astar", state)
    piped.close()
    assert piped.stream.getvalue() == ""
    live = Bar(enabled=True, stream=Terminal())
    live.engine("q", "astar", state)
    live.close()
    err = live.stream.getvalue()
    assert "q (astar): [1, 3] gap 2  1,200 states/s  1.5 s" in err
    assert err.endswith("\r") and "\n" not in err


def test_json_stays_quiet_on_stderr(folder, capsys):
    path = write(folder, "query top {\n  input x\n  maximize m(x)\n}\n")
    assert main(["run", "--json", path]) == ExitCode.OK
    assert capsys.readouterr().err == ""


def test_default_engine_falls_back_and_says_so(folder, capsys):
    # A* refuses linear equalities; with no engine named, the next default answers.
    path = write(folder, "query q {\n  input x\n  where x.x0 + x.x1 == 2.5\n  maximize m(x)\n}\n")
    assert main(["run", path]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "astar refused it" in out and "linear equalities" in out
    assert "value 7" in out  # x0 = 2.5, x1 = 0
    # Named on the command line, A* reports the query unsupported (exit 2) and says who can.
    assert main(["run", "--solver", "astar", path]) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert "q  astar   unsupported  (0.00 s)" in captured.out
    why = "engine astar does not support linear equalities; engines that can: oracle, milp"
    assert f"{path}:3:1: q: unsupported: {why}" in captured.err


def test_a_note_every_row_of_a_batch_repeats_is_shown_once(folder, capsys):
    body = (
        "query q for r in rows[0:2] {\n  input x\n  where x.x0 + x.x1 == 2.5\n  maximize m(x)\n}\n"
    )
    assert main(["run", write(folder, body)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out.count("note: astar refused it") == 1
    assert "q[0]" in out and "q[1]" in out


def test_a_batch_property_is_summed_up_in_the_words_of_every_other_summary(folder, capsys):
    body = "property p for r in rows[0:2] {\n  forall x: linf(x, r) <= 1 => m(x) <= 1.5\n}\n"
    assert main(["run", write(folder, body)]) == ExitCode.FAILED
    out = capsys.readouterr().out
    batch = next(line for line in out.splitlines() if line.startswith("p: 2 rows"))
    assert re.fullmatch(r"p: 2 rows: \d hold, \d failed, 0 undecided", batch), batch


def test_a_note_about_the_machine_is_shown_once_a_file(folder, capsys, monkeypatch):
    from veritas_dsl.solvers.base import Availability
    from veritas_dsl.solvers.milp import engine

    monkeypatch.setattr(engine.gurobi, "licence", lambda: Availability.BAD_LICENCE)
    query = "query {} {{\n  input x\n  maximize m(x)\n}}\n"
    spec = write(folder, query.format("a") + query.format("b"))
    assert main(["run", "--solver", "milp", spec]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out.count("note: solved with HiGHS: gurobipy is installed but has no usable") == 1
    assert re.search(r"^b +milp +optimal", out, re.M)


def test_each_engine_shows_its_time(folder, capsys):
    path = write(folder, "query top {\n  input x\n  maximize m(x)\n  solve with astar, oracle\n}\n")
    assert main(["run", path]) == ExitCode.OK
    line = capsys.readouterr().out.splitlines()[0]
    assert re.fullmatch(
        r"top  astar,oracle  optimal, value 7  \(astar \d+\.\d\d s, oracle \d+\.\d\d s\)", line
    ), line


def test_a_query_named_q_is_printed_q(folder, tmp_path, capsys):
    # Reported as printed `Q`: the bytes say `q` everywhere (a terminal tool showed the first
    # letter of its output capitalised); this pins every report.
    path = write(folder, "query q {\n  input x\n  maximize m(x)\n  expect upper <= 6\n}\n")
    junit = tmp_path / "junit.xml"
    main(["run", path])
    main(["check", "--junit", str(junit), path])
    main(["compare", path, "--solvers", "oracle"])
    out = capsys.readouterr().out
    texts = [out, junit.read_text()]
    assert out.startswith("q  ")
    assert "q: expect upper <= 6: failed" in out and "\nq      oracle" in out
    assert 'name="q: expect upper &lt;= 6"' in texts[1]
    assert not any(re.search(r"\bQ\b", text) for text in texts)
