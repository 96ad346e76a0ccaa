"""`ver inspect` on the HistGradientBoosting, CatBoost and ONNX formats: the summary and the
parity line against the library model, and bad files as located errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from veritas_dsl.cli import ExitCode, main

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"


@pytest.mark.parametrize(
    "path, source, library",
    [
        (MODELS / "credit_catboost.json", "catboost Logloss", "catboost"),
        (MODELS / "scaled.onnx", "onnx TreeEnsembleClassifier", "onnxruntime"),
    ],
    ids=["catboost", "onnx"],
)
def test_shipped_models_report_parity(capsys, path, source, library):
    pytest.importorskip(library)
    assert main(["inspect", str(path)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert source in out
    assert f"parity     matches {library} on " in out
    assert main(["inspect", "--json", str(path)]) == ExitCode.OK
    parity = json.loads(capsys.readouterr().out)["parity"]
    assert parity["library"] == library and parity["mismatches"] == 0 and parity["points"] > 100


def test_hist_gradient_boosting_skops_file_reports_parity(tmp_path, capsys):
    skops_io = pytest.importorskip("skops.io")
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    fitted = HistGradientBoostingRegressor(max_iter=4).fit(X, X[:, 0] - X[:, 1] ** 2)
    skops_io.dump(fitted, tmp_path / "hist.skops")
    assert main(["inspect", str(tmp_path / "hist.skops")]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "sklearn HistGradientBoostingRegressor (loss squared_error)" in out
    assert "parity     matches sklearn HistGradientBoostingRegressor on " in out


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("model.onnx", b"\x00\xffnot a protobuf", "not an ONNX model"),
        ("model.json", b'{"features_info": {"float_features": 3}}', "malformed CatBoost JSON"),
    ],
)
def test_bad_files_exit_2_with_a_message(tmp_path, capsys, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    assert main(["inspect", str(path)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert message in err and str(path) in err
    assert "Traceback" not in err
