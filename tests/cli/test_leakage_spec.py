"""`ver leakage SPEC`: one report per `delete(...)` model (or `--delete` on the spec's forest),
over the spec's feature domains, with the numbers the Python API gives; ids from `@file`; a bad
spec is `ver run`'s error."""

from __future__ import annotations

import json

import numpy as np
import pytest

from veritas_dsl import load
from veritas_dsl.cli import ExitCode, main
from veritas_dsl.unlearning import DareForest, leakage


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 5, (60, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, 60) > 4).astype(int)
    path = tmp_path_factory.mktemp("leakspec")
    DareForest(n_trees=4, max_depth=3, k=None, max_features=None, random_state=3).fit(X, y).save(
        path / "forest.dare"
    )
    DareForest(n_trees=3, max_depth=2, k=None, max_features=None, random_state=1).fit(X, y).save(
        path / "other.dare"
    )
    (path / "two.ver").write_text(
        "const first = 17\n"
        'model before = dare "forest.dare"\n'
        "model one = delete(before, rows = [first])\n"
        "model again = retrain(before, without = [3])\n"
        "model two = delete(before, rows = [17, 42])\n"
    )
    (path / "forests.ver").write_text(
        'model before = dare "forest.dare"\nmodel other = dare "other.dare"\n'
    )
    (path / "ids.txt").write_text("# rows to forget\n\n17   # the second request\n42\n")
    return path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return code, out, err


def api(folder, ids, **domain) -> dict:
    before = DareForest.load(folder / "forest.dare")
    after = DareForest.load(folder / "forest.dare").delete(ids)
    return leakage(before, after, **domain).to_dict()


def test_one_report_per_deletion_in_order_with_the_api_numbers(folder, capsys):
    code, out, err = run(capsys, "leakage", folder / "two.ver", "--json")
    assert code == ExitCode.OK, err
    results = json.loads(out)["results"]
    assert [(r["model"], r["base"], r["deleted"]) for r in results] == [
        ("one", "before", [17]),
        ("two", "before", [17, 42]),
    ]
    for entry, ids in zip(results, ([17], [17, 42]), strict=True):
        expected = api(folder, ids)
        assert {k: entry[k] for k in expected} == expected
        assert entry["features"] == ["f0", "f1", "f2"]


def test_model_picks_one_and_the_table_names_it(folder, capsys):
    code, out, _ = run(capsys, "leakage", folder / "two.ver", "--model", "two")
    assert code == ExitCode.OK
    assert out.startswith("models     before -> two\ndeleted    17, 42\n")
    assert "models" not in out[1:]
    code, _, err = run(capsys, "leakage", folder / "two.ver", "--model", "again")
    assert code == ExitCode.ERROR
    assert "--model again: not a delete(...) model" in err and "one, two" in err


def test_delete_on_a_spec_of_two_forests_needs_model(folder, capsys):
    code, out, err = run(capsys, "leakage", folder / "forests.ver", "--delete", "5")
    assert code == ExitCode.ERROR and out == ""
    assert "2 dare models (before, other)" in err and "--model NAME" in err
    code, out, _ = run(
        capsys, "leakage", folder / "forests.ver", "--delete", "5", "--model", "other", "--json"
    )
    assert code == ExitCode.OK
    (entry,) = json.loads(out)["results"]
    assert (entry["model"], entry["base"], entry["deleted"]) == (None, "other", [5])
    before = DareForest.load(folder / "other.dare")
    expected = leakage(before, DareForest.load(folder / "other.dare").delete([5])).to_dict()
    assert {k: entry[k] for k in expected} == expected


def test_ids_from_a_file_with_comments(folder, capsys, monkeypatch):
    monkeypatch.chdir(folder)  # @FILE is relative to the working folder
    code, out, err = run(capsys, "leakage", "forest.dare", "--delete", "@ids.txt", "--json")
    assert code == ExitCode.OK, err
    assert json.loads(out) == {"schema": 1, **api(folder, [17, 42])}
    code, out, err = run(capsys, "leakage", "two.ver", "--model", "before", "--delete", "@ids.txt")
    assert code == ExitCode.OK, err
    assert out.startswith("models     before -> its deletion\ndeleted    17, 42\n")


@pytest.mark.parametrize(
    "text, where, message",
    [
        ("1\n2\nabc\n", ":3:1", "`abc` is not a row id"),
        ("1\n# fine\n  999\n", ":3:3", "row 999 does not exist"),
        ("4\n\n4\n", ":3:1", "row 4 is listed twice"),
        ("# nothing\n", ":1:1", "no rows to delete"),
    ],
)
def test_a_bad_id_in_the_file_is_located(folder, capsys, tmp_path, text, where, message):
    ids = tmp_path / "bad.txt"
    ids.write_text(text)
    for source in ("forest.dare", "two.ver"):
        argv = ["leakage", folder / source, "--delete", f"@{ids}"]
        code, out, err = run(capsys, *argv, *(["--model", "before"] if "ver" in source else []))
        assert code == ExitCode.ERROR and out == ""
        assert f"{ids}{where}" in err and message in err and "Traceback" not in err


def test_a_missing_ids_file_is_an_error(folder, capsys, tmp_path):
    code, out, err = run(capsys, "leakage", folder / "forest.dare", "--delete", f"@{tmp_path}/no")
    assert code == ExitCode.ERROR and out == "" and "cannot read the ids file" in err


def test_a_bad_spec_is_the_error_ver_run_gives(folder, capsys):
    spec = folder / "broken.ver"
    spec.write_text('model before = dare "forest.dare"\nmodel after = delete(before, rows = [3,\n')
    code, out, leak_err = run(capsys, "leakage", spec)
    assert code == ExitCode.ERROR and out == ""
    code, _, run_err = run(capsys, "run", spec)
    assert code == ExitCode.ERROR
    assert leak_err == run_err and f"{spec}:" in leak_err


def test_a_spec_without_deletions_says_what_to_do(folder, capsys):
    code, out, err = run(capsys, "leakage", folder / "forests.ver")
    assert code == ExitCode.ERROR and out == ""
    assert "derives no model with delete" in err


def test_the_spec_domains_bound_the_region(folder, capsys):
    spec = folder / "domain.ver"
    spec.write_text(
        'model before = dare "forest.dare"\n'
        "model after = delete(before, rows = [17, 42])\n"
        "features {\n    f0 : int in [0, 1]\n    f1 : int in [3, 4]\n}\n"
    )
    code, out, err = run(capsys, "leakage", spec, "--json")
    assert code == ExitCode.OK, err
    (entry,) = json.loads(out)["results"]
    features = load(spec).checked.features
    expected = api(folder, [17, 42], features=features)
    assert {k: entry[k] for k in expected} == expected
    for extreme in ("minimum", "maximum"):
        point = entry[extreme]["point"]
        assert 0 <= point[0] <= 1 and 3 <= point[1] <= 4
    everywhere = api(folder, [17, 42])
    assert (entry["minimum"], entry["maximum"]) != (everywhere["minimum"], everywhere["maximum"])


def test_the_spec_one_hot_groups_bound_the_region(folder, capsys):
    spec = folder / "onehot.ver"
    spec.write_text(
        'model before = dare "forest.dare"\n'
        "model after = delete(before, rows = [17, 42])\n"
        "features {\n    g : onehot(f0, f1, f2)\n}\n"
    )
    code, out, err = run(capsys, "leakage", spec, "--json")
    assert code == ExitCode.OK, err
    (entry,) = json.loads(out)["results"]
    checked = load(spec).checked
    groups = tuple(checked.groups.values())
    expected = api(folder, [17, 42], features=checked.features, groups=groups)
    assert {k: entry[k] for k in expected} == expected
    assert sorted(entry["minimum"]["point"]) == sorted(entry["maximum"]["point"]) == [0, 0, 1]


def test_domains_follow_the_forests_feature_order_when_the_first_model_is_not_one(folder, capsys):
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(1)
    X = rng.integers(0, 5, (40, 3)).astype(np.float32)
    booster = xgboost.train(
        {"max_depth": 2},
        xgboost.DMatrix(X, label=X[:, 0] > 2, feature_names=["f2", "f0", "f1"]),
        num_boost_round=2,
    )
    booster.save_model(folder / "other_order.json")
    spec = folder / "order.ver"
    spec.write_text(
        'model first = xgboost "other_order.json"\n'
        'model before = dare "forest.dare"\n'
        "model after = delete(before, rows = [17, 42])\n"
        "features {\n    f0 : int in [0, 1]\n    f1 : int in [3, 4]\n}\n"
    )
    assert [f.name for f in load(spec).checked.features] == ["f2", "f0", "f1"]
    code, out, err = run(capsys, "leakage", spec, "--json")
    assert code == ExitCode.OK, err
    (entry,) = json.loads(out)["results"]
    domain = load(folder / "domain.ver").checked.features  # the same block, in f0, f1, f2 order
    expected = api(folder, [17, 42], features=domain)
    assert {k: entry[k] for k in expected} == expected
