"""``--scheduler-file``: a batch runs on the Dask scheduler that wrote the file (as a scheduler
started by a batch system does: ``dask scheduler --scheduler-file``), and a file that never
appears, or is not a scheduler's, is a usage error (exit 2) naming it."""

from __future__ import annotations

import json
import logging

import pytest

distributed = pytest.importorskip("distributed", reason="--scheduler needs dask[distributed]")

from veritas_dsl import local_cluster  # noqa: E402
from veritas_dsl.cli import ExitCode, main  # noqa: E402

SPEC = """model m = ensemble "m.json"
data rows = csv "rows.csv"
query closest for r in rows[0:4] {
    input x
    where m(x) >= 2
    minimize l1(x, r)
}
"""


@pytest.fixture
def spec(tmp_path, two_trees):
    two_trees.save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1\n-1,-0.5\n-0.6,0\n0.2,0.5\n1,1\n")
    path = tmp_path / "spec.ver"
    path.write_text(SPEC)
    return path


def answers(document):
    fields = ("query", "row", "status", "lower", "upper")
    return [tuple(r[f] for f in fields) for r in document["results"]]


def test_a_run_on_the_scheduler_a_scheduler_file_names(spec, tmp_path, capsys):
    assert main(["run", str(spec), "--json", "--jobs", "1"]) == ExitCode.OK
    alone = json.loads(capsys.readouterr().out)
    file = tmp_path / "scheduler.json"
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"scheduler_file": str(file)},
        silence_logs=logging.ERROR,
    ) as cluster:
        assert json.loads(file.read_text())["address"] == cluster.scheduler_address
        code = main(["run", str(spec), "--json", "--scheduler-file", str(file)])
        assert code == ExitCode.OK
        together = json.loads(capsys.readouterr().out)
        assert "solve_on_worker" in cluster.scheduler.task_prefixes  # the rows ran there
    assert answers(together) == answers(alone)
    assert len(together["results"]) == 4


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "no file"),
        ("not json", "is not a Dask scheduler file"),
        ('{"type": "Scheduler"}', "no address in it"),
        ("[" * 100_000, "is not a Dask scheduler file"),  # json raised RecursionError
        ('{"address": "local:99999999"}', "not a Dask scheduler's address"),
        ('{"address": 8786}', "no address in it"),
        # printed as it was into the error: a line break and an escape sequence of its own
        ('{"address": "tcp://127.0.0.1:1\\n\\u001b[2J"}', "not a Dask scheduler's address"),
        ("a directory", "is not a Dask scheduler file"),
    ],
)
def test_a_missing_or_foreign_scheduler_file_is_a_usage_error(
    spec, tmp_path, monkeypatch, capsys, content, says
):
    file = tmp_path / "scheduler.json"
    if content == "a directory":
        file.mkdir()
    elif content is not None:
        file.write_text(content)
    waited = local_cluster.address_in.__defaults__
    monkeypatch.setattr(local_cluster.address_in, "__defaults__", (0.2,))
    with pytest.raises(SystemExit) as stop:
        main(["run", str(spec), "--scheduler-file", str(file)])
    assert waited == (10.0,)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --scheduler-file" in err and says in err and str(file) in err
    assert "Traceback" not in err and "\x1b" not in err


def test_scheduler_and_scheduler_file_exclude_each_other(spec, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", str(spec), "--scheduler", "local:1", "--scheduler-file", "s.json"])
    assert stop.value.code == 2
    assert "not allowed with" in capsys.readouterr().err
