"""Numbers beyond the float32 range (1e39) are handled or refused cleanly: never numpy's overflow
RuntimeWarning on stderr, never an internal error.

Models read float32 inputs (docs/semantics.md). In a spec such a number is a bound: `x.income >=
-1e39` holds for every float32, and a bound at the lowest float32 made A* print "overflow
encountered in nextafter". In a data file it is a located error (tests/errors). In a model file
XGBoost writes float32 numbers, so 1e39 there is refused; a LightGBM or scikit-learn threshold
beyond the largest float32 (their thresholds are float64) is refused as before, without the
warning; and a split at the largest float32 itself, which is legal, made `ver inspect` fail with
OverflowError while it drew test points.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path

import pytest

from veritas_dsl.cli import ExitCode, main

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "examples" / "models" / "credit.json"
LARGEST = "3.4028235e38"


def no_overflow_warning(run):
    """``run()`` with every warning recorded; the overflow warnings of numpy fail the test."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run()
    overflows = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not overflows
    return result


@pytest.mark.parametrize("bound", ["-1e39", f"-{LARGEST}"])
def test_a_bound_beyond_float32_in_a_spec(tmp_path, capsys, bound):
    shutil.copy(CREDIT, tmp_path)
    spec = tmp_path / "s.ver"
    spec.write_text(
        'model clf = xgboost "credit.json"\n'
        f"features {{ income : real in [{bound}, 500000] }}\n"
        "query q { input x  minimize clf(x) }\n"
    )
    code = no_overflow_warning(lambda: main(["run", str(spec), "--solver", "astar"]))
    assert code == ExitCode.OK, capsys.readouterr()
    assert "optimal" in capsys.readouterr().out


def _xgboost_model(tmp_path, value: float, node: int = 0) -> Path:
    document = json.loads(CREDIT.read_text())
    document["learner"]["gradient_booster"]["model"]["trees"][0]["split_conditions"][node] = value
    path = tmp_path / "m.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("value", [1e39, -1e39])
def test_an_xgboost_number_beyond_float32_is_refused(tmp_path, capsys, value):
    path = _xgboost_model(tmp_path, value)
    assert no_overflow_warning(lambda: main(["inspect", str(path)])) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "tree 0: `split_conditions` holds" in err and "beyond the float32 range" in err


@pytest.mark.parametrize("value", [float(LARGEST), -float(LARGEST)])
def test_a_split_at_the_largest_float32_is_inspected(tmp_path, capsys, value):
    path = _xgboost_model(tmp_path, value)
    assert no_overflow_warning(lambda: main(["inspect", str(path)])) == ExitCode.OK
    assert "parity     matches xgboost" in capsys.readouterr().out


def test_a_lightgbm_threshold_beyond_float32_is_refused_without_a_warning(tmp_path, capsys):
    lightgbm = pytest.importorskip("lightgbm")
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    params = {"objective": "binary", "num_leaves": 4, "verbose": -1, "num_threads": 1}
    text = lightgbm.train(params, lightgbm.Dataset(X, X[:, 0] > 0), 2).model_to_string()
    path = tmp_path / "m.txt"
    path.write_text(re.sub(r"\nthreshold=\S+", "\nthreshold=1e39", text, count=1))
    assert no_overflow_warning(lambda: main(["inspect", str(path)])) == ExitCode.ERROR
    assert "has threshold inf" in capsys.readouterr().err
