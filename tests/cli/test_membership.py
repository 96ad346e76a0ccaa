"""`ver membership`: a saved DaRE forest or a spec, the rows to delete and a CSV of rows never
trained on; the JSON document's shape, the same numbers as the Python API, and bad input exits
2 with a located message and no traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest
from schema_files import problems
from sklearn.datasets import make_classification

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.unlearning import DareForest, membership


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    X, y = make_classification(200, 3, n_informative=2, n_redundant=0, random_state=0)
    path = tmp_path_factory.mktemp("membership")
    DareForest(n_trees=4, max_depth=3, random_state=2).fit(X[:120], y[:120]).save(
        path / "forest.dare"
    )
    rows = "\n".join(",".join(map(str, [*x, int(t)])) for x, t in zip(X[120:], y[120:], strict=True))
    (path / "outside.csv").write_text(f"a,b,c,label\n{rows}\n")
    (path / "nolabel.csv").write_text("a,b,c,d\n1,2,3,0\n")
    (path / "narrow.csv").write_text("a,label\n1,0\n")
    (path / "badlabel.csv").write_text("a,b,c,label\n1,2,3,0\n1,2,3,2\n")
    (path / "spec.ver").write_text(
        'model before = dare "forest.dare"\nmodel after = delete(before, rows = [5, 9])\n'
    )
    return path, X[120:], y[120:]


def _run(folder, *arguments):
    path, _, _ = folder
    return main(["membership", *arguments, "--outside", str(path / "outside.csv")])


def test_json_shape_and_the_apis_numbers(folder, capsys):
    path, X, y = folder
    code = _run(folder, str(path / "forest.dare"), "--delete", "5,9", "--seeds", "2", "--json")
    assert code == ExitCode.OK
    document = json.loads(capsys.readouterr().out)
    assert document["deleted"] == [5, 9] and document["batches"] == 1
    assert (document["seeds"], document["shadows"], document["outside_rows"]) == (2, 4, 80)
    assert set(document["unlearnings"]) == {"delete", "retrain"}
    for metrics in document["unlearnings"].values():
        assert set(metrics) == {"auc", "priaa", "advantage", "probe_auc"}
        for e in metrics.values():
            assert set(e) == {"mean", "low", "high", "per_seed"} and len(e["per_seed"]) == 2
            assert e["low"] <= e["mean"] <= e["high"]
    forest = DareForest.load(path / "forest.dare")
    api = membership(forest, [[5, 9]], X.astype(np.float32), y, seeds=2, shadows=4)
    assert document == {"schema": 1, **json.loads(json.dumps(api.to_dict()))}
    assert problems(document, "membership.schema.json") == []


def test_table_and_spec(folder, capsys):
    path, _, _ = folder
    spec = str(path / "spec.ver")
    assert _run(folder, spec, "--seeds", "1", "--shadows", "1", "--json") == ExitCode.OK
    document = json.loads(capsys.readouterr().out)
    assert problems(document, "membership.schema.json") == []  # one seed: no interval (null)
    assert _run(folder, spec, "--seeds", "1", "--shadows", "1") == ExitCode.OK
    out = capsys.readouterr().out
    assert out.startswith("models      before -> after\ndeleted     5, 9 (2 rows in 1 deletion)")
    assert "\ndelete   AUC " in out and "\nretrain  AUC " in out


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--delete", "999"], "row 999 does not exist"),
        (["--outside-file", "nolabel.csv"], "error[V408]: no column `label`"),
        (["--outside-file", "narrow.csv"], "error[V408]: 1 feature columns; the forest reads 3"),
        (["--outside-file", "badlabel.csv"], "data row 2 has label 2"),
        (["--outside-file", "missing.csv"], "missing.csv"),
    ],
)
def test_bad_input_exits_2_with_a_located_message(folder, capsys, arguments, message):
    path, _, _ = folder
    outside = path / "outside.csv"
    if arguments[0] == "--outside-file":
        outside, arguments = path / arguments[1], ["--delete", "1"]
    argv = ["membership", str(path / "forest.dare"), *arguments, "--outside", str(outside)]
    assert main(argv) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "internal error" not in err
    if "V408" in message:
        assert f"--> {outside}:1:1" in err


@pytest.mark.parametrize("arguments", [["--seeds", "0"], ["--delete", "three"], []])
def test_usage_errors_exit_2(folder, capsys, arguments):
    path, _, _ = folder
    extra = [] if not arguments else ["--outside", str(path / "outside.csv")]
    with pytest.raises(SystemExit) as exit:
        main(["membership", str(path / "forest.dare"), *arguments, *extra])
    assert exit.value.code == ExitCode.ERROR
