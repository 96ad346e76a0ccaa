"""`ver leakage`: a saved DaRE forest and the rows to delete, as a table or JSON; bad input exits 2."""

from __future__ import annotations

import json

import pytest
from odd_engines import register
from sklearn.datasets import make_classification

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.result import Termination
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.unlearning import DareForest, LeakageError, leakage


@pytest.fixture(scope="module")
def forest(tmp_path_factory):
    X, y = make_classification(60, 3, n_informative=2, n_redundant=0, random_state=0)
    path = tmp_path_factory.mktemp("leakage") / "forest.dare"
    DareForest(n_trees=3, max_depth=2, k=None, max_features=None).fit(X, y).save(path)
    return path


def test_json_parses_and_names_the_deleted_row(forest, capsys):
    assert main(["leakage", str(forest), "--delete", "5", "--json"]) == ExitCode.OK
    document = json.loads(capsys.readouterr().out)
    assert document["deleted"] == [5]
    assert document["minimum"]["upper"] <= 0 <= document["maximum"]["lower"]
    assert document["anonymity_size"] == len(document["anonymity"])
    assert 5 in document["anonymity"] and document["anonymity_exact"]
    assert len(document["minimum"]["box"]) == len(document["maximum"]["box"]) == 3


def test_table(forest, capsys):
    assert main(["leakage", str(forest), "--delete", "5,7", "--solver", "milp"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out.startswith("deleted    5, 7\nanonymity  at least ") and "engine milp" in out
    assert "  minimum  " in out and "  maximum  " in out


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--delete", "999"], "row 999 does not exist"),
        (["--delete", "1,1"], "row 1 is listed twice"),
    ],
)
def test_bad_rows_are_a_clear_error(forest, capsys, arguments, message):
    assert main(["leakage", str(forest), *arguments]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_not_a_list_of_ids_is_a_usage_error(forest, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["leakage", str(forest), "--delete", "three"])
    assert exit.value.code == ExitCode.ERROR
    assert "not a list of row ids" in capsys.readouterr().err


def test_a_missing_or_foreign_file_is_an_error(tmp_path, capsys):
    assert main(["leakage", str(tmp_path / "none.dare"), "--delete", "1"]) == ExitCode.ERROR
    (tmp_path / "bad.dare").write_text("not a forest")
    assert main(["leakage", str(tmp_path / "bad.dare"), "--delete", "1"]) == ExitCode.ERROR
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("cancel", [True, False])
def test_an_engine_fault_is_a_leakage_error_not_a_traceback(monkeypatch, cancel):
    # leakage takes the run's path to an engine (run.solve), which turns an
    # engine's exception into an `error` Result; with or without the shared reductions.
    def broken(self, query, limits, progress=None):
        raise RuntimeError("a fault inside the engine")

    X, y = make_classification(60, 3, n_informative=2, n_redundant=0, random_state=0)
    before = DareForest(n_trees=3, max_depth=2, k=None, max_features=None).fit(X, y)
    after = before.copy().delete([3])
    monkeypatch.setattr(MilpEngine, "solve_reduced", broken)
    with pytest.raises(LeakageError, match=r"stopped \(error\).*a fault inside the engine"):
        leakage(before, after, engine="milp", cancel=cancel)


def test_ctrl_c_out_of_an_engine_is_an_interrupted_report_not_a_traceback(
    forest, monkeypatch, capsys
):
    # leakage takes the run's path (run.solve): a Ctrl-C the engine lets through ends the
    # minimum with its trivial bounds, the maximum does not start, and the report is printed
    register(monkeypatch)
    X, y = make_classification(60, 3, n_informative=2, n_redundant=0, random_state=0)
    before = DareForest(n_trees=3, max_depth=2, k=None, max_features=None).fit(X, y)
    found = leakage(before, before.copy().delete([3]), engine="escaping")
    interrupted = Termination.INTERRUPTED.value
    assert (found.minimum.termination, found.maximum.termination) == (interrupted, interrupted)
    assert found.minimum.lower <= found.minimum.upper and found.minimum.point is None
    code = main(["leakage", str(forest), "--delete", "3", "--solver", "escaping"])
    out, err = capsys.readouterr()
    assert code == ExitCode.INTERRUPTED and "Traceback" not in err
    assert "interrupted: the report shows the bounds found so far" in err and out


def test_a_witness_that_does_not_reproduce_names_the_engine(monkeypatch):
    # leakage validates its witnesses as a run does (run.validated), naming the engine
    from veritas_dsl import validate

    def wrong(query, witnesses):
        raise validate.WitnessMismatch(f"query {query.name}: does not reproduce")

    monkeypatch.setattr("veritas_dsl.run.validate_witnesses", wrong)
    X, y = make_classification(60, 3, n_informative=2, n_redundant=0, random_state=0)
    before = DareForest(n_trees=3, max_depth=2, k=None, max_features=None).fit(X, y)
    with pytest.raises(validate.WitnessMismatch, match="engine milp: query footprint"):
        leakage(before, before.copy().delete([3]), engine="milp")
