"""Ctrl-C: the run stops after the query it interrupts, the report shows every query finished so
far and the interrupted one with its bounds, and the exit code is 130 (128 + SIGINT)."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from odd_engines import register

from veritas_dsl import parse
from veritas_dsl.cli import ExitCode, main
from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.outcome import Interrupted
from veritas_dsl.result import Termination

from conftest import build, group_ends, sigint_as_in_a_terminal

HEADER = 'model m = ensemble "m.json"\n'


def three(middle_engines: str) -> str:
    return (
        HEADER
        + f"""
query first {{
    input x
    maximize m(x)
    expect upper <= 7
}}
query middle {{
    input x
    minimize m(x)
    expect lower >= -3
    solve with {middle_engines}
}}
query last {{
    input x
    where m(x) > 100
}}
"""
    )


@pytest.fixture
def folder(tmp_path, two_trees, monkeypatch):
    register(monkeypatch)
    two_trees.save(tmp_path / "m.json")
    return tmp_path


@pytest.mark.parametrize("engines", ["stopped", "escaping", "stopped, oracle"])
def test_the_run_layer_stops_after_an_interrupted_run(folder, engines):
    spec = parse(three(engines), str(folder / "spec.ver"))
    with pytest.raises(Interrupted) as stop:
        spec.run()
    first, middle = stop.value.partial  # `last` never ran
    assert first.result.termination is Termination.OPTIMAL
    assert [r.engine for r in middle.results] == [engines.split(",")[0]]  # oracle never ran
    assert middle.result.termination is Termination.INTERRUPTED
    if engines == "escaping":  # nothing known but the trivial bounds
        bounds = trivial_bounds(middle.lowered.query)
        assert (middle.result.lower, middle.result.upper) == bounds
    else:  # the engine's bounds and witness so far
        assert middle.result.lower == middle.result.upper == -3
        assert middle.result.witnesses
    # The bounds so far decide what they can; the trivial ones decide nothing.
    assert middle.checks[0].holds is (None if engines == "escaping" else True)


def test_run_prints_what_finished_and_exits_130(folder, capsys):
    path = folder / "spec.ver"
    path.write_text(three("stopped"))
    assert main(["run", str(path)]) == ExitCode.INTERRUPTED == 130
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0].startswith("first ")
    assert "middle  stopped  interrupted, value -3" in captured.out
    assert "witness x:" in captured.out.split("middle")[1]
    assert "last" not in captured.out
    assert "interrupted: the report shows the 2 queries run so far" in captured.err
    assert main(["run", "--json", str(path)]) == ExitCode.INTERRUPTED
    document = json.loads(capsys.readouterr().out)
    assert document["interrupted"] is True
    assert [r["query"] for r in document["results"]] == ["first", "middle"]
    assert document["results"][1]["status"] == "interrupted"


def test_check_stops_at_the_interrupted_file(folder, capsys):
    (folder / "a.ver").write_text(three("escaping"))
    (folder / "b.ver").write_text(three("oracle"))
    assert main(["check", str(folder)]) == ExitCode.INTERRUPTED
    captured = capsys.readouterr()
    assert "first: expect upper <= 7: holds" in captured.out
    assert "middle: expect lower >= -3: undecided" in captured.out
    assert "b.ver" not in captured.out
    assert "interrupted: 1 of 2 files checked" in captured.err


def test_compare_stops_at_the_interrupted_engine(folder, capsys):
    path = folder / "spec.ver"
    path.write_text(three("oracle"))
    assert main(["compare", str(path), "--solvers", "oracle,stopped,milp"]) == 130
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert [row[:2] for row in rows[1:]] == [["first", "oracle"], ["stopped", "interrupted"]]


# End to end: a real search, a real SIGINT to the process group (as a terminal's Ctrl-C).


def hard_model(path: Path) -> None:
    """200 random trees of depth 6 over 6 features: a two-instance query on them runs into any
    time limit a test can afford."""
    rng = np.random.default_rng(0)

    def tree(depth):
        if depth == 0:
            return float(np.round(rng.normal(), 3))
        f, t = int(rng.integers(6)), float(np.round(rng.random(), 3))
        return (f, t, tree(depth - 1), tree(depth - 1))

    build([tree(6) for _ in range(200)], 6).save(path)


HARD = """model m = ensemble "big.json"
data rows = csv "rows.csv"
query quick {
    input x
    where m(x) > 1000
}
query gap for r in rows[0:ROWS] {
    input x1, x2
    where linf(x1, r) <= 0.3 and linf(x1, x2) <= 0.3
    maximize m(x2) - m(x1)
}
"""


def hard_batch(folder: Path, rows: int) -> None:
    """``hard.ver`` in ``folder``: a quick query, then ``rows`` rows of a two-instance query on
    :func:`hard_model`."""
    hard_model(folder / "big.json")
    values = np.random.default_rng(1).random((rows, 6)).round(3)
    lines = ["x0,x1,x2,x3,x4,x5", *(",".join(map(str, r)) for r in values)]
    (folder / "rows.csv").write_text("\n".join(lines) + "\n")
    (folder / "hard.ver").write_text(HARD.replace("ROWS", str(rows)))


def interrupt(folder: Path, rows: int, args: list[str], wait_for: str):
    """Run ``ver run`` with stderr on a terminal (so that it shows progress), send SIGINT to its
    process group once the progress matches the regular expression ``wait_for``, and return the
    exit code, stdout, stderr and, for a failure message, the process's signal state if it
    outlived the signal by 10 s. Waiting on what the progress shows, not on a clock, keeps the
    test's meaning on a loaded or a cold machine; that the run stopped on the signal, not at the
    end of its work, shows in its results (``interrupted``), not in a time."""
    hard_batch(folder, rows)
    terminal, stderr = pty.openpty()
    with sigint_as_in_a_terminal():
        process = subprocess.Popen(
            [sys.executable, "-m", "veritas_dsl.cli", "run", *args, str(folder / "hard.ver")],
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,  # its own process group, workers included, as a shell job
            text=True,
        )
    os.close(stderr)
    # The terminal is read all the time, by a thread: the run writes its live line there, and a
    # terminal nobody reads fills up and blocks the run's next write (a hang, not an exit).
    seen = bytearray()

    def drain():
        while True:
            try:
                chunk = os.read(terminal, 65536)
            except OSError:  # the process ended
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    deadline = time.monotonic() + 600  # a cold Numba cache compiles for a long while
    pattern = re.compile(wait_for.encode())
    while not pattern.search(seen) and time.monotonic() < deadline and reader.is_alive():
        time.sleep(0.1)
    assert pattern.search(seen), bytes(seen[-500:])
    os.killpg(process.pid, signal.SIGINT)
    late = still_running(process, 10.0)
    out = process.stdout.read()
    code = process.wait(timeout=600)  # a hang fails; the time is not the verdict
    reader.join(timeout=10)
    os.close(terminal)
    assert group_ends(process.pid), "a process of the run outlived it"
    return code, out, bytes(seen).decode(errors="replace"), late


def still_running(process: subprocess.Popen, within_s: float) -> str:
    """Empty once ``process`` has ended within ``within_s`` seconds, else its signal state from
    /proc (SigIgn, SigBlk, SigPnd: ignored, blocked, pending), for a failure message."""
    try:
        process.wait(timeout=within_s)
        return ""
    except subprocess.TimeoutExpired:
        try:
            status = Path(f"/proc/{process.pid}/status").read_text().splitlines()
        except OSError as error:
            return str(error)
        return "; ".join(line for line in status if line.startswith(("State", "Sig", "ShdPnd")))


def test_sigint_during_a_search(tmp_path):
    # Ctrl-C once the search has a witness: its live line shows a finite lower bound.
    code, out, err, late = interrupt(tmp_path, 1, [], r"gap\[0\] \(astar\): \[-?\d")
    assert code == 130, (late, out, err[-1000:])
    lines = out.splitlines()
    assert lines[0].startswith("quick ") and "no input satisfies it" in lines[0], out
    assert lines[1].startswith("gap[0]  astar   interrupted, in ["), out
    assert "witness x1:" in out, out
    assert "Traceback" not in err and "interrupted: the report shows the 2 queries" in err, err


def test_sigint_reaches_the_workers_of_a_batch(tmp_path):
    # Rows take the whole limit, so the run moves to a process pool after the first; the worker
    # takes rows from the front (gap[1] first), this process from the back. Once the worker has
    # finished one row it is in the middle of the next when Ctrl-C comes.
    results = tmp_path / "results.jsonl"
    args = ["--jobs", "2", "--timeout", "3", "--jsonl", str(results)]
    code, out, err, late = interrupt(tmp_path, 12, args, r", gap\[1\]: time_limit")
    assert code == 130, (late, out, err[-1000:])
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = [line for line in out.splitlines() if line.startswith("gap[")]
    assert lines[0].startswith("gap[0]   astar   time_limit"), out
    assert lines[1].startswith("gap[1]   astar   time_limit"), out
    assert any(line.startswith("gap[11] ") for line in lines), out  # this process's first
    assert sum("interrupted" in line for line in lines) >= 1, out
    assert len(lines) < 12
    # The results file holds every row the report shows finished, each once, and no stopped one:
    # a resume answers those again.
    finished = sorted(line.split()[0] for line in lines if "interrupted" not in line)
    written = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(f"{e['query']}[{e['row']}]" for e in written if e["query"] == "gap") == finished


def children(pid: int) -> list[str]:
    """The command lines of ``pid``'s child processes."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                found.append(Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace"))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers die with ver on Linux")
def test_a_killed_batch_leaves_no_process_behind(tmp_path):
    # SIGKILL gives `ver` no chance to stop its workers: they must end by themselves, and with
    # them multiprocessing's resource tracker (they hold its pipe open). Before, a worker went
    # on with its row, then blocked for good writing the answer nobody read.
    hard_batch(tmp_path, 12)
    results = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "veritas_dsl.cli", "run", str(tmp_path / "hard.ver")]
    process = subprocess.Popen(
        [*command, "--jobs", "2", "--timeout", "3", "--jsonl", str(results)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        # The worker takes rows from the front: once it answered gap[1], it solves another row.
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and process.poll() is None:
            if results.exists() and '"row": 1,' in results.read_text():
                break
            time.sleep(0.1)
        assert any("spawn_main" in c for c in children(process.pid)), children(process.pid)
        process.kill()
        process.wait()
        assert group_ends(process.pid), "a worker outlived a killed ver"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
