"""No engine writes to the terminal by itself: `ver run --json` prints one JSON document.

Solver libraries write from C straight to file descriptors 1 and 2 (HiGHS's banner), so the runs
happen in a child process whose descriptors are captured around each `main` call, with gurobipy
installed and hidden (the path a plain `pip install .` takes).

What the runs conclude is not this test's business (tests/test_examples.py checks the examples'
verdicts): a check left undecided at the time limit, on a loaded machine, exits 1 and still
prints one JSON document, so the limit is short and no verdict depends on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from lang.specs import example_files

from conftest import build

SOLVERS = ("astar", "milp", "sat", "oracle")

#: Runs each argv through `veritas_dsl.cli.main` with fds 1 and 2 sent to files, and writes
#: `[{"argv", "code", "out", "err"}, ...]` to the report file.
_DRIVER = textwrap.dedent(
    """
    import ctypes, json, os, sys, tempfile
    from veritas_dsl.cli import main

    libc = ctypes.CDLL(None)
    cases, report = json.loads(sys.argv[1]), sys.argv[2]
    results = []
    for argv in cases:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            sys.stdout.flush(); sys.stderr.flush(); libc.fflush(None)
            saved = os.dup(1), os.dup(2)
            os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
            try:
                code = main(argv)
            finally:
                sys.stdout.flush(); sys.stderr.flush(); libc.fflush(None)
                os.dup2(saved[0], 1); os.dup2(saved[1], 2)
                os.close(saved[0]); os.close(saved[1])
            out.seek(0); err.seek(0)
            results.append({"argv": argv, "code": code,
                            "out": out.read().decode(errors="replace"),
                            "err": err.read().decode(errors="replace")})
    with open(report, "w") as f:
        json.dump(results, f)
    """
)


def _large_model(tmp_path) -> str:
    """Beyond the 2,000 variables of Gurobi's size-limited licence, so MILP continues on HiGHS;
    every tree splits on the same thresholds, so the program stays easy."""
    rng = np.random.default_rng(13)

    def tree(depth):
        if depth == 4:
            return float(rng.normal())
        return (depth, 0.0, tree(depth + 1), tree(depth + 1))

    path = tmp_path / "large.json"
    build([tree(0) for _ in range(130)], 4).save(path)
    return str(path)


@pytest.fixture(scope="module")
def specs(tmp_path_factory) -> list[str]:
    """Every shipped example, and specs that take each library's path the examples may not."""
    tmp_path = tmp_path_factory.mktemp("silent")
    small_model = build([(0, 1.0, 1.0, (1, 2.0, 3.0, -2.0)), (1, 1.0, (0, 2.0, 0.5, 4.0), -1.0)], 2)
    small_model.save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1\n0.5,0.5\n")
    small = tmp_path / "l1_ball.ver"  # an L1 ball: a linear program in every engine
    small.write_text(
        'model m = ensemble "m.json"\ndata rows = csv "rows.csv"\n'
        "query q { input x  where l1(x, rows[0]) <= 2  maximize m(x) }\n"
    )
    large = tmp_path / "highs_fallback.ver"
    large.write_text(
        f'model m = ensemble "{_large_model(tmp_path)}"\nquery q {{ input x  maximize m(x) }}\n'
    )
    return [str(p) for p in example_files()] + [str(small), str(large)]


@pytest.fixture(scope="module")
def reports(specs, tmp_path_factory) -> dict[str, list[dict]]:
    """Every spec with every solver, in one child process with gurobipy installed and one with
    it hidden (both at once: they are independent)."""
    cases = [
        ["run", "--json", "--jobs", "1", "--timeout", "5", "--solver", solver, spec]
        for spec in specs
        for solver in SOLVERS
    ]
    children = {}
    for mode in ("installed", "hidden"):
        folder = tmp_path_factory.mktemp(f"gurobipy_{mode}")
        env = dict(os.environ)
        if mode == "hidden":
            (folder / "gurobipy.py").write_text("raise ImportError('hidden by the test')\n")
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
        report = folder / "report.json"
        command = [sys.executable, "-c", _DRIVER, json.dumps(cases), str(report)]
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        children[mode] = (process, report)
    results = {}
    for mode, (process, report) in children.items():
        out, err = process.communicate(timeout=1200)
        assert process.returncode == 0, err
        # Anything a library buffered and wrote at exit, outside every capture.
        assert out == "" and err == "", (mode, out, err)
        results[mode] = json.loads(report.read_text())
    return results


@pytest.mark.parametrize("gurobipy", ["installed", "hidden"])
def test_json_output_is_one_document_and_engines_write_nothing(reports, gurobipy):
    problems = []
    for run in reports[gurobipy]:
        name = " ".join(run["argv"][-3:])
        # 1: a check failed or was left undecided at the limit; 2: a query refused or
        # unsupported, said by the CLI
        if run["code"] not in (0, 1, 2):
            problems.append(f"{name}: exit {run['code']}, stderr {run['err'][:200]!r}")
        if run["out"].strip():
            try:
                json.loads(run["out"])
            except ValueError:
                problems.append(f"{name}: stdout is not JSON: {run['out'][:200]!r}")
        elif run["code"] in (0, 1):
            problems.append(f"{name}: exit {run['code']} with nothing on stdout")
        if "soundness" in run["err"] or (
            run["err"] and not run["err"].startswith(("error", "warning"))
        ):
            problems.append(f"{name}: stderr is {run['err'][:200]!r}")
    assert not problems, "\n".join(problems)
