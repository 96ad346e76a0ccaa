"""Batches across processes give the same answers as one process."""

from __future__ import annotations

import dataclasses
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from veritas_dsl import load, parallel, parse
from veritas_dsl.outcome import Interrupted
from veritas_dsl.parallel import run_all
from veritas_dsl.run import RunOptions
from veritas_dsl.validate import WitnessMismatch

from conftest import sigint_as_in_a_terminal

ROOT = Path(__file__).resolve().parents[1]

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
    alone = run_all(lowered, RunOptions(), 1)
    finished = []
    together = run_all(
        lowered, RunOptions(), 2, done=lambda r, n, t: finished.append(n), worth_it_s=0
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

    # a Ctrl-C as a terminal delivers it: a suite started in the background ignores SIGINT
    with sigint_as_in_a_terminal(), pytest.raises(Interrupted) as stop:
        run_all(lowered, RunOptions(), 1, done=done)
    assert [run.name for run in stop.value.partial] == written == ["calm[0]", "calm[1]", "calm[2]"]


def test_a_workers_witness_is_validated_here_on_the_library_model():
    # Workers receive the models without their library models (those stay here): the answer
    # of a row solved in a worker must still be checked on this process's library model. Rows
    # from the third on get a library model that disagrees by 1000; only this process sees it.
    lowered = list(load(ROOT / "examples" / "closest.ver").lowered())[:6]
    model = lowered[0].query.models["clf"]
    library = dataclasses.replace(model.library, raw_margin=_off_by_1000(model.library))
    off = dataclasses.replace(model, library=library)
    broken = lowered[:2] + [
        dataclasses.replace(item, query=dataclasses.replace(item.query, models={"clf": off}))
        for item in lowered[2:]
    ]
    assert all(r.result.witnesses for r in run_all(lowered, RunOptions(), 1, pool=_in_a_worker))
    with pytest.raises(WitnessMismatch, match="predicts"):
        run_all(broken, RunOptions(), 1, pool=_in_a_worker)


def _off_by_1000(library):
    return lambda X: np.asarray(library.raw_margin(X)) + 1000.0


class _WorkerOnly(parallel._ProcessPool):
    shares_work = False  # every row in the worker: none here, where the library models are


def _in_a_worker(lowered):
    return _WorkerOnly(1, lowered, RunOptions())
