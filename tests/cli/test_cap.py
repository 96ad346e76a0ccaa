"""`ver cap`: a saved DaRE forest or a spec, the rows to delete and the cap; the JSON document's
shape and the API's numbers, the saved model proven by the engines, and bad input exits 2 with
a message and no traceback. Also the cap as an unlearning the membership attack plays."""

from __future__ import annotations

import json

import numpy as np
import pytest
from schema_files import problems
from sklearn.datasets import make_classification

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.ir import Maximize, Minimize
from veritas_dsl.model.ensemble import Ensemble
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.solve import solve
from veritas_dsl.unlearning import DareForest, membership
from veritas_dsl.unlearning.cap import cap, capped_deletion
from veritas_dsl.unlearning.dare.derive import deleted
from veritas_dsl.unlearning.leakage import footprint_query


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    X, y = make_classification(200, 3, n_informative=2, n_redundant=0, random_state=0)
    path = tmp_path_factory.mktemp("cap")
    DareForest(n_trees=4, max_depth=3, random_state=2).fit(X[:120], y[:120]).save(
        path / "forest.dare"
    )
    (path / "spec.ver").write_text(
        'model before = dare "forest.dare"\nmodel after = delete(before, rows = [5, 9])\n'
        "model again = delete(before, rows = [7])\n"
    )
    return path, X, y


def test_json_shape_the_apis_numbers_and_the_saved_model(folder, capsys, tmp_path):
    path, _, _ = folder
    saved = tmp_path / "capped.json"
    argv = ["cap", str(path / "forest.dare"), "--delete", "5,9", "--tau", "0.01", "--json"]
    assert main([*argv, "--save", str(saved)]) == ExitCode.OK
    document = json.loads(capsys.readouterr().out)
    assert problems(document, "cap.schema.json") == []
    forest = DareForest.load(path / "forest.dare")
    before, after = forest.to_ensemble(), deleted(forest, [5, 9]).to_ensemble()
    api = cap(before, after, 0.01, steps=8)
    assert document == {"schema": 1, "deleted": [5, 9], **json.loads(json.dumps(api.to_dict()))}
    assert document["proven"] and document["footprint"] <= 0.01
    model = Ensemble.load(saved)  # the published model: its footprint, asked afresh
    for goal in (Maximize, Minimize):
        result = solve(registry.get("milp"), footprint_query(before, model, goal))
        assert result.exact and max(result.upper, -result.lower) <= 0.01


def test_a_spec_gives_one_result_per_deletion(folder, capsys):
    path, _, _ = folder
    assert main(["cap", str(path / "spec.ver"), "--tau", "0.02", "--steps", "0", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert problems(document, "cap.schema.json") == []
    assert [(r["model"], r["base"], r["deleted"]) for r in document["results"]] == [
        ("after", "before", [5, 9]),
        ("again", "before", [7]),
    ]
    assert all(r["footprint"] <= 0.02 and r["engine"] == "" for r in document["results"])
    assert main(["cap", str(path / "spec.ver"), "--tau", "0.02", "--model", "again"]) == 0
    text = capsys.readouterr().out
    assert "before -> again" in text and "proven by astar" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--delete", "5", "--tau", "-1"], "--tau: must be a number >= 0"),
        (["--delete", "5", "--tau", "nan"], "--tau: must be a number >= 0"),
        (["--delete", "5", "--tau", "0.1", "--steps", "-1"], "--steps: must be at least 0"),
        (["--delete", "5;9", "--tau", "0.1"], "is not a list of row ids"),
        (["--delete", "500", "--tau", "0.1"], "row 500 does not exist"),
        (["--tau", "0.1"], "needs --delete"),
        (["--delete", "5", "--tau", "0.1", "--save", "/no/such/folder/m.json"], "no folder"),
        (["--delete", "5", "--tau", "0.1", "--solver", "nosuch"], "unknown engine"),
        (["--delete", "5", "--tau", "0.1", "--noise", "1"], "--noise: must be a share in [0, 1)"),
        (["--delete", "5", "--tau", "0.1", "--noise", "nan"], "--noise: must be a share"),
        (["--delete", "5", "--tau", "0.1", "--noise", "0.5", "--seed", "-2"], "--seed: must be"),
        (["--delete", "5", "--tau", "0.1", "--seed", "x"], "--seed: invalid int value"),
    ],
)
def test_bad_input_exits_2_with_a_message(folder, capsys, argv, message):
    path, _, _ = folder
    try:
        code = main(["cap", str(path / "forest.dare"), *argv])
    except SystemExit as stop:  # argparse's usage errors
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_noisy_cap_is_seeded_and_proven_on_the_model_saved(folder, capsys, tmp_path):
    path, _, _ = folder
    argv = ["cap", str(path / "forest.dare"), "--delete", "5,9", "--tau", "0.02", "--json"]
    documents = []
    for name in ("a.json", "b.json"):
        saved = tmp_path / name
        assert main([*argv, "--noise", "0.5", "--seed", "3", "--save", str(saved)]) == 0
        documents.append(json.loads(capsys.readouterr().out))
    assert documents[0] == documents[1] and problems(documents[0], "cap.schema.json") == []
    assert (documents[0]["noise"], documents[0]["seed"]) == (0.5, 3)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    forest = DareForest.load(path / "forest.dare")
    before, model = forest.to_ensemble(), Ensemble.load(tmp_path / "a.json")
    for goal in (Maximize, Minimize):
        result = solve(registry.get("milp"), footprint_query(before, model, goal))
        assert result.exact and max(result.upper, -result.lower) <= 0.02
    assert main([*argv[:-1], "--noise", "0.5", "--seed", "3"]) == 0
    assert "noise       every leaf moved by seeded noise, 0.5 of tau" in capsys.readouterr().out


def test_save_refuses_a_spec_of_several_deletions(folder, capsys, tmp_path):
    path, _, _ = folder
    argv = ["cap", str(path / "spec.ver"), "--tau", "0.1", "--save", str(tmp_path / "m.json")]
    assert main(argv) == 2
    assert "--model NAME" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_the_membership_attack_plays_the_cap(folder):
    _, X, y = folder
    forest = DareForest(n_trees=4, max_depth=3, random_state=2).fit(X[:120], y[:120])
    unlearnings = {"cap 0": capped_deletion(0.0), "cap 1": capped_deletion(1.0)}
    game = membership(forest, [[5], [9]], X[120:], y[120:], 1, 1, unlearnings)
    # Capped at 0, Mu' is Mo: |Mu' - Mo| is 0 on every row, so the probe is blind (M_A still
    # reads Mo(x) itself, what the model before reveals of its training rows: no cap hides it).
    assert game.summary["cap 0"]["probe_auc"].mean == 0.5
    # Capped at 1 (no clip binds), Mu' is the deletion itself: the same scores.
    plain = membership(forest, [[5], [9]], X[120:], y[120:], 1, 1)
    assert game.per_seed["cap 1"] == plain.per_seed["delete"]
    assert np.isfinite(game.summary["cap 1"]["auc"].mean)
