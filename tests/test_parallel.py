"""Batches across processes give the same answers as one process."""

from __future__ import annotations

import functools
import os
import signal

import pytest

from veritas_dsl import parse
from veritas_dsl.outcome import Interrupted
from veritas_dsl.parallel import run_all
from veritas_dsl.run import RunOptions
from veritas_dsl.spec import lowered_queries

SPEC = """model m = ensemble "m.json"
data rows = csv "rows.csv"
property calm for r in rows[0:6] {
    forall x: linf(x, r) <= 0.5 => m(x) <= 2
}
query closest for r in rows[0:6] {
    input x
    where m(x) >= 7
    minimize l1(x, r)
}
"""


def test_two_processes_agree_with_one(tmp_path, two_trees):
    two_trees.save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1\n0,0\n0.75,0.5\n1.5,0.5\n2.5,3\n-1,1.5\n0.9,0.9\n")
    path = str(tmp_path / "spec.ver")
    spec = parse(SPEC, path)
    lowered = list(spec.lowered())
    source = functools.partial(lowered_queries, SPEC, path, False, False)
    alone = run_all(lowered, RunOptions(), 1, source)
    finished = []
    together = run_all(
        lowered, RunOptions(), 2, source, done=lambda r, n, t: finished.append(n), worth_it_s=0
    )
    assert sorted(finished) == list(range(1, 13))
    for a, b in zip(alone, together, strict=True):
        assert a.lowered is b.lowered
        assert (a.result.termination, a.result.lower, a.result.upper) == (
            b.result.termination,
            b.result.lower,
            b.result.upper,
        )
        assert [c.holds for c in a.checks] == [c.holds for c in b.checks]
        assert len(a.result.witnesses) == len(b.result.witnesses)
    assert [c.holds for r in alone[:6] for c in r.checks] == [True, False, False, True, True, False]
    # a worker is a fresh process: its first A* solve makes the kernels ready outside its limit
    # (this process made them ready for `alone`: a wait of more than a few milliseconds is a worker's)
    assert all("compile_s" in r.result.stats for r in together)
    assert any(r.result.stats["compile_s"] > 0.01 for r in together)


def test_a_ctrl_c_while_a_run_is_reported_lets_the_report_finish(tmp_path, two_trees):
    # ``ver run --jsonl`` writes each run in ``done``: a Ctrl-C landing there must not leave a
    # run that the report shows finished (``partial``) and the results file lacks.
    two_trees.save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1\n0,0\n0.75,0.5\n1.5,0.5\n2.5,3\n-1,1.5\n0.9,0.9\n")
    path = str(tmp_path / "spec.ver")
    lowered = list(parse(SPEC, path).lowered())
    written = []

    def done(run, finished, total):
        if finished == 3:
            os.kill(os.getpid(), signal.SIGINT)  # lands before the write below, undeferred
        written.append(run.name)

    source = functools.partial(lowered_queries, SPEC, path, False, False)
    with pytest.raises(Interrupted) as stop:
        run_all(lowered, RunOptions(), 1, source, done=done)
    assert [run.name for run in stop.value.partial] == written == ["calm[0]", "calm[1]", "calm[2]"]
