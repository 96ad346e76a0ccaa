"""Batches on a Dask cluster (``--scheduler``): the answers of one process, a row that fails
reported once (by raising, or by killing every worker that runs it), no row lost when a worker
is killed, one cluster for every file of ``ver check``, and an unreachable scheduler named."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import operator
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="--scheduler needs dask[distributed]")

import dask  # noqa: E402

from veritas_dsl import cluster, load, parse  # noqa: E402
from veritas_dsl.cli import ExitCode, main  # noqa: E402
from veritas_dsl.parallel import run_all  # noqa: E402
from veritas_dsl.result import Termination  # noqa: E402
from veritas_dsl.run import RunOptions  # noqa: E402

from conftest import group_ends, sigint_as_in_a_terminal  # noqa: E402

SPEC = """model m = ensemble "m.json"
data rows = csv "rows.csv"
property calm for r in rows[0:ROWS] {
    forall x: linf(x, r) <= 0.3 => m(x) <= 2
}
query closest for r in rows[0:ROWS] {
    input x
    where m(x) >= 2
    minimize l1(x, r)
}
"""
ROWS = 12
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def address():
    """A cluster of 2 worker processes, one thread each, for the module's tests."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as local:
        yield local.scheduler_address


@pytest.fixture
def spec(tmp_path, two_trees):
    two_trees.save(tmp_path / "m.json")
    rows = [f"{(i % 7) * 0.4 - 1:g},{(i % 5) * 0.5 - 0.5:g}" for i in range(ROWS)]
    (tmp_path / "rows.csv").write_text("x0,x1\n" + "\n".join(rows) + "\n")
    path = tmp_path / "spec.ver"
    path.write_text(SPEC.replace("ROWS", str(ROWS)))
    return path


def answers(runs):
    return [
        (r.name, r.result.termination, r.result.lower, r.result.upper, [c for c in r.checks])
        for r in runs
    ]


def test_a_cluster_gives_the_answers_of_one_process(spec, address, capsys):
    loaded = parse(spec.read_text(), str(spec))
    alone = loaded.run(jobs=1)
    finished = []
    together = loaded.run(scheduler=address, done=lambda r, n, t: finished.append(n))
    assert sorted(finished) == list(range(1, 2 * ROWS + 1))
    assert answers(together) == answers(alone)  # checks located in this process's spec too
    assert any("compile_s" in r.result.stats for r in together)
    # The command line, on the same cluster: the same document as --jobs 1 (but for times).
    assert main(["run", str(spec), "--json", "--jobs", "1"]) == ExitCode.FAILED
    local = json.loads(capsys.readouterr().out)["results"]
    assert main(["run", str(spec), "--json", "--scheduler", address]) == ExitCode.FAILED
    remote = json.loads(capsys.readouterr().out)["results"]
    fields = ("query", "row", "status", "lower", "upper", "witness", "checks")
    assert [[e[f] for f in fields] for e in remote] == [[e[f] for f in fields] for e in local]


def test_a_task_that_raises_is_its_rows_error_reported_once(spec, address):
    loaded = parse(spec.read_text(), str(spec))
    lowered = list(loaded.lowered())
    broken = list(lowered)
    broken[3] = dataclasses.replace(lowered[3], query=None)  # its task raises on any worker
    options = RunOptions()
    seen = []
    # Not retried forever: run_all returns (a task retried without end fails at the suite's
    # hang limit, pytest-timeout), whatever the machine's speed.
    with cluster.Connection(address) as connection:
        pool = lambda _: cluster.DaskPool(connection, options, broken)  # noqa: E731
        runs = run_all(lowered, options, 1, lambda r, n, t: seen.append(r.name), pool=pool)
    assert len(seen) == len(lowered)  # every row reported once
    errors = [r for r in runs if r.result.termination is Termination.ERROR]
    assert [r.name for r in errors] == ["calm[3]"]
    assert "the task failed: AttributeError" in errors[0].result.message
    assert [c.holds for c in errors[0].checks] == [None]
    assert all(r.result.termination is not Termination.ERROR for r in runs if r not in errors)


def witnesses(runs):
    return [
        {name: point.tolist() for name, point in w.inputs.items()}
        for r in runs
        for w in r.result.witnesses
    ]


def test_workers_need_no_model_files(tmp_path, address):
    # The shipped example, its model and data copied, loaded here, then deleted: the workers
    # (whose working directories never held them) answer from the queries they receive.
    shipped = ROOT / "examples"
    for name in ("closest.ver", "models/credit.json", "data/credit_test.csv"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shipped / name, tmp_path / name)
    loaded = load(tmp_path / "closest.ver")
    shutil.rmtree(tmp_path / "models")
    shutil.rmtree(tmp_path / "data")
    remote = loaded.run(scheduler=address)
    alone = load(shipped / "closest.ver").run(jobs=1)
    assert witnesses(remote) == witnesses(alone)
    assert [(n, t, lo, hi) for n, t, lo, hi, _ in answers(remote)] == [
        (n, t, lo, hi) for n, t, lo, hi, _ in answers(alone)
    ]
    assert [c.verdict for r in remote for c in r.checks] == [
        c.verdict for r in alone for c in r.checks
    ]
    assert all(r.result.exact for r in remote), answers(remote)  # 16 optima, 4 infeasible


@contextlib.contextmanager
def server(answer: bytes | None):
    """The address of a TCP server on this machine, not Dask: it accepts every connection, sends
    ``answer`` (None: nothing) and keeps the connection open."""
    listener = socket.create_server(("127.0.0.1", 0))
    held = []

    def serve():
        with contextlib.suppress(OSError):  # the listener closed
            while True:
                connection, _ = listener.accept()
                held.append(connection)
                if answer:
                    connection.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        for connection in held:
            connection.close()


@pytest.mark.timeout(120)  # the promise is an error within 2 s here: no hang
@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("closed port", "cannot reach the Dask scheduler at {} within 2 s"),
        ("unroutable", "cannot reach the Dask scheduler at {} within 2 s"),
        ("silent", "cannot reach the Dask scheduler at {} within 2 s: no answer"),
        ("not dask", "{} answers, but not as a Dask scheduler (MemoryError"),
        ("no port", "{} is not the address of a Dask scheduler: missing port number"),
    ],
)
def test_a_scheduler_fault_is_exit_2_naming_it(spec, monkeypatch, capsys, where, says):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 2.0)
    target = spec.parent / "out.jsonl"
    servers = {"silent": None, "not dask": b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4}
    with contextlib.ExitStack() as stack:
        if where in servers:
            address = stack.enter_context(server(servers[where]))
        else:
            fixed = {"closed port": "127.0.0.1:9", "unroutable": "192.0.2.1:8786"}  # TEST-NET-1
            address = f"tcp://{fixed.get(where, '127.0.0.1')}"
        code = main(["run", str(spec), "--scheduler", address, "--jsonl", str(target)])
    assert code == ExitCode.ERROR
    err = capsys.readouterr().err
    assert says.format(address) in err, err
    assert "Traceback" not in err and "internal error" not in err and not target.exists()


def test_a_worker_killed_mid_run_loses_no_row(spec, address):
    loaded = parse(spec.read_text(), str(spec))
    alone = loaded.run(jobs=1)
    with distributed.Client(address) as client:
        pids = client.run(os.getpid)
    killed = []

    def done(run, finished, total):
        if not killed:  # the first row back: the other rows are queued or running
            victim = max(pids.values())
            os.kill(victim, signal.SIGKILL)
            killed.append((victim, finished, total))

    together = loaded.run(scheduler=address, done=done)
    assert killed and killed[0][1] < killed[0][2]
    assert answers(together) == answers(alone)


def test_a_run_cut_short_and_resumed_on_the_cluster_answers_every_row_once(spec, address, capsys):
    results = spec.parent / "results.jsonl"
    args = ["run", str(spec), "--json", "--scheduler", address]
    assert main([*args, "--jsonl", str(results)]) == ExitCode.FAILED
    whole = [json.loads(line) for line in results.read_text().splitlines()]
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:7]) + lines[7][:20])  # killed while writing line 8
    capsys.readouterr()
    assert main([*args, "--resume", str(results)]) == ExitCode.FAILED
    answered = json.loads(capsys.readouterr().out)["results"]
    assert len(answered) == len(whole) - 7  # only the missing rows ran
    resumed = [json.loads(line) for line in results.read_text().splitlines()]
    key = operator.itemgetter("query", "row")
    assert sorted(map(key, resumed)) == sorted(map(key, whole))  # each row exactly once
    fields = ("status", "lower", "upper", "witness", "checks")
    by_row = {key(e): [e[f] for f in fields] for e in whole}
    assert all([e[f] for f in fields] == by_row[key(e)] for e in resumed)


class _Exit:
    """A query whose first use ends the worker's process, as a crash in native code would
    (pickling it is no use: pickle looks up special names)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        os._exit(1)


def test_a_row_that_kills_every_worker_is_its_rows_error_reported_once(spec):
    # Dask reruns a dead worker's task elsewhere, up to allowed-failures times; after that the
    # row is an error, once, and the run goes on. The row is the last one and a worker holds one
    # task at a time (worker-saturation 1), so that no other task dies with it twice (Dask would
    # count that one as suspicious too). Once both first workers died, no worker holds anything
    # of the run: a task rerun then must still find the queries (Dask computes them again).
    loaded = parse(spec.read_text(), str(spec))
    lowered = list(loaded.lowered())
    last = len(lowered) - 1
    killing = list(lowered)
    killing[last] = dataclasses.replace(lowered[last], query=_Exit())
    options = RunOptions()
    seen = []
    with (
        dask.config.set(
            {
                "distributed.scheduler.allowed-failures": 1,
                "distributed.scheduler.worker-saturation": 1.0,
            }
        ),
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as local,
        cluster.Connection(local.scheduler_address) as connection,
    ):
        pool = lambda _: cluster.DaskPool(connection, options, killing)  # noqa: E731
        runs = run_all(lowered, options, 1, lambda r, n, t: seen.append(r.name), pool=pool)
    assert sorted(seen) == sorted(r.name for r in runs) and len(seen) == len(lowered)
    errors = [r for r in runs if r.result.termination is Termination.ERROR]
    assert [r.name for r in errors] == [f"closest[{ROWS - 1}]"]
    assert "the task failed: KilledWorker" in errors[0].result.message
    alone = parse(spec.read_text(), str(spec)).run(jobs=1)
    assert answers(runs[:last]) == answers(alone[:last])


def test_check_runs_every_file_on_one_cluster(spec, address, monkeypatch, capsys):
    (spec.parent / "again.ver").write_text(spec.read_text())
    assert main(["check", str(spec.parent), "--json", "--jobs", "1"]) == ExitCode.FAILED
    alone = json.loads(capsys.readouterr().out)
    connections = []
    opened = cluster.Connection.__init__

    def counted(self, where):
        connections.append(where)
        opened(self, where)

    monkeypatch.setattr(cluster.Connection, "__init__", counted)
    assert main(["check", str(spec.parent), "--json", "--scheduler", address]) == ExitCode.FAILED
    together = json.loads(capsys.readouterr().out)
    assert connections == [address]
    assert len({entry["file"] for entry in together["checks"]}) == 2
    assert strip_times(together) == strip_times(alone)


def strip_times(document):
    """A ``ver check --json`` document without what differs between two runs of it."""
    if isinstance(document, dict):
        return {k: strip_times(v) for k, v in document.items() if k not in ("time_s", "stats")}
    if isinstance(document, list):
        return [strip_times(v) for v in document]
    return document


#: ``python -c HOOKED PHASE DELAY_S RECORD ARGS...``: ``ver ARGS`` that sends itself a Ctrl-C
#: (to its process group, as a terminal does) DELAY_S seconds after it first enters the function
#: PHASE, and writes to RECORD each function of ours and of Dask's client it enters (and its
#: local cluster's process id, as "host PID").
HOOKED = """
import os, signal, sys, threading
phase, delay_s, record = sys.argv[1], float(sys.argv[2]), sys.argv[3]
entered = set()

def interrupt():
    os.killpg(0, signal.SIGINT)

def hook(frame, event, arg):
    if event != "call":
        return
    name = (frame.f_globals.get("__name__") or "") + "." + frame.f_code.co_qualname
    if name in entered or not name.startswith(("veritas_dsl.", "distributed.client.")):
        return
    entered.add(name)
    with open(record, "a") as out:
        out.write(name + "\\n")
        if name == "veritas_dsl.cluster._LocalHost._announced":
            out.write("host %d\\n" % frame.f_locals["self"].process.pid)
    if name == phase:
        timer = threading.Timer(delay_s, interrupt)
        timer.daemon = True
        timer.start()

sys.setprofile(hook)
threading.setprofile(hook)
from veritas_dsl.cli import main
sys.exit(main(sys.argv[4:]))
"""

#: Where a Ctrl-C lands, in order: the local cluster's process starting, ver waiting for it (at
#: once, and twice later, within its start-up), Dask's client connecting, the rows submitted,
#: answers coming back, and ver closing the cluster after the last row.
PHASES = [
    ("veritas_dsl.cluster._LocalHost.__init__", 0.0),
    ("veritas_dsl.cluster._LocalHost._announced", 0.0),
    ("veritas_dsl.cluster._LocalHost._announced", 1.0),
    ("veritas_dsl.cluster._LocalHost._announced", 3.0),
    ("distributed.client.Client.__init__", 0.0),
    ("distributed.client.Client._ensure_connected", 0.0),
    ("veritas_dsl.cluster.DaskPool.submit", 0.0),
    ("veritas_dsl.cluster._pass_on", 0.0),
    ("veritas_dsl.parallel._joined", 0.0),
    ("veritas_dsl.cluster.Connection.close", 0.0),
]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("phase", "delay_s"), PHASES)
def test_a_ctrl_c_anywhere_in_a_local_cluster_run_ends_it_cleanly(spec, tmp_path, phase, delay_s):
    # A Ctrl-C 11 s into a run on local:2 once left ver waiting for good on a lock (Python drops
    # a KeyboardInterrupt raised in a gc callback, and Dask's scheduler, then in ver's process,
    # installs one; one raised inside concurrent.futures.wait() left a future's lock taken),
    # and each Ctrl-C printed the Dask workers' tracebacks (they were in ver's process group).
    record, results = tmp_path / "entered.txt", tmp_path / "out.jsonl"
    args = ["run", str(spec), "--scheduler", "local:2", "--jsonl", str(results)]
    with sigint_as_in_a_terminal():
        process = subprocess.Popen(
            [sys.executable, "-c", HOOKED, phase, str(delay_s), str(record), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    try:
        _, err = process.communicate(timeout=300)  # the cluster's processes hold err too
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    entered = record.read_text().splitlines()
    assert phase in entered, entered
    assert "Traceback" not in err and "internal error" not in err, err
    assert "8787" not in err, err
    rows = len(results.read_text().splitlines()) if results.exists() else 0
    if rows < 2 * ROWS:  # a row left: the Ctrl-C stopped the run (else it may come too late)
        assert process.returncode == ExitCode.INTERRUPTED, err
        assert "interrupted" in err.splitlines()[-1], err
    else:
        assert process.returncode in (ExitCode.FAILED, ExitCode.INTERRUPTED), err
    assert group_ends(process.pid), "a process of ver's group outlived it"
    hosts = [int(line.split()[1]) for line in entered if line.startswith("host ")]
    assert all(group_ends(host) for host in hosts), "the local cluster outlived ver"
    assert not results.exists() or results.read_text(), "an empty results file"
