"""`ver leakage`'s sets are sound: the anonymity set (rows whose deletion is consistent with the
change, by trial deletion) always holds the deleted rows, in every configuration, and is exactly
the consistent rows for one deleted row; at a time limit the report keeps its bounds and sets."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.result import Result, Termination
from veritas_dsl.unlearning import DareForest, leakage
from veritas_dsl.unlearning.dare import consistency
from veritas_dsl.unlearning.dare.consistency import consistent_rows, published
from veritas_dsl.unlearning.report import render

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: The configurations of docs/unlearning-leakage.md: deterministic (nothing drawn), the default (seeds
#: drawn at fit only), R-DaRE (random top levels; min_samples_leaf 2 makes deletions redraw).
CONFIGS = {
    "deterministic": dict(k=None, max_features=None),
    "default": dict(k=3),
    "rdare": dict(k=3, random_depth=2, min_samples_leaf=2),
}

_FORESTS: dict[str, DareForest] = {}
_gives = consistency._gives  # the whole trial, as consistent_rows calls it


def forest(config: str) -> DareForest:
    """A small forest of ``config`` (built once: hypothesis runs without fixtures)."""
    if config not in _FORESTS:
        X, y = make_classification(48, 3, n_informative=2, n_redundant=0, random_state=5)
        X = np.round(X, 1)  # ties between rows: deletions that change nothing, or little
        _FORESTS[config] = DareForest(n_trees=3, max_depth=3, random_state=2, **CONFIGS[config])
        _FORESTS[config].fit(X, y)
    return _FORESTS[config]


@pytest.mark.parametrize("config", sorted(CONFIGS))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_deleted_rows_are_always_in_the_anonymity_set(config, data):
    before = forest(config)
    size = data.draw(st.integers(1, 4), label="rows deleted")
    ids = data.draw(st.lists(st.integers(0, 47), min_size=size, max_size=size, unique=True))
    after = before.copy().delete(ids)
    found = consistent_rows(before, after, ids)
    assert found.reproduced and set(ids) <= set(found.rows)
    assert found.exact == (size == 1) and found.tried == found.candidates == 48 - size


def brute_force(before: DareForest, after: DareForest, ids: list[int]) -> set[int]:
    """The rows of ``D - {d} + {r}`` deletions that give ``after``, each by a whole ``delete``."""
    target = [published(tree) for tree in after._trees]
    rows = set(ids)
    for r in before.remaining().tolist():
        for d in ids:
            if r not in ids and consistency._gives(before, sorted(set(ids) - {d} | {r}), target):
                rows.add(r)
                break
    return rows


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("ids", [[4], [6], [30], [2, 19], [7, 8, 40]])
def test_trials_on_single_trees_give_what_whole_deletions_give(config, ids, monkeypatch):
    before = forest(config)
    after = before.copy().delete(ids)
    whole = []
    monkeypatch.setattr(consistency, "_gives", lambda *a: whole.append(a) or _gives(*a))
    found = consistent_rows(before, after, ids)
    monkeypatch.undo()
    assert set(found.rows) == brute_force(before, after, ids)
    if config == "rdare" and ids == [6]:
        assert len(whole) > 1  # some trials drew, and were made again whole


def test_a_single_deletion_is_exact_and_names_what_it_reveals():
    before = forest("deterministic")
    reports = {}
    for row in range(48):
        found = leakage(before, before.copy().delete([row]))
        assert found.anonymity_exact and row in found.anonymity
        assert set(found.minimum.deleted) | set(found.maximum.deleted) <= {row}
        reports.setdefault(
            "unchanged" if found.unchanged else "identified" if found.identified else "some",
            render(found),
        )
        if found.unchanged:
            assert found.minimum.upper == found.maximum.lower == 0
    assert "reveals    no change: no tree changed" in reports["unchanged"]
    assert "reveals    everything: no other row" in reports["identified"]
    assert "reveals" not in reports["some"]


def test_an_after_not_made_by_deleting_from_before_has_no_set():
    before = forest("default")
    X, y = before.training_rows()
    after = before.copy().delete([3]).add(X[:1], y[:1])  # a row came in too
    found = leakage(before, after)
    assert not found.reproduced and found.anonymity == ()
    assert "anonymity  unknown: deleting 3 from before does not give after" in render(found)


def test_the_example_shows_the_deleted_rows_and_both_boxes(capsys, monkeypatch):
    monkeypatch.chdir(EXAMPLES)
    assert main(["leakage", "unlearning.ver", "--json"]) == ExitCode.OK
    (entry,) = json.loads(capsys.readouterr().out)["results"]
    assert {6, 12, 15} <= set(entry["anonymity"])
    for name in ("minimum", "maximum"):
        extreme = entry[name]
        assert extreme["proven"] and extreme["box"] is not None
        assert set(extreme["deleted"]) == {6, 12, 15} & set(extreme["rows"])
    assert entry["minimum"]["deleted"] == [6, 15]  # the footprint is least around them
    assert main(["leakage", "unlearning.ver"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "  minimum  -0.375 (proven); its box holds" in out and "deleted: 6, 15" in out
    assert "min: low <=" in out and "max: low <=" in out


def test_a_limit_gives_the_bounds_and_sets_found_so_far(tmp_path, capsys):
    X, y = make_classification(300, 8, n_informative=5, random_state=0)
    path = tmp_path / "forest.dare"
    DareForest(n_trees=30, max_depth=8).fit(X, y).save(path)
    # Before: `error: engine ... stopped (time_limit) before proving ...`, exit 2, no bounds.
    code = main(["leakage", str(path), "--delete", "3,17,42,100,250", "--timeout", "0.01"])
    out, err = capsys.readouterr()
    assert code == ExitCode.OK, err
    assert out.startswith("deleted    3, 17, 42, 100, 250\nanonymity  at least ")
    assert "  minimum  " in out and "  maximum  " in out and err == ""
    found = leakage(DareForest.load(path), DareForest.load(path).delete([3, 17]), timeout_s=0.01)
    assert {3, 17} <= set(found.anonymity)
    for extreme in (found.minimum, found.maximum):
        assert extreme.lower <= extreme.upper
        if extreme.value is not None:
            assert extreme.lower <= extreme.value <= extreme.upper


def test_ctrl_c_in_an_engine_reports_its_bounds_and_runs_no_more(tmp_path, capsys, monkeypatch):
    module = importlib.import_module("veritas_dsl.unlearning.leakage")  # not the function

    path = tmp_path / "forest.dare"
    forest("default").save(path)
    calls = []

    def stopped(query, name, timeout_s, cancel, error=None):
        calls.append(query.goal)
        return Result(query.name, name, Termination.INTERRUPTED, -0.5, 0.0)

    monkeypatch.setattr(module, "solve_query", stopped)
    code = main(["leakage", str(path), "--delete", "5"])
    out, err = capsys.readouterr()
    assert code == ExitCode.INTERRUPTED and len(calls) == 1
    assert "  minimum  in [-0.5, 0] (not proven: interrupted; no input found)" in out
    assert "  maximum  in [" in out and "interrupted" in err
