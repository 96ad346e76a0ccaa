"""`ver run` of a batch with a row filter, end to end on a shipped XGBoost model: exactly the rows
the library's own ``predict`` rejects run, on the default engines, and the report counts them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import xgboost

from veritas_dsl.cli import ExitCode, main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROWS = 16


def rejected_rows() -> list[int]:
    """The rows of credit_test.csv[0:ROWS] that XGBoost itself classifies 0 (probability <= 0.5)."""
    booster = xgboost.Booster(model_file=str(EXAMPLES / "models" / "credit.json"))
    with open(EXAMPLES / "data" / "credit_test.csv") as file:
        rows = list(csv.DictReader(file))[:ROWS]
    X = np.array([[float(r[f]) for f in booster.feature_names] for r in rows], dtype=np.float32)
    probability = booster.predict(xgboost.DMatrix(X, feature_names=booster.feature_names))
    return [i for i, p in enumerate(probability) if p <= 0.5]


SPEC = f"""
model clf = xgboost "{EXAMPLES / "models" / "credit.json"}"
data test = csv "{EXAMPLES / "data" / "credit_test.csv"}"

# Counterfactuals for the rejected rows only.
query recourse for r in test[0:{ROWS}] where class(clf, r) == 0 {{
    input x
    where x.age == r.age and x.sex == r.sex
    where class(clf, x) == 1
    minimize linf(x, r)
}}
"""


def test_only_the_rejected_rows_run_and_are_counted(tmp_path, capsys):
    want = rejected_rows()
    assert 0 < len(want) < ROWS  # the filter drops some rows and keeps some
    path = tmp_path / "recourse.ver"
    path.write_text(SPEC)
    assert main(["run", "--json", str(path)]) == ExitCode.OK
    document = json.loads(capsys.readouterr().out)
    results = document["results"]
    assert [r["row"] for r in results] == want
    assert {r["query"] for r in results} == {"recourse"}
    assert all(r["status"] in ("optimal", "infeasible") for r in results)
    found = [r for r in results if r["witness"]]
    assert found  # some rejected rows have a counterfactual: granted, same age and sex
    assert document["batches"] == [
        {"query": "recourse", "data": "test", "start": 0, "stop": ROWS, "kept": len(want)}
    ]

    assert main(["run", str(path)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert f"recourse: {len(want)} of {ROWS} rows (kept by the filter)" in out
    assert f"recourse[{want[0]}]" in out
    dropped = next(i for i in range(ROWS) if i not in want)
    assert f"recourse[{dropped}]" not in out
