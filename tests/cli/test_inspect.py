"""`ver inspect`: the summary of a shipped model, JSON output, and exit codes on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from veritas_dsl.cli import ExitCode, main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "models" / "credit.json"


def test_inspect_shipped_model(capsys):
    assert main(["inspect", str(EXAMPLE)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "xgboost binary:logistic" in out
    assert "trees      20" in out
    assert "income" in out


def test_inspect_json(capsys):
    assert main(["inspect", "--json", str(EXAMPLE)]) == ExitCode.OK
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_trees"] == 20 and summary["max_depth"] == 3
    assert {f["name"] for f in summary["features"]} <= {
        "age",
        "income",
        "debt",
        "sex",
        "housing_own",
        "housing_rent",
        "housing_free",
    }


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("absent.json", None, "no such model file"),
        ("model.csv", "a,b\n", "cannot tell the model format"),
        ("model.json", '{"learner": 1}', "not an XGBoost model"),
        ("model.txt", "not a lightgbm model", "not a LightGBM text model"),
    ],
)
def test_bad_models_exit_2_with_a_message_and_no_traceback(
    tmp_path, capsys, name, content, message
):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    assert main(["inspect", str(path)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_console_script_is_installed():
    ver = Path(sys.executable).with_name("ver")
    done = subprocess.run([str(ver), "inspect", str(EXAMPLE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "features" in done.stdout
